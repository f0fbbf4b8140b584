"""How a structured answer is asked for: the four strategies and their options.

Each strategy is a frozen value object. It says *what* to ask for and how to
react to failures; the engine decides *how* to run it. The same object works in
`create_agent`, in `StructuredOutputMiddleware` and in graph nodes. Its schema
and options are checked when it is built, as LangChain checks its own
strategies: an unsupported schema raises `SchemaError` there, not at the first
run.

Examples:
    >>> from pydantic import BaseModel
    >>> class Contact(BaseModel):
    ...     name: str
    >>> ToolStrategy(Contact, max_retries=1).max_retries
    1
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeAlias, cast, overload

from typing_extensions import TypedDict, TypeForm, TypeVar, Unpack

from langchain_structx._policy import ErrorPolicy, compile_policy
from langchain_structx._schemas.normalise import SchemaSet, normalize
from langchain_structx.errors import AttemptError, FailureKind, UserError
from langchain_structx.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from langchain.agents import structured_output as lc
    from langchain_core.messages import AIMessage

SchemaT = TypeVar("SchemaT", default=Any)

SchemaInput: TypeAlias = "TypeForm[SchemaT] | dict[str, Any] | Sequence[Any]"
"""What a strategy accepts as its schema; a class or a union of classes also types
the result (`ToolStrategy(Cat | Dog)` is a `ToolStrategy[Cat | Dog]`)."""

StrategyName = Literal["provider", "tool", "prompted"]
"""The concrete ways of asking a model for structured output."""

ANSWERING: tuple[StrategyName, ...] = ("provider", "tool", "prompted")
"""The strategies that ask a model for an answer (AutoStrategy picks among them)."""

Setting = Literal["json_mode", "tool_choice"]
"""A part of a request a model may refuse while its route works without it: JSON
mode on the prompted route, a forced tool choice on the tool route."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Behaviour:
    """What a concrete strategy does on the wire: the engine asks this, never the name.

    Examples:
        >>> behaviour("tool").answers_in_tool_call, behaviour("provider").native_schema
        (True, True)
    """

    answers_in_tool_call: bool
    """The answer is a call of one of our tools, bound to the model (its arguments
    stream in tool-call chunks); otherwise it is the reply's text."""
    native_schema: bool
    """The schema travels in the provider's own response format (in its strict
    dialect where it has one), so the provider may reject the request for it, and
    some clients change the caller's tools beside it."""
    optional_setting: Setting | None
    """A part of this route's request the provider may refuse while the route
    works without it, or None."""


def behaviour(name: StrategyName) -> Behaviour:
    """The behaviour of the concrete strategy called `name`."""
    return _BEHAVIOURS[name]


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorContext:
    """What a `handle_errors` callable knows about a failed attempt.

    Attributes:
        error: The failure of this attempt.
        attempt: Which attempt failed, counting from 1.
        max_retries: How many retries the strategy allows in total.
        ai_message: The model message that failed, if there was one.
        variant_names: Names of the schemas the answer may take.
        kind: What went wrong (validation, parse, truncation, ...).
        strategy: The strategy that was running.
        state: The agent or graph state at the time of the call.
        previous_errors: Errors of the earlier attempts of this run, in order.
    """

    error: AttemptError
    attempt: int
    max_retries: int
    ai_message: AIMessage | None
    variant_names: tuple[str, ...]
    kind: FailureKind
    strategy: StrategyName
    state: Mapping[str, Any] = field(default_factory=dict)
    previous_errors: tuple[AttemptError, ...] = ()

    @property
    def retries_left(self) -> int:
        """Model calls still allowed after this failed attempt."""
        return max(self.max_retries + 1 - self.attempt, 0)


ErrorHandler: TypeAlias = (
    "Callable[[Exception], str] | Callable[[Exception, ErrorContext], str | Awaitable[str]]"
)

