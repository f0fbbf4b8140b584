"""Static checks of `with_structured_output` (run by `mypy tests/typing`), also run by pytest."""

from __future__ import annotations

from typing import Any, assert_type

from langchain_core.language_models import LanguageModelInput
from langchain_core.runnables import Runnable
from pydantic import BaseModel

from langchain_structx import PromptedStrategy, ToolStrategy, with_structured_output
from langchain_structx.runnables import RawOutput
from langchain_structx.testing import ScriptedChatModel


class Contact(BaseModel):
    name: str


def model() -> ScriptedChatModel:
    return ScriptedChatModel(responses=['{"name": "Ada"}'])


def test_a_class_types_the_result() -> None:
    runnable = with_structured_output(model(), Contact, method="json_mode")
    assert_type(runnable, Runnable[LanguageModelInput, Contact])
    result = runnable.invoke("Ada")
    assert_type(result, Contact)
    assert result == Contact(name="Ada")


def test_a_strategy_types_the_result() -> None:
    runnable = with_structured_output(model(), PromptedStrategy(Contact))
    assert_type(runnable, Runnable[LanguageModelInput, Contact])
    assert_type(
        with_structured_output(model(), ToolStrategy(Contact)),
        Runnable[LanguageModelInput, Contact],
    )
    assert runnable.invoke("Ada").name == "Ada"


def test_include_raw_types_the_dict() -> None:
    runnable = with_structured_output(model(), Contact, include_raw=True, method="json_mode")
    assert_type(runnable, Runnable[LanguageModelInput, RawOutput[Contact]])
    result = runnable.invoke("Ada")
    assert_type(result["parsed"], Contact | None)
    assert_type(result["parsing_error"], BaseException | None)
    assert result["parsed"] == Contact(name="Ada")


def test_a_dict_schema_gives_any() -> None:
    schema = {"title": "Contact", "type": "object", "properties": {"name": {"type": "string"}}}
    assert_type(with_structured_output(model(), schema), Runnable[LanguageModelInput, Any])
    raw = with_structured_output(model(), schema, include_raw=True, method="json_mode")
    assert_type(raw, Runnable[LanguageModelInput, RawOutput[Any]])
    assert raw.invoke("Ada")["parsed"] == {"name": "Ada"}
