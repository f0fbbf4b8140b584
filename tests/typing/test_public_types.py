"""Static checks of the public generics (run by `mypy tests/typing`), also run by pytest."""

from __future__ import annotations

from typing import Any, assert_type

from pydantic import BaseModel

from langchain_structx import (
    AutoStrategy,
    ErrorContext,
    PromptedStrategy,
    ProviderStrategy,
    StructuredReport,
    ToolStrategy,
)
from langchain_structx.errors import FailureKind
from langchain_structx.nodes import KindRouter, route_by_kind


class Contact(BaseModel):
    name: str


def test_a_class_schema_types_the_strategy() -> None:
    assert_type(ToolStrategy(Contact), ToolStrategy[Contact])
    assert_type(ProviderStrategy(Contact, strict=True), ProviderStrategy[Contact])
    assert_type(PromptedStrategy(Contact, json_mode=True), PromptedStrategy[Contact])
    assert_type(AutoStrategy(Contact), AutoStrategy[Contact])
    assert ToolStrategy(Contact).schema is Contact


def test_a_dict_schema_gives_any() -> None:
    strategy = ToolStrategy({"title": "T", "type": "object"})
    assert_type(strategy, ToolStrategy[Any])
    assert strategy.max_retries == 3


def test_context_and_report_fields_are_typed() -> None:
    def handler(error: Exception, context: ErrorContext) -> str:
        assert_type(context.attempt, int)
        assert_type(context.kind, FailureKind)
        assert_type(context.variant_names, tuple[str, ...])
        return "retry"

    report: StructuredReport = {
        "strategy": "tool",
        "variant": "Contact",
        "attempts": 1,
        "repairs": [],
        "fallbacks": [],
        "errors": [],
        "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    }
    assert_type(report["attempts"], int)
    assert ToolStrategy(Contact, handle_errors=handler).handle_errors is handler


def test_router_is_typed() -> None:
    router = route_by_kind({"Contact": "save"})
    assert_type(router, KindRouter)
    assert_type(router({"structured_response_kind": "Contact"}), str)
    assert router.destinations == ["save"]
