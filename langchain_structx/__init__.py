"""Reliable, portable structured output for LangChain agents and LangGraph graphs.

Names whose modules need LangChain (the strategies, the middleware, the node and
the run-time errors) are imported when first used, so that the LangChain-free
layers (`langchain_structx.dialects`, the parser, `Limits`) can be imported on
their own without loading LangChain's agent stack.

Examples:
    >>> from langchain_structx import create_agent, ToolStrategy
    >>> callable(create_agent) and ToolStrategy.__name__
    'ToolStrategy'
"""

import importlib
import typing as _typing

from langchain_structx._exceptions import (
    DialectError,
    OutputValidationError,
    RouteError,
    SchemaError,
    StructxError,
    UserError,
    ValidationIssue,
)
from langchain_structx._faces.deprecated import moved as _moved
from langchain_structx._version import __version__
from langchain_structx.limits import Limits
from langchain_structx.report import FallbackRecord, StructuredReport, TokenUsage

if _typing.TYPE_CHECKING:
    from langchain_structx._models.capabilities import FallbackMemory
    from langchain_structx.errors import (
        AttemptError,
        ErrorHandlerError,
        InvalidOutputError,
        MissingOutputError,
        MultipleOutputsError,
        ProviderRejectedError,
        StructuredOutputFailure,
        StructuredOutputRefusal,
        StructuredOutputRetryError,
        TruncatedOutputError,
    )
    from langchain_structx.middleware import (
        StructuredAgentState,
        StructuredOutputMiddleware,
        create_agent,
    )
    from langchain_structx.nodes import (
        KindRouter,
        StructuredOutputNode,
        reset_structured_output,
        route_by_kind,
        structured_output_node,
    )
    from langchain_structx.runnables import with_structured_output
    from langchain_structx.strategies import (
        AutoStrategy,
        ErrorContext,
        HandleErrors,
        PromptedStrategy,
        ProviderStrategy,
        Strategy,
        StrategyName,
        ToolStrategy,
    )
    from langchain_structx.streaming import StructuredOutputEvent

_LAZY: dict[str, str] = {
    "FallbackMemory": "_models.capabilities",
    **dict.fromkeys(
        (
            "AttemptError",
            "ErrorHandlerError",
            "InvalidOutputError",
            "MissingOutputError",
            "MultipleOutputsError",
            "ProviderRejectedError",
            "StructuredOutputFailure",
            "StructuredOutputRefusal",
            "StructuredOutputRetryError",
            "TruncatedOutputError",
        ),
        "errors",
    ),
    **dict.fromkeys(
        ("StructuredAgentState", "StructuredOutputMiddleware", "create_agent"), "middleware"
    ),
    **dict.fromkeys(
        (
            "KindRouter",
            "StructuredOutputNode",
            "reset_structured_output",
            "route_by_kind",
            "structured_output_node",
        ),
        "nodes",
    ),
    **dict.fromkeys(
        (
            "AutoStrategy",
            "ErrorContext",
            "HandleErrors",
            "PromptedStrategy",
            "ProviderStrategy",
            "Strategy",
            "StrategyName",
            "ToolStrategy",
        ),
        "strategies",
    ),
    "StructuredOutputEvent": "streaming",
    "with_structured_output": "runnables",
}
"""Public names loaded on first use, and the module of each."""

_MOVED: dict[str, str] = dict.fromkeys(
    ("JSONParseError", "MalformedJSONError", "TruncatedJSONError"), "langchain_structx.errors"
)
"""Former top-level names, still served with a `DeprecationWarning`, and their module."""

if not _typing.TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            return _moved(__name__, name, _MOVED)
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # later lookups skip this function
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = (
    "AttemptError",
    "AutoStrategy",
    "DialectError",
    "ErrorContext",
    "ErrorHandlerError",
    "FallbackMemory",
    "FallbackRecord",
    "HandleErrors",
    "InvalidOutputError",
    "KindRouter",
    "Limits",
    "MissingOutputError",
    "MultipleOutputsError",
    "OutputValidationError",
    "PromptedStrategy",
    "ProviderRejectedError",
    "ProviderStrategy",
    "RouteError",
    "SchemaError",
    "Strategy",
    "StrategyName",
    "StructuredAgentState",
    "StructuredOutputEvent",
    "StructuredOutputFailure",
    "StructuredOutputMiddleware",
    "StructuredOutputNode",
    "StructuredOutputRefusal",
    "StructuredOutputRetryError",
    "StructuredReport",
    "StructxError",
    "TokenUsage",
    "ToolStrategy",
    "TruncatedOutputError",
    "UserError",
    "ValidationIssue",
    "__version__",
    "create_agent",
    "reset_structured_output",
    "route_by_kind",
    "structured_output_node",
    "with_structured_output",
)
