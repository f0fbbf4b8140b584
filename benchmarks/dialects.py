"""Benchmark: provider dialect transforms over the test corpus.

For each dialect, and side by side for LangChain's own OpenAI strict conversion
(`convert_to_openai_function(schema, strict=True)`, what `ChatOpenAI` sends for a
dict schema with `strict=True`), over every corpus schema:

* valid-or-fallback: the schema sent passes the dialect's rule checker, or the
  transform refused it explicitly (`DialectError`; for LangChain, an exception);
* exact round trip: over values valid under the original schema, the share that
  come back unchanged (ours: `restore(encode(x)) == x` with `encode(x)` valid under
  the sent schema; LangChain has no restore, so: `x` itself valid under the sent
  schema).

Then the time each dialect takes for schemas ten times larger (best of three):
many `$defs`, a huge `enum`; linear is 10x, quadratic 100x (goal: <= 35x). The unit
tests check the same growth in function calls, which does not depend on load.

Run: `python benchmarks/dialects.py` (about 15 s).
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "dialects_corpus"))

from _record import record as save_figures  # noqa: E402 - benchmarks run as scripts
from dialect_corpus import build_corpus  # noqa: E402
from dialect_rules import CHECKERS  # noqa: E402
from dialect_values import Values, validator  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_function  # noqa: E402

from langchain_structx.dialects import transform  # noqa: E402
from langchain_structx.errors import DialectError  # noqa: E402

VALUES_PER_SCHEMA = 6
SKIP_VALUES = {"limit_5001_properties", "limit_120k_names"}


@dataclass
class Row:
    label: str
    schemas: int = 0
    valid: int = 0
    fallback: int = 0
    values: int = 0
    exact: int = 0

    def share(self) -> float:
        return (self.valid + self.fallback) / self.schemas if self.schemas else 0.0

    def exactness(self) -> float:
        return self.exact / self.values if self.values else 0.0


def instances(schema: Any) -> list[Any]:
    check = validator(schema)
    found: list[Any] = []

    @settings(
        max_examples=VALUES_PER_SCHEMA * 4,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def collect(data: Any) -> None:
        value = Values(schema, data.draw).value(schema)
        if check.is_valid(value) and value not in found and len(found) < VALUES_PER_SCHEMA:
            found.append(value)

    collect()
    return found


def ours(row: Row, dialect: str, schema: Any, values: list[Any]) -> None:
    row.schemas += 1
    try:
        # The values drawn include undeclared keys wherever JSON Schema admits
        # them: carry them (by default an object that omits them is closed).
        result = transform(schema, dialect, carry_undeclared=True)  # type: ignore[arg-type]
    except DialectError:
        row.fallback += 1
        return
    row.valid += not CHECKERS[dialect](result.schema)
    sent = validator(result.schema)
    for value in values:
        encoded = result.encode(value)
        row.values += 1
        row.exact += sent.is_valid(encoded) and result.restore(encoded) == value


def langchain(row: Row, schema: Any, values: list[Any]) -> None:
    row.schemas += 1
    try:
        titled = {"title": "Output", **schema} if isinstance(schema, dict) else schema
        sent_schema = convert_to_openai_function(titled, strict=True)["parameters"]
    except Exception:  # noqa: BLE001 - any refusal counts as explicit
        row.fallback += 1
        row.values += len(values)
        return
    row.valid += not CHECKERS["openai"](sent_schema)
    sent = validator(sent_schema)
    for value in values:
        row.values += 1
        row.exact += sent.is_valid(value)


GROWTH_GOAL = 35.0
"""Largest time growth accepted for a ten times larger schema."""


def _defs(n: int) -> dict[str, Any]:
    defs = {f"D{i}": {"type": "object", "properties": {"x": {"type": "string"}}} for i in range(n)}
    return {"type": "object", "properties": {"a": {"$ref": "#/$defs/D0"}}, "$defs": defs}


def _enum(n: int) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": {"enum": list(range(n))}}}


SCALING = {"many $defs": (_defs, 1_500), "huge enum": (_enum, 3_000)}


def time_growth(build: Any, size: int, dialect: str) -> float:
    """Seconds for a schema ten times larger over seconds for `build(size)`."""

    def best(n: int) -> float:
        schema = build(n)
        timings = []
        for _ in range(3):
            begun = time.perf_counter()
            try:
                transform(schema, dialect)
            except DialectError:
                pass
            timings.append(time.perf_counter() - begun)
        return min(timings)

    return best(10 * size) / best(size)


def main() -> int:
    started = time.perf_counter()
    corpus = build_corpus()
    rows = {d: Row(f"structx {d}") for d in ("openai", "anthropic", "gemini")}
    lc = Row("langchain openai strict")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, schema in corpus:
            values = [] if name in SKIP_VALUES else instances(schema)
            for dialect, row in rows.items():
                ours(row, dialect, schema, values)
            langchain(lc, schema, values)
    print(f"corpus: {len(corpus)} schemas, up to {VALUES_PER_SCHEMA} values each\n")
    header = f"{'approach':<26}{'valid':>7}{'refused':>9}{'invalid':>9}"
    header += f"{'valid|refused':>15}{'values':>8}{'exact':>8}"
    print(header)
    print("-" * len(header))
    ok = True
    for row in [*rows.values(), lc]:
        invalid = row.schemas - row.valid - row.fallback
        line = f"{row.label:<26}{row.valid:>7}{row.fallback:>9}{invalid:>9}"
        line += f"{row.share():>14.1%} {row.values:>8}{row.exactness():>7.1%}"
        verdict = "PASS" if row.share() == 1 and row.exactness() == 1 else "MISS"
        print(f"{line}  {verdict}")
        ok = ok and (verdict == "PASS" or row is lc)
    print("\ngoals: 100% valid-or-refused, 100% exact round trip")
    growth = {
        f"{name}, {dialect}": time_growth(build, size, dialect)
        for name, (build, size) in SCALING.items()
        for dialect in rows
    }
    print(f"\ntime for a ten times larger schema (linear 10x, goal <= {GROWTH_GOAL:.0f}x):")
    for label, factor in growth.items():
        verdict = "PASS" if factor <= GROWTH_GOAL else "MISS"
        print(f"  {label:<26}{factor:>7.1f}x  {verdict}")
    ordered = [*rows.values(), lc]
    save_figures(
        "dialects",
        title=f"Strict-mode transforms over {len(corpus)} schemas",
        unit="%",
        groups=[row.label for row in ordered],
        series={
            "valid or explicit fallback": [100 * row.share() for row in ordered],
            "exact round trip": [100 * row.exactness() for row in ordered],
        },
        extra={"corpus": len(corpus), "time_growth_10x": growth, "growth_goal": GROWTH_GOAL},
    )
    print(f"elapsed: {time.perf_counter() - started:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
