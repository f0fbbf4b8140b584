"""Reliable, portable structured output for LangChain agents and LangGraph graphs.

Examples:
    >>> from langchain_structx import create_agent, ToolStrategy
    >>> callable(create_agent) and ToolStrategy.__name__
    'ToolStrategy'
"""

from langchain_structx._capabilities import FallbackMemory
from langchain_structx._version import __version__
from langchain_structx.errors import (
    AttemptError,
    DialectError,
    ErrorHandlerError,
    InvalidOutputError,
    JSONParseError,
    MalformedJSONError,
    MissingOutputError,
    MultipleOutputsError,
    OutputValidationError,
    ProviderRejectedError,
    RouteError,
    SchemaError,
    StructuredOutputFailure,
    StructuredOutputRefusal,
    StructuredOutputRetryError,
    StructxError,
    TruncatedJSONError,
    TruncatedOutputError,
    UserError,
    ValidationIssue,
)
from langchain_structx.limits import Limits
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
from langchain_structx.report import FallbackRecord, StructuredReport, TokenUsage
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
    "JSONParseError",
    "MalformedJSONError",
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
    "StructuredOutputFailure",
    "StructuredOutputMiddleware",
    "StructuredOutputNode",
    "StructuredOutputRefusal",
    "StructuredOutputRetryError",
    "StructuredReport",
    "StructxError",
    "TokenUsage",
    "ToolStrategy",
    "TruncatedJSONError",
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
