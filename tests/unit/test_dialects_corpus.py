"""Every corpus schema, in every dialect: accepted by that dialect's rule checker,
or refused with `DialectError` for a reason that is truly beyond the dialect."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dialects_corpus"))

from dialect_corpus import EXPECTED_ERRORS, build_corpus  # noqa: E402
from dialect_rules import CHECKERS  # noqa: E402

from langchain_structx.dialects import transform  # noqa: E402
from langchain_structx.errors import DialectError  # noqa: E402

CORPUS = build_corpus()
DIALECTS = ("openai", "anthropic", "gemini")
RECURSIVE = {
    "rec_tree", "rec_linked_list", "rec_root_pointer", "rec_mutual", "rec_expression",
    "rec_map", "pydantic_tree", "pydantic_link", "pydantic_report",
}  # fmt: skip
# Gemini keeps recursion whose cycles pass an optional property.
OPTIONAL_CYCLES = {"pydantic_tree", "pydantic_report", "rec_root_pointer", "pydantic_link"}
REFUSED = {
    "openai": EXPECTED_ERRORS["openai"],
    "anthropic": RECURSIVE | {"limit_30_optional", "limit_20_unions"},
    "gemini": RECURSIVE - OPTIONAL_CYCLES,
}


def test_corpus_is_large_and_varied() -> None:
    names = [name for name, _ in CORPUS]
    assert len(names) >= 200
    assert len(set(names)) == len(names)
    families = {name.split("_")[0] for name in names}
    expected = {"flat", "nested", "rec", "union", "opt", "format", "pattern", "enum", "map", "open"}
    assert expected | {"allof", "array", "tuple", "cond", "root", "limit", "pydantic"} <= families
    assert sum(name.startswith("pydantic_") for name in names) >= 12


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_schema_passes_the_checker_or_is_refused(dialect: Any) -> None:
    check = CHECKERS[dialect]
    violations: dict[str, list[str]] = {}
    refused: dict[str, str] = {}
    for name, schema in CORPUS:
        try:
            result = transform(schema, dialect)
        except DialectError as exc:
            assert exc.dialect == dialect
            refused[name] = exc.reason
            continue
        if found := check(result.schema):
            violations[name] = found
    assert violations == {}
    assert set(refused) == REFUSED[dialect], refused
    assert len(refused) == {"openai": 6, "anthropic": 11, "gemini": 5}[dialect]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_refused_schemas_really_break_the_rules(dialect: Any) -> None:
    """What a dialect refuses, its checker also rejects when sent as it is."""
    donor = {"openai": "anthropic", "anthropic": "openai", "gemini": "openai"}[dialect]
    for name, schema in CORPUS:
        if name not in REFUSED[dialect]:
            continue
        with pytest.raises(DialectError):
            transform(schema, dialect)
        sent = transform(schema, donor).schema
        found = CHECKERS[dialect](sent)
        assert any(v.startswith("limit:") or "$ref" in v or "$defs" in v for v in found), name


def test_openai_error_reasons_name_the_limit() -> None:
    by_name = dict(CORPUS)
    with pytest.raises(DialectError) as info:
        transform(by_name["nested_depth_12"], "openai")
    assert info.value.reason == "nesting depth 12 exceeds the openai limit of 10"
    # Carrying undeclared keys adds one level (entries) under the deepest object.
    with pytest.raises(DialectError, match="nesting depth 11 exceeds the openai limit"):
        transform(by_name["nested_depth_10"], "openai", carry_undeclared=True)
    with pytest.raises(DialectError, match="1200 enum values exceed the openai limit of 1000"):
        transform(by_name["enum_1200"], "openai")
    transform(by_name["nested_depth_10"], "openai")
    transform(by_name["enum_300"], "openai")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_checkers_reject_raw_schemas(dialect: Any) -> None:
    """The checkers are not vacuous: most untransformed schemas break the rules."""
    rejected = sum(bool(CHECKERS[dialect](schema)) for _, schema in CORPUS)
    assert rejected > 0.9 * len(CORPUS)


def test_transform_never_mutates_corpus_schemas() -> None:
    for name, schema in CORPUS[::7]:
        before = copy.deepcopy(schema)
        for dialect in DIALECTS:
            try:
                transform(schema, dialect)
            except DialectError:
                pass
        assert schema == before, name