HandleErrors: TypeAlias = (
    "bool | str | type[Exception] | tuple[type[Exception], ...] | ErrorHandler"
)
"""Everything `handle_errors` accepts.

- `True`: retry every failure with the default feedback message.
- `False`: raise at the first failure.
- `str`: retry with this text as the feedback.
- an exception type or tuple: retry only those, with the default message.
- `Callable[[Exception], str]`: the returned text is the feedback (LangChain's form).
- `Callable[[Exception, ErrorContext], str]`, sync or async: the same, with context.

A callable that raises stops the run with its exception; one that returns
anything but a string, or lets `StopIteration` escape, stops it with
`ErrorHandlerError`. Any other value is refused with `UserError` when the
strategy is built. A refusal is an answer,
not a mistake: with `True` or a string it is raised at once as
`StructuredOutputRefusal`; only a matching exception type or a callable can retry
it. A truncated answer is retried once at most, then `TruncatedOutputError` is
raised as itself.
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Options:
    """Options every strategy shares; keyword-only, after the schema."""

    handle_errors: HandleErrors = True
    """What to do when an attempt fails; see `HandleErrors`."""
    max_retries: int = 3
    """Retries allowed after the first attempt; a run never loops beyond this."""
    coerce: bool = True
    """Whether near-misses such as `"5"` for an integer are coerced before validation."""
    limits: Limits = DEFAULT_LIMITS
    """Bounds on the size, depth and checking time of each reply; see `Limits`."""
    policy: ErrorPolicy = field(init=False, repr=False, compare=False)
    """`handle_errors`, checked and compiled when the strategy is built."""
    schemas: SchemaSet = field(init=False, repr=False, compare=False)
    """The schema's variants, read and checked when the strategy is built."""
    name: ClassVar[str]

    def __post_init__(self) -> None:
        retries = self.max_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise UserError(f"max_retries must be a whole number >= 0, got {retries!r}")
        if not isinstance(self.limits, Limits):
            raise UserError(f"limits must be a Limits value, got {self.limits!r}")
        # Checked and compiled once, here: a wrong value fails when the strategy is built.
        object.__setattr__(self, "policy", compile_policy(self.handle_errors))
        object.__setattr__(self, "schemas", normalize(getattr(self, "schema")))  # noqa: B009

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled and copied as the arguments it was built from: what `__post_init__`
        # derives holds validator closures, and is derived again on the way back.
        given = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        return (_rebuild, (type(self), given))

    @property
    def candidates(self) -> tuple[StrategyName, ...]:
        """The strategies a run of this one may use: itself."""
        return (cast("StrategyName", self.name),)


def _rebuild(cls: type[_Options], given: dict[str, Any]) -> _Options:
    return cls(**given)


class _CommonOptions(TypedDict, total=False):
    handle_errors: HandleErrors
    max_retries: int
    coerce: bool
    limits: Limits


class _ToolOptions(_CommonOptions, total=False):
    tool_message_content: str | None


class _ProviderOptions(_CommonOptions, total=False):
    strict: bool | None


class _PromptedOptions(_CommonOptions, total=False):
    json_mode: bool


class _AutoOptions(_ToolOptions, _ProviderOptions, _PromptedOptions, total=False):
    order: tuple[StrategyName, ...]


@dataclass(frozen=True, slots=True)
class ToolStrategy(_Options, Generic[SchemaT]):
    """Ask for the answer as a call to an artificial tool, one tool per schema.

    Works with any model that can call tools. The tool choice is forced, so the
    model must either call an ordinary tool or answer through one of ours.

    Examples:
        >>> from typing_extensions import TypedDict
        >>> class Event(TypedDict):
        ...     title: str
        >>> ToolStrategy(Event, tool_message_content="Saved.").tool_message_content
        'Saved.'
    """

    if TYPE_CHECKING:
        # A class or a union of classes types the strategy; a dict schema is Any.

        @overload
        def __init__(self, schema: TypeForm[SchemaT], **options: Unpack[_ToolOptions]) -> None: ...
        @overload
        def __init__(
            self: ToolStrategy[Any],
            schema: dict[str, Any] | Sequence[Any],
            **options: Unpack[_ToolOptions],
        ) -> None: ...
        def __init__(self, schema: Any, **options: Any) -> None: ...

    name: ClassVar[StrategyName] = "tool"
    behaviour: ClassVar[Behaviour] = Behaviour(
        answers_in_tool_call=True, native_schema=False, optional_setting="tool_choice"
    )
    schema: SchemaInput[SchemaT]
    """The output schema: a model class, dataclass, TypedDict, dict or a Union of them."""
    _: KW_ONLY
    tool_message_content: str | None = None
    """Text of the tool message that answers the structured call; by default it
    repeats the structured response."""


