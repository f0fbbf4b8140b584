"""A ready-made extraction graph to serve on LangGraph Server.

The graph takes `{"text": ..., "schema": ...}` (a JSON schema, or a list of them
for a union) and ends with the same three keys a structured-output node writes:
`structured_response`, `structured_response_kind` and `structured_output_report`.
A run that finds no valid object ends normally, with `structured_output_error`
(`{"type", "message"}`) instead. It is what `structx extract --batch FILE
--server URL` runs, one run per record, so the server's queue spreads a batch
over its workers. Serve it from
`langgraph.json`:

```json
{"graphs": {"extract": "langchain_structx.graphs:extraction_graph"}}
```

`extraction_graph` runs on the model named by the `STRUCTX_MODEL` environment
variable (`local`, the default, or an `init_chat_model` string). Its offline twin,
on a stand-in model that needs no weights, lives with the test doubles:
`langchain_structx.testing.offline_extraction_graph` and `echo_model`.

Examples:
    >>> from langchain_structx.testing import echo_model
    >>> app = build_extraction_graph(echo_model)
    >>> schema = {"title": "City", "type": "object",
    ...           "properties": {"city": {"type": "string"}}, "required": ["city"]}
    >>> out = app.invoke({"text": '{"city": "Oslo"}', "schema": schema})
    >>> out["structured_response"], out["structured_response_kind"]
    ({'city': 'Oslo'}, 'City')
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, Literal, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from langchain_structx._faces.deprecated import moved
from langchain_structx._models.capabilities import FallbackMemory
from langchain_structx.errors import StructxError, UserError
from langchain_structx.nodes import StructuredOutputNode, structured_output_node
from langchain_structx.report import (
    ERROR_KEY,
    KIND_KEY,
    REPORT_KEY,
    RESPONSE_KEY,
    StructuredReport,
)
from langchain_structx.strategies import STRATEGIES, Strategy

MAX_RETRIES_LIMIT = 10
"""The most retries one run may ask for: a client must not buy unbounded model calls."""

DEFAULT_SYSTEM_PROMPT = (
    "You extract information from the user's text. Use only facts stated in the text; "
    "copy names, numbers and addresses exactly as written."
)


class ExtractionInput(TypedDict):
    """One extraction request: what a client sends as a run's input.

    Attributes:
        text: The text to extract from.
        schema: A JSON schema (a dict), or a list of them to allow several shapes.
        strategy: `auto` (the default), `provider`, `tool` or `prompted`.
        max_retries: Retries after the first attempt (default 3, at most 10).
        system: The system prompt; a generic extraction prompt by default.
    """

    text: str
    schema: dict[str, Any] | list[dict[str, Any]]
    strategy: NotRequired[Literal["auto", "provider", "tool", "prompted"]]
    max_retries: NotRequired[int]
    system: NotRequired[str]


class ExtractionError(TypedDict):
    """Why a run found no valid object: the exception's type name and message."""

    type: str
    message: str


class ExtractionOutput(TypedDict):
    """What a run returns: the object, its kind and report, or else the error."""

    structured_response: Any
    structured_response_kind: str | None
    structured_output_report: StructuredReport | None
    structured_output_error: ExtractionError | None


class ExtractionState(ExtractionInput):
    """The request and, once the run ends, its output."""

    structured_response: NotRequired[Any]
    structured_response_kind: NotRequired[str | None]
    structured_output_report: NotRequired[StructuredReport | None]
    structured_output_error: NotRequired[ExtractionError | None]


def request_strategy(request: ExtractionInput) -> Strategy:
    """The strategy a request asks for, its fields checked as untrusted input.

    Raises:
        UserError: When a field has the wrong type or value.

    Examples:
        >>> request_strategy({"text": "x", "schema": {"type": "object"}}).max_retries
        3
        >>> request_strategy({"text": "x", "schema": "nope"})
        Traceback (most recent call last):
        ...
        langchain_structx.errors.UserError: schema must be a JSON schema object or a list of them
    """
    schema = request.get("schema")
    schemas = schema if isinstance(schema, list) else [schema]
    if not schemas or not all(isinstance(s, dict) for s in schemas):
        raise UserError("schema must be a JSON schema object or a list of them")
    kind = STRATEGIES.get(str(request.get("strategy", "auto")))
    if kind is None:
        raise UserError(f"strategy must be one of {sorted(STRATEGIES)}")
    retries = request.get("max_retries", 3)
    if type(retries) is not int or not 0 <= retries <= MAX_RETRIES_LIMIT:
        raise UserError(f"max_retries must be a whole number from 0 to {MAX_RETRIES_LIMIT}")
    return kind(schemas[0] if len(schemas) == 1 else schemas, max_retries=retries)  # type: ignore[no-any-return]


