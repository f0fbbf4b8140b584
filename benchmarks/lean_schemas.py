"""Benchmark: the embedded model with the lean strict schemas, beside the schemas sent before.

The embedded weights are served by llama-cpp-python's OpenAI-compatible server
(`python -m llama_cpp.server`, on 127.0.0.1), which turns a named tool into a
grammar: the schema we send decides what the model can write. (It refuses a
`json_schema` response format; `AutoStrategy` then sends the same strict schema
as the named tool.) `ChatOpenAI` is pointed at it, and over extraction
tasks of `tests/integration/local_tasks.py` (plus a JSON-schema contact whose
phone is optional and nullable, with and without a phone in the text), each
configuration prints valid answers and answers with every field right:

- `before`: the package as it was before the lean schemas (extracted from git:
  the parent of the commit that added `_dialects/declarations.py`, or `--before`);
- `now`: this checkout;
- `now, no null marker`: this checkout with the explicit-null marker left out
  where the type does tell absent from null (`null` then always means absent).
  It answers whether the marker costs accuracy where it is kept.

Each side runs in its own process (the two versions of the package cannot share
one); the server is shared. Run: `python benchmarks/lean_schemas.py [--threads N]`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
if "--child" not in sys.argv:
    sys.path.insert(0, str(ROOT))

CONTACT_DICT: dict[str, Any] = {
    "title": "ContactCard",
    "description": "A person's contact details.",
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 60},
        "email": {"type": "string", "maxLength": 80},
        "phone": {"type": ["string", "null"], "maxLength": 30},
    },
    "required": ["name", "email"],
}
EXTRA_TASKS = [
    (
        "dict_phone",
        "Contact Ana Ruiz, ana@ruiz.es, phone 600-123-456.",
        {"name": "Ana Ruiz", "email": "ana@ruiz.es", "phone": "600-123-456"},
    ),
    (
        "dict_no_phone",
        "Contact: Lena Fischer, lena@fischer.de (she has no phone).",
        {"name": "Lena Fischer", "email": "lena@fischer.de", "phone": None},
    ),
]
TASK_IDS = (
    "contact",
    "contact_no_phone",
    "nested_order",
    "union_complaint",
    "event_dict_schema",
    "shipment_fr_nested",
)
SIDES = {"before": "before", "now": "now", "now, no null marker": "now"}


def before_source(rev: str | None) -> Path:
    """Extract the package as it was at `rev` into a temporary directory."""
    if rev is None:
        marker = "langchain_structx/_dialects/declarations.py"
        added = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%H", "--", marker],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        rev = f"{added[-1]}^"
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "langchain_structx"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    target = Path(tempfile.mkdtemp(prefix="structx-before-"))
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


def no_marker() -> None:
    """Leave the explicit-null marker out: an optional nullable key's `null` means absent."""
    from langchain_structx._dialects import objects, shapes
    from langchain_structx._dialects.codecs import Field

    original = objects._field

    def field(w: Any, orig: Any, out: Any, codec: Any, optional: bool) -> Any:
        sent, spec = original(w, orig, out, codec, optional)
        if spec.marker is None:
            return sent, spec
        return shapes.nullable(out), Field(codec, null_is_absent=True)

    objects._field = field  # type: ignore[assignment]


def child(args: argparse.Namespace) -> int:
    """Run the tasks in this process's version of the package; print outcomes as JSON."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT / "tests" / "integration"))
    import local_model as lm
    from local_tasks import ALL_TASKS, Task

    from langchain_structx import AutoStrategy

    if args.no_marker:
        no_marker()
    tasks = [t for t in ALL_TASKS if t.id in TASK_IDS]
    tasks += [Task(i, CONTACT_DICT, text, "ContactCard", exp) for i, text, exp in EXTRA_TASKS]
    model = lm.openai_model(args.base_url, args.model_id, args.max_tokens)
    # AutoStrategy as a user leaves it: the server refuses a `json_schema` response
    # format, and the route that follows sends the strict schema as a named tool,
    # which the server enforces with a grammar.
    makers = {"auto": lambda s: AutoStrategy(s, max_retries=args.max_retries)}
    rows = []
    for strategy in args.strategy:
        config = lm.Config(strategy, "ours", lm.ours(model, makers[strategy]))
        for task in tasks:
            outcome = lm.run_one(config, task)
            rows.append(
                {
                    "strategy": strategy,
                    "task": task.id,
                    "valid": outcome.valid,
                    "exact": outcome.valid and outcome.right_fields == outcome.fields,
                    "calls": outcome.calls,
                    "answer": outcome.answer,
                    "error": outcome.error,
                }
            )
    print(json.dumps(rows))
    return 0


def run_side(name: str, source: Path, args: argparse.Namespace, url: str, model: str) -> Any:
    command = [
        sys.executable, __file__, "--child", "--base-url", url, "--model-id", model,
        "--max-tokens", str(args.max_tokens), "--max-retries", str(args.max_retries),
    ]  # fmt: skip
    command += [f"--strategy={s}" for s in args.strategy]
    if name == "now, no null marker":
        command.append("--no-marker")
    env = {**os.environ, "PYTHONPATH": str(source)}
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarise(results: dict[str, list[dict[str, Any]]]) -> None:
    print(f"{'configuration':24} {'strategy':9} {'valid':>6} {'exact':>6} {'calls':>6}")
    for name, rows in results.items():
        for strategy in dict.fromkeys(r["strategy"] for r in rows):
            mine = [r for r in rows if r["strategy"] == strategy]
            valid = sum(r["valid"] for r in mine)
            exact = sum(r["exact"] for r in mine)
            calls = sum(r["calls"] for r in mine)
            print(f"{name:24} {strategy:9} {valid:>3}/{len(mine):<2} {exact:>6} {calls:>6}")
    print("\nper task (exact fields: before / now / now without the marker):")
    names = list(results)
    keys = [(r["strategy"], r["task"]) for r in results[names[0]]]
    for key in keys:
        marks = []
        for name in names:
            row = next(r for r in results[name] if (r["strategy"], r["task"]) == key)
            marks.append("exact" if row["exact"] else "valid" if row["valid"] else "FAIL")
        print(f"  {key[0]:9} {key[1]:22} {' / '.join(marks)}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", help="git revision of 'before' (default: found from git)")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp server threads")
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--max-retries", type=int, default=1)
    parser.add_argument("--strategy", action="append", choices=("auto",))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-marker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--model-id", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.strategy = args.strategy or ["auto"]
    return args


def main() -> int:
    args = parse_args()
    if args.child:
        return child(args)
    if importlib.util.find_spec("uvicorn") is None:
        print("llama-cpp-python lacks its [server] extras: nothing to measure")
        return 0
    sys.path.insert(0, str(HERE))
    import local_model as lm

    from langchain_structx.local import default_model_path

    sources = {"before": before_source(args.before), "now": ROOT}
    results: dict[str, Any] = {}
    with lm.llama_server(default_model_path(), args.threads) as (url, model):
        for name, side in SIDES.items():
            results[name] = run_side(name, sources[side], args, url, model)
    summarise(results)
    from _record import record as save_figures

    save_figures(
        "lean_schemas",
        title="Embedded model, lean strict schemas beside the earlier ones",
        unit="answers",
        groups=list(results),
        series={
            "valid": [float(sum(r["valid"] for r in rows)) for rows in results.values()],
            "exact": [float(sum(r["exact"] for r in rows)) for rows in results.values()],
        },
        extra={"rows": results},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