@dataclass(frozen=True, slots=True)
class ProviderStrategy(_Options, Generic[SchemaT]):
    """Ask for the answer through the provider's native JSON-schema output.

    Unions travel inside an envelope object whose `kind` names the variant; the
    caller only ever sees the variant. Fenced or sloppy JSON is repaired locally.

    Examples:
        >>> ProviderStrategy({"title": "Tag", "type": "object"}, strict=True).strict
        True
    """

    if TYPE_CHECKING:
        # A class or a union of classes types the strategy; a dict schema is Any.

        @overload
        def __init__(
            self, schema: TypeForm[SchemaT], **options: Unpack[_ProviderOptions]
        ) -> None: ...
        @overload
        def __init__(
            self: ProviderStrategy[Any],
            schema: dict[str, Any] | Sequence[Any],
            **options: Unpack[_ProviderOptions],
        ) -> None: ...
        def __init__(self, schema: Any, **options: Any) -> None: ...

    name: ClassVar[StrategyName] = "provider"
    behaviour: ClassVar[Behaviour] = Behaviour(
        answers_in_tool_call=False, native_schema=True, optional_setting=None
    )
    schema: SchemaInput[SchemaT]
    """The output schema: a model class, dataclass, TypedDict, dict or a Union of them."""
    _: KW_ONLY
    strict: bool | None = None
    """Ask the provider for strict schema adherence, rewriting the schema into its
    strict dialect; None leaves the provider's default."""


@dataclass(frozen=True, slots=True)
class PromptedStrategy(_Options, Generic[SchemaT]):
    """Describe the schema in the system prompt and parse the reply leniently.

    For models with neither native structured output nor tool calling.

    Examples:
        >>> PromptedStrategy({"title": "Tag", "type": "object"}, json_mode=True).json_mode
        True
    """

    if TYPE_CHECKING:
        # A class or a union of classes types the strategy; a dict schema is Any.

        @overload
        def __init__(
            self, schema: TypeForm[SchemaT], **options: Unpack[_PromptedOptions]
        ) -> None: ...
        @overload
        def __init__(
            self: PromptedStrategy[Any],
            schema: dict[str, Any] | Sequence[Any],
            **options: Unpack[_PromptedOptions],
        ) -> None: ...
        def __init__(self, schema: Any, **options: Any) -> None: ...

    name: ClassVar[StrategyName] = "prompted"
    behaviour: ClassVar[Behaviour] = Behaviour(
        answers_in_tool_call=False, native_schema=False, optional_setting="json_mode"
    )
    schema: SchemaInput[SchemaT]
    """The output schema: a model class, dataclass, TypedDict, dict or a Union of them."""
    _: KW_ONLY
    json_mode: bool = False
    """Also ask for the provider's JSON mode (`{"type": "json_object"}`)."""


