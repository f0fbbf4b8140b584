"""JSON Schema coverage of the embedded model's constrained decoder, and what it costs.

Every schema of three suites goes the way a `response_format` goes in
`LocalChatModel`: the local shape check (plain JSON, depth, size, properties per
object), llguidance's compiler, then a matcher on the default model's vocabulary
(the lexer is built there). A schema is "compiled" when a matcher comes out of
it, so the model can be held to it while it writes; "refused" is a `GrammarError`
(the strategies then fall back to the prompted route). Per suite it prints the
share compiled and refused, the slowest schema, and why schemas were refused.

- real-world: the dialect corpus of the tests (`tests/dialects_corpus`: flat and
  nested objects, recursion, unions, formats, patterns, enums, maps, allOf,
  tuples, conditionals, size limits, Pydantic models, seeded random schemas) and
  the output schemas of the 24 extraction tasks (`tests/integration/local_tasks.py`);
- hostile: schemas that crashed or stalled llama.cpp's GBNF engine, or that a
  tenant could send to make compiling cost without bound.

Run from the repository root: PYTHONPATH=. python benchmarks/local_schema_coverage.py
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_structx import ProviderStrategy
from langchain_structx._request.plan import build_plan
from langchain_structx.local import GrammarError, default_model_path
from langchain_structx.local._grammar import check_shape
from langchain_structx.local._guidance import compiled, matcher_for
from langchain_structx.local._vocab import tokenizer_for

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
sys.path.insert(0, str(ROOT / "tests" / "dialects_corpus"))

from _record import record  # noqa: E402 - benchmarks run as scripts
from dialect_corpus import build_corpus  # noqa: E402
from local_tasks import ALL_TASKS  # noqa: E402


def _string(**keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"s": {"type": "string", **keywords}}}


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "integer"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"x": node}, "required": ["x"]}
    return node


def _cyclic() -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object", "properties": {}}
    node["properties"]["self"] = node
    return node


def _look_alike_unions(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object", "properties": {"k": {"type": "string"}}}
    for _ in range(depth):
        twin = {"type": "object", "properties": {"k": {"type": "string"}, "x": node}}
        node = {"anyOf": [node, twin]}
    return node


def _unions_by_reference(depth: int, keyword: str) -> dict[str, Any]:
    definitions: dict[str, Any] = {"D0": {"type": "object", "properties": {"k": {}}}}
    for i in range(1, depth + 1):
        below = {"$ref": f"#/$defs/D{i - 1}"}
        twin = {"type": "object", "properties": {"k": {}, "x": below}}
        definitions[f"D{i}"] = {keyword: [below, {"anyOf": [below, twin]}]}
    return {"$ref": f"#/$defs/D{depth}", "$defs": definitions}


def _names(count: int, stem: str) -> dict[str, Any]:
    properties = {f"{stem}{i}": {"type": "string"} for i in range(count)}
    return {"type": "object", "properties": properties}


HOSTILE: dict[str, Callable[[], Any]] = {
    "maxLength 20,000 (overflowed llama.cpp's stack)": lambda: _string(maxLength=20_000),
    "minLength 100,000": lambda: _string(minLength=100_000),
    "maxItems 100,000": lambda: {"type": "array", "items": {"type": "integer"}, "maxItems": 10**5},
    "pattern ^\\d{4}-\\d{2}-\\d{2}$ (segfault)": lambda: _string(pattern=r"^\d{4}-\d{2}-\d{2}$"),
    "pattern [a-z]{1,20000}": lambda: _string(pattern="^[a-z]{1,20000}$"),
    "pattern (a{300}){300}": lambda: _string(pattern="^(a{300}){300}$"),
    "pattern (a?){300} (minutes a token)": lambda: _string(pattern="^(a?){300}$"),
    "pattern (a|aa) x 400": lambda: _string(pattern="^" + "(a|aa)" * 400 + "$"),
    "pattern of 5,000 words": lambda: _string(
        pattern="^(" + "|".join(f"word{i}" for i in range(5_000)) + ")$"
    ),
    "pattern with a backreference": lambda: _string(pattern=r"^(a)\1$"),
    "pattern with a lookahead": lambda: _string(pattern="^(?=a)a$"),
    "enum of 10,000 values": lambda: {"enum": [f"v{i}" for i in range(10_000)]},
    "look-alike unions nested 10 deep": lambda: _look_alike_unions(10),
    "look-alike unions by $ref, 40 deep": lambda: _unions_by_reference(40, "anyOf"),
    "allOf of unions by $ref, 40 deep": lambda: _unions_by_reference(40, "allOf"),
    "1,000 properties in Chinese": lambda: _names(1_000, "名字"),
    "16,000 properties in Chinese": lambda: _names(16_000, "名字"),
    "2,000 optional properties": lambda: _names(2_000, "p"),
    "nested 100 objects deep": lambda: _deep(100),
    "nested 2,000 objects deep": lambda: _deep(2_000),
    "a schema that contains itself": _cyclic,
    "a required property nothing satisfies": lambda: {
        "type": "object",
        "properties": {"a": False},
        "required": ["a"],
    },
    "a $ref to nowhere": lambda: {"properties": {"a": {"$ref": "#/$defs/Nope"}}},
    "150,000 enum values (too many parts)": lambda: {"enum": list(range(150_000))},
}


def suites() -> dict[str, list[tuple[str, Callable[[], Any]]]]:
    """The schemas of each suite, built lazily (some are large)."""
    corpus = [(name, (lambda s=schema: s)) for name, schema in build_corpus()]
    tasks = []
    for task in ALL_TASKS:
        schema = build_plan(ProviderStrategy(task.schema)).output_schema()
        tasks.append((f"task {task.id}", (lambda s=schema: s)))
    return {
        "real-world: dialect corpus": corpus,
        "real-world: extraction tasks": tasks,
        "hostile": list(HOSTILE.items()),
    }


def attempt(tokenizer: Any, build: Callable[[], Any]) -> tuple[str, float, str]:
    """Compile one schema as the model does: (outcome, seconds, reason refused)."""
    schema = build()
    started = time.perf_counter()
    try:
        check_shape(schema)
        grammar = compiled(schema)
        if tokenizer is not None:
            matcher_for(tokenizer, grammar)
    except GrammarError as exc:
        return "refused", time.perf_counter() - started, str(exc)
    return "compiled", time.perf_counter() - started, ""


def _reason(message: str) -> str:
    """A refusal's kind, without the schema's own text."""
    head = message.removeprefix("the constrained decoder refuses this JSON schema: ")
    return " ".join(head.split()[:6])


def main() -> int:
    try:
        from llama_cpp import Llama

        vocab = Llama(model_path=str(default_model_path()), vocab_only=True, verbose=False)
        tokenizer = tokenizer_for(vocab)
        print("Compiled against the default model's vocabulary (matcher and lexer built).\n")
    except Exception as exc:  # noqa: BLE001 - the compiler alone still measures coverage
        tokenizer = None
        print(f"No weights ({type(exc).__name__}): the compiler's own check only.\n")
    shares: dict[str, float] = {}
    slowest: dict[str, float] = {}
    for suite, cases in suites().items():
        outcomes = Counter[str]()
        reasons = Counter[str]()
        worst = ("", 0.0)
        rows = []
        for name, build in cases:
            outcome, seconds, why = attempt(tokenizer, build)
            outcomes[outcome] += 1
            if why:
                reasons[_reason(why)] += 1
            worst = max(worst, (name, seconds), key=lambda pair: pair[1])
            rows.append((name, outcome, seconds, why))
        total = sum(outcomes.values())
        shares[suite] = 100 * outcomes["compiled"] / total
        slowest[suite] = worst[1]
        print(f"{suite}: {total} schemas")
        print(f"  compiled {outcomes['compiled']:>4}  ({shares[suite]:.1f}%)")
        print(f"  refused  {outcomes['refused']:>4}  ({100 - shares[suite]:.1f}%)")
        print(f"  slowest  {worst[1]:.3f} s  ({worst[0]})")
        for reason, count in reasons.most_common(8):
            print(f"    refused x{count}: {reason}")
        if suite == "hostile":
            for name, outcome, seconds, why in rows:
                print(f"    {name:48} {outcome:9} {seconds:7.3f} s  {why[:90]}")
        print()
    record(
        "local_schema_coverage",
        title="JSON Schemas the embedded model's decoder compiles",
        unit="%",
        groups=list(shares),
        series={"compiled": list(shares.values())},
        extra={"slowest_s": slowest, "vocabulary": tokenizer is not None},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
