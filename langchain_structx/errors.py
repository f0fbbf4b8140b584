"""Exceptions raised by langchain-structx.

Every exception derives from `StructxError`. Mistakes in how the package is used
(`UserError`) stay apart from failures that happen while a model runs. Failures of
a structured-output attempt also derive from LangChain's own
`langchain.agents.structured_output.StructuredOutputError`, so code that already
catches LangChain's errors keeps working::

    StructxError
    ├── UserError                       misuse: bad schema, bad option, missing route
    │   ├── SchemaError                 a schema that cannot be normalised
    │   └── RouteError                  a union variant with no route in a graph
    ├── DialectError                    a schema a provider dialect cannot express faithfully
    ├── JSONParseError (ValueError)     model text that is not JSON, even after repair
    │   ├── MalformedJSONError          broken syntax
    │   │   └── ReplyTooLargeError      longer than Limits.max_reply_chars; not read
    │   └── TruncatedJSONError          an unclosed string, object or array
    ├── OutputValidationError (ValueError)
    │                                   a parsed value that breaks the schema
    └── StructuredOutputFailure (+ langchain StructuredOutputError)
        ├── AttemptError                one attempt failed; handed to handle_errors
        │   ├── InvalidOutputError      (+ langchain StructuredOutputValidationError)
        │   ├── MultipleOutputsError    (+ langchain MultipleStructuredOutputsError)
        │   ├── TruncatedOutputError    the model stopped before the output was complete
        │   ├── MissingOutputError      prose where a structured answer was required
        │   ├── StructuredOutputRefusal the model declined (+ StructuredOutputValidationError,
        │   │                           + langchain_core ModelRefusalError)
        │   └── EarlierAttemptError     an earlier attempt, rebuilt after a resume elsewhere
        ├── ProviderRejectedError       the provider refused the request itself
        │                               (+ langchain_core ModelInvalidRequestError)
        ├── ErrorHandlerError (+ TypeError) a handle_errors callable broke its contract
        └── StructuredOutputRetryError  every allowed attempt failed
                                        (+ langchain_core OutputParserException)

The command line, the local model and the test double raise their own errors,
defined beside them and all under `StructxError`::

    StructxError
    ├── CliError                        structx: a failure with its exit code (_cli_base)
    │   └── NonFiniteValueError         a result JSON cannot represent
    ├── SchemaSpecError                 structx: a --schema it cannot read (_cli_schema)
    ├── BatchInputError                 structx: an unreadable --batch record (_batch)
    ├── ServerUnavailableError          structx --server: no server answers (_remote)
    ├── RemoteRunError                  structx --server: a run failed there (_remote)
    ├── UserError
    │   └── OutputFileError             structx: an --output it cannot write (_outfile)
    ├── LocalModelError                 the embedded model (local._weights)
    │   ├── WeightsError                missing or altered weights
    │   ├── GrammarError                a schema llama.cpp's grammar cannot express
    │   └── ContextWindowError (+ ValueError)
    │                                   a prompt with no room left for the answer
    └── ScriptExhaustedError (+ RuntimeError)
                                        testing.ScriptedChatModel ran out of replies

Run-time failures carry the attempt number, the last AI message and the token usage
summed so far, so a caller can log or bill them without re-running anything.
Messages that quote a model's text are cut to `MESSAGE_CHARS` characters, so a
huge reply never becomes a huge exception (the full reply stays on `ai_message`).

The classes above `StructuredOutputFailure` are defined in a private module that
does not import LangChain, because the parser, the schema layer and the dialects
raise them; they are re-exported here, which is their public home.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from langchain.agents.structured_output import (
    MultipleStructuredOutputsError,
    StructuredOutputError,
    StructuredOutputValidationError,
)
from langchain_core.exceptions import (
    ModelInvalidRequestError,
    ModelRefusalError,
    OutputParserException,
)
from typing_extensions import TypedDict, Unpack

from langchain_structx._clip import MESSAGE_CHARS, clip
from langchain_structx._exceptions import (
    DialectError,
    JSONParseError,
    MalformedJSONError,
    OutputValidationError,
    ReplyTooLargeError,
    RouteError,
    SchemaError,
    StructxError,
    TruncatedJSONError,
    UserError,
    ValidationIssue,
)

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage
    from langchain_core.messages.ai import UsageMetadata

FailureKind = Literal[
    "validation",
    "parse",
    "multiple_outputs",
    "truncation",
    "refusal",
    "no_output",
]
"""What went wrong in one structured-output attempt."""


class FailureContext(TypedDict, total=False):
    """Where in a run an error arose: what every run-time error is created with."""

    ai_message: AIMessage | None
    """The last AI message the model produced, if any."""
    attempt: int
    """How many attempts had been made (1-based)."""
    usage: UsageMetadata | None
    """Token usage summed over every attempt so far."""


class StructuredOutputFailure(StructxError, StructuredOutputError):
    """A structured-output run failed.

    Attributes:
        ai_message: The last AI message the model produced, if any.
        attempt: How many attempts had been made when this was raised (1-based).
        usage: Token usage summed over every attempt so far.
    """

    def __init__(
        self,
        message: str,
        *,
        ai_message: AIMessage | None = None,
        attempt: int = 1,
        usage: UsageMetadata | None = None,
    ) -> None:
        # LangChain's error classes take their own positional arguments; bypass
        # them so that every subclass here shares one constructor.
        Exception.__init__(self, clip(message, MESSAGE_CHARS))
        # LangChain declares `ai_message: AIMessage`; a run-time failure that
        # happened before any reply (a provider rejection) has None.
        self.ai_message = ai_message  # type: ignore[assignment]
        self.attempt = attempt
        self.usage = usage


class AttemptError(StructuredOutputFailure):
    """One attempt did not yield a valid structured output.

    This is what `handle_errors` receives. Its `kind` says what went wrong.
    """

    kind: FailureKind = "validation"


class EarlierAttemptError(AttemptError):
    """An earlier attempt's error, rebuilt from the checkpoint of a resumed run.

    A run that resumes in another process has only what its checkpoint keeps of
    the attempts before: their wording and kind. They reach `handle_errors`
    (in `ErrorContext.previous_errors`) and `StructuredOutputRetryError.errors`
    as this class, with no AI message.
    """

    def __init__(self, message: str, *, kind: FailureKind, attempt: int) -> None:
        self.kind = kind
        super().__init__(message, attempt=attempt)


class InvalidOutputError(AttemptError, StructuredOutputValidationError):
    """The output was found but could not be parsed or did not validate.

    Attributes:
        tool_name: The variant (or structured tool) the output was meant for.
        source: The underlying `JSONParseError` or `OutputValidationError`.
        via_tool: Whether the output came as a tool call (else as text), which
            only changes the wording.
    """

    def __init__(
        self,
        tool_name: str,
        source: Exception,
        *,
        via_tool: bool = True,
        **context: Unpack[FailureContext],
    ) -> None:
        self.tool_name = tool_name
        self.source = source
        self.kind = "parse" if isinstance(source, JSONParseError) else "validation"
        # LangChain's wording for tool calls; a text answer is no tool, and small
        # models copy whatever the feedback names into their next answer.
        if via_tool:
            text = f"Failed to parse structured output for tool '{tool_name}': {source}."
        elif self.kind == "parse":  # say what is wrong: the text, not the shape
            text = f"The answer is not valid JSON: {source}."
        else:
            text = f"The answer does not match {tool_name}: {source}."
        StructuredOutputFailure.__init__(self, text, **context)


class MultipleOutputsError(AttemptError, MultipleStructuredOutputsError):
    """The model produced several structured outputs where one was expected.

    Attributes:
        tool_names: The names of the structured calls the model made.
    """

    kind: FailureKind = "multiple_outputs"

    def __init__(
        self,
        tool_names: Sequence[str],
        **context: Unpack[FailureContext],
    ) -> None:
        self.tool_names = list(tool_names)
        StructuredOutputFailure.__init__(
            self,
            "Model incorrectly returned multiple structured responses "
            f"({', '.join(self.tool_names)}) when only one is expected.",
            **context,
        )


class TruncatedOutputError(AttemptError):
    """The model stopped (token limit or cut-off stream) before finishing the output.

    A cut-off answer is retried once with feedback; a second one is raised as this
    error itself (not wrapped in `StructuredOutputRetryError`), since more of the
    same request would be cut off again.
    """

    kind: FailureKind = "truncation"


class MissingOutputError(AttemptError):
    """The model answered without the structured output it was asked for."""

    kind: FailureKind = "no_output"


class StructuredOutputRefusal(AttemptError, StructuredOutputValidationError, ModelRefusalError):
    """The model refused to produce the output.

    It is also LangChain's `ModelRefusalError`, which chat models'
    `with_structured_output` raise for a refusal, so code that catches that
    catches this too; like it, it is not retryable (`is_retryable` is False),
    so LangChain's `ModelRetryMiddleware` does not ask again by default. It
    also derives from `StructuredOutputValidationError`, which is what
    LangChain's `ModelRefusalMiddleware` converts into its refusal error.

    Attributes:
        refusal: The model's own words, when it gave any.
        raw_message: The refusing reply (the same message as `ai_message`), as
            LangChain's `ModelRefusalError` names it.
    """

    kind: FailureKind = "refusal"

    def __init__(
        self,
        refusal: str,
        **context: Unpack[FailureContext],
    ) -> None:
        self.refusal = clip(refusal, MESSAGE_CHARS)
        self.tool_name = "response_format"
        self.source = ValueError(self.refusal)
        StructuredOutputFailure.__init__(
            self, f"The model refused to answer: {self.refusal}", **context
        )
        self.raw_message = self.ai_message


class ProviderRejectedError(StructuredOutputFailure, ModelInvalidRequestError):
    """Every strategy `AutoStrategy` could use was rejected by the provider.

    Each rejection made `AutoStrategy` fall back to the next strategy; this is
    raised when none is left. Its `__cause__` is the provider's last error. An
    explicitly chosen strategy lets the provider's own exception through instead.

    It is also LangChain's `ModelInvalidRequestError`, which provider clients
    raise for a request the provider refuses: like it, it is not retryable
    (`is_retryable` is False), since the same request would be refused again.

    Attributes:
        strategy: The strategy whose request was rejected.
    """

    def __init__(
        self,
        strategy: str,
        source: BaseException,
        *,
        attempt: int = 0,
        usage: UsageMetadata | None = None,
    ) -> None:
        self.strategy = strategy
        self.source = source
        text = clip(str(source), MESSAGE_CHARS)
        super().__init__(
            f"The provider rejected the {strategy} strategy: {text}", attempt=attempt, usage=usage
        )


class ErrorHandlerError(StructuredOutputFailure, TypeError):
    """A `handle_errors` callable broke its contract.

    It is also a `TypeError`, which is what a non-string result raised before.

    Raised when the handler returns something other than a string (sync or
    async), or lets `StopIteration` escape (which Python would otherwise turn
    into a bare `RuntimeError`). Its `__cause__` is what the handler raised, or
    the attempt error it was handling. An ordinary exception raised by the
    handler is not wrapped: it stops the run as itself.

    Attributes:
        error: The attempt error the handler was given.
    """

    def __init__(
        self,
        message: str,
        *,
        error: AttemptError,
        **context: Unpack[FailureContext],
    ) -> None:
        self.error = error
        super().__init__(message, **context)


class StructuredOutputRetryError(StructuredOutputFailure, OutputParserException):
    """Every allowed attempt failed.

    It is also LangChain's `OutputParserException`, which a chat model's
    `with_structured_output` raises for an answer it cannot read, so code that
    catches that around the runnable catches this too. Its attributes are
    LangChain's: `llm_output` is the text of the last reply, `observation` None
    and `send_to_llm` False. (An attempt's own error is not one: `handle_errors`
    given an exception type matches it as LangChain's agent matches its errors.)

    Attributes:
        errors: The error of each attempt, in order.
        n_attempts: How many model calls were spent on structured output.
    """

    def __init__(
        self,
        errors: Sequence[AttemptError],
        *,
        ai_message: AIMessage | None,
        usage: UsageMetadata | None,
    ) -> None:
        self.errors = tuple(errors)
        self.n_attempts = len(self.errors)
        last = self.errors[-1] if self.errors else None
        summary = f"{type(last).__name__}: {last}" if last else "no attempt was made"
        summary = clip(summary, MESSAGE_CHARS // 2)
        StructuredOutputFailure.__init__(
            self,
            f"Structured output failed after {self.n_attempts} attempt(s); last error: {summary}",
            ai_message=ai_message,
            attempt=self.n_attempts,
            usage=usage,
        )
        self.llm_output = ai_message.text if ai_message is not None else None
        self.observation = None
        self.send_to_llm = False


__all__ = (
    "AttemptError",
    "DialectError",
    "EarlierAttemptError",
    "ErrorHandlerError",
    "FailureContext",
    "FailureKind",
    "InvalidOutputError",
    "JSONParseError",
    "MalformedJSONError",
    "MissingOutputError",
    "MultipleOutputsError",
    "OutputValidationError",
    "ProviderRejectedError",
    "ReplyTooLargeError",
    "RouteError",
    "SchemaError",
    "StructuredOutputFailure",
    "StructuredOutputRefusal",
    "StructuredOutputRetryError",
    "StructxError",
    "TruncatedJSONError",
    "TruncatedOutputError",
    "UserError",
    "ValidationIssue",
)