@dataclass(frozen=True, slots=True)
class AutoStrategy(_Options, Generic[SchemaT]):
    """Pick provider, tool or prompted output from what the model supports.

    Provider output when the model's profile (or its name) says it has native
    structured output, else tools when it can call tools, else a prompt. When the
    provider rejects a request at run time, the next strategy is tried in the same
    run and remembered for that model.

    Examples:
        >>> AutoStrategy({"title": "Tag", "type": "object"}).order
        ('provider', 'tool', 'prompted')
    """

    if TYPE_CHECKING:
        # A class or a union of classes types the strategy; a dict schema is Any.

        @overload
        def __init__(self, schema: TypeForm[SchemaT], **options: Unpack[_AutoOptions]) -> None: ...
        @overload
        def __init__(
            self: AutoStrategy[Any],
            schema: dict[str, Any] | Sequence[Any],
            **options: Unpack[_AutoOptions],
        ) -> None: ...
        def __init__(self, schema: Any, **options: Any) -> None: ...

    name: ClassVar[Literal["auto"]] = "auto"
    # The order is what `candidates` gives; the other options are read by the
    # strategy that is picked.
    schema: SchemaInput[SchemaT]
    """The output schema: a model class, dataclass, TypedDict, dict or a Union of them."""
    _: KW_ONLY
    strict: bool | None = None
    """Passed to the provider strategy when it is chosen."""
    tool_message_content: str | None = None
    """Passed to the tool strategy when it is chosen."""
    json_mode: bool = False
    """Passed to the prompted strategy when it is chosen."""
    order: tuple[StrategyName, ...] = ("provider", "tool", "prompted")
    """Preference order among the strategies the model supports."""

    def __post_init__(self) -> None:
        _Options.__post_init__(self)
        unknown = set(self.order) - set(ANSWERING)
        if unknown or not self.order:
            raise UserError(f"order must name provider, tool or prompted; got {self.order!r}")

    @property
    def candidates(self) -> tuple[StrategyName, ...]:
        """The strategies a run may use, in order of preference."""
        return self.order

    @classmethod
    def from_profile(
        cls,
        schema: Any,
        profile: str | os.PathLike[str] | Mapping[str, Any],
        **options: Any,
    ) -> AutoStrategy[Any]:
        """An `AutoStrategy` that prefers what `structx eval` measured best for a model.

        Args:
            schema: The output schema, as for `AutoStrategy`.
            profile: The file `structx eval --save-profile` wrote, or its JSON object.
            **options: Any other `AutoStrategy` option, such as `max_retries`.

        Raises:
            StrategyProfileError: When the profile cannot be read (a `UserError`).

        Examples:
            >>> profile = {"format": "structx-strategy-profile/1",
            ...            "order": ["prompted", "tool"], "json_mode": True}
            >>> strategy = AutoStrategy.from_profile({"title": "Tag", "type": "object"}, profile)
            >>> strategy.order, strategy.json_mode
            (('prompted', 'tool'), True)
        """
        from langchain_structx._models.profile import read_profile

        measured = read_profile(profile)
        order = cast("tuple[StrategyName, ...]", measured.order)
        return cls(schema, order=order, json_mode=measured.json_mode, **options)


Strategy: TypeAlias = (
    "ToolStrategy[Any] | ProviderStrategy[Any] | PromptedStrategy[Any] | AutoStrategy[Any]"
)
"""Any of the four strategies."""

AnyStrategy: TypeAlias = (
    "ToolStrategy[SchemaT] | ProviderStrategy[SchemaT] | PromptedStrategy[SchemaT]"
    " | AutoStrategy[SchemaT] | lc.ToolStrategy[SchemaT] | lc.ProviderStrategy[SchemaT]"
    " | lc.AutoStrategy[SchemaT]"
)
"""A strategy object, ours or LangChain's, typed by its schema. With a bare schema
(`TypeForm[SchemaT]`, or a dict for Any), this is what every face accepts."""

STRATEGIES: Mapping[str, type[Any]] = {
    cls.name: cls for cls in (AutoStrategy, ProviderStrategy, ToolStrategy, PromptedStrategy)
}
"""Every strategy class by its name: the one registry the CLI, the server graphs
and the plan builder read."""

_BEHAVIOURS: Mapping[str, Behaviour] = {
    cls.name: cls.behaviour for cls in (ProviderStrategy, ToolStrategy, PromptedStrategy)
}

__all__ = (
    "AnyStrategy",
    "AutoStrategy",
    "ErrorContext",
    "ErrorHandler",
    "HandleErrors",
    "PromptedStrategy",
    "ProviderStrategy",
    "SchemaInput",
    "Strategy",
    "StrategyName",
    "ToolStrategy",
)