def build_extraction_graph(
    model: BaseChatModel | Callable[[], BaseChatModel],
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the extraction graph: one node that extracts with the request's schema.

    Args:
        model: The chat model, or a function returning the model for each run
            (for a stand-in that must not be shared between concurrent runs).

    Returns:
        The compiled graph, named `extract`.
    """
    model_for_run = model if callable(model) and not isinstance(model, BaseChatModel) else None
    # Rejections the model's provider answered are remembered across runs, not per run.
    memory = FallbackMemory()

    def prepared(state: ExtractionState) -> tuple[StructuredOutputNode, dict[str, Any]]:
        text = state.get("text")
        if not isinstance(text, str):
            raise UserError("text must be a string")
        system = state.get("system", DEFAULT_SYSTEM_PROMPT)
        if not isinstance(system, str):
            raise UserError("system must be a string")
        node = structured_output_node(
            model_for_run() if model_for_run else model,  # type: ignore[arg-type]
            request_strategy(state),
            system_prompt=system,
            record_messages=False,
            fallback_memory=memory,
        )
        return node, {"messages": [HumanMessage(text)]}

    def extract(state: ExtractionState) -> dict[str, Any]:
        try:
            node, inputs = prepared(state)
            return _outcome(node(inputs))
        except StructxError as exc:
            return _failure(exc)

    async def aextract(state: ExtractionState) -> dict[str, Any]:
        try:
            node, inputs = prepared(state)
            return _outcome(await node.acall(inputs))
        except StructxError as exc:
            return _failure(exc)

    builder = StateGraph(
        ExtractionState, input_schema=ExtractionInput, output_schema=ExtractionOutput
    )
    builder.add_node("extract", RunnableLambda(extract, afunc=aextract, name="extract"))
    builder.add_edge(START, "extract")
    builder.add_edge("extract", END)
    return builder.compile(name="extract")


def _outcome(update: Any) -> dict[str, Any]:
    # A node without routes returns a plain update; the messages stay out of the output.
    return {key: update[key] for key in (RESPONSE_KEY, KIND_KEY, REPORT_KEY)} | {ERROR_KEY: None}


def _failure(exc: StructxError) -> dict[str, Any]:
    # Returned, not raised: a server shows a client only the type of an exception it
    # does not know, and our messages are bounded and meant for the caller.
    error: ExtractionError = {"type": type(exc).__name__, "message": str(exc)}
    return {RESPONSE_KEY: None, KIND_KEY: None, REPORT_KEY: None, ERROR_KEY: error}


@functools.cache
def _served_model(name: str) -> BaseChatModel:
    # One model per server process: the local one loads its weights once.
    if name == "local":
        from langchain_structx.local import LocalChatModel

        return LocalChatModel()
    from langchain.chat_models import init_chat_model

    return init_chat_model(name)


def extraction_graph(config: RunnableConfig) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Graph factory for LangGraph Server: extraction on `STRUCTX_MODEL` (default `local`)."""
    return _compiled(os.environ.get("STRUCTX_MODEL", "local"))


@functools.cache
def _compiled(model_name: str) -> CompiledStateGraph[Any, Any, Any, Any]:
    return build_extraction_graph(_served_model(model_name))


__all__ = (
    "ExtractionError",
    "ExtractionInput",
    "ExtractionOutput",
    "ExtractionState",
    "MAX_RETRIES_LIMIT",
    "build_extraction_graph",
    "extraction_graph",
    "request_strategy",
)


def __getattr__(name: str) -> object:
    # The offline stand-ins moved to `testing`, so that nothing at run time imports it.
    return moved(__name__, name, _MOVED)


_MOVED = {
    "echo_model": "langchain_structx.testing",
    "offline_extraction_graph": "langchain_structx.testing",
}
