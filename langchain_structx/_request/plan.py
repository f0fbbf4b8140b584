"""From a response format to what is sent to the model for each strategy.

A `Plan` is built once per agent or node. For a given strategy it yields a
`CallSpec`: the extra tools, tool choice, model settings and system-prompt text
that ask the model for structured output. Nothing here calls a model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from langchain_structx import strategies as st
from langchain_structx._models.capabilities import tool_names
from langchain_structx._policy import ErrorPolicy
from langchain_structx._request import prompt as _prompt

# Re-exported: the union envelope's keys are part of what a plan produces.
from langchain_structx._request.envelope import ENVELOPE_DATA as ENVELOPE_DATA
from langchain_structx._request.envelope import ENVELOPE_KIND as ENVELOPE_KIND
from langchain_structx._request.envelope import envelope_schema, object_root
from langchain_structx._schemas.normalise import SchemaSet, Variant
from langchain_structx.dialects import Dialect, Transformed, transform, transform_for_tools
from langchain_structx.errors import UserError
from langchain_structx.limits import Limits

T = TypeVar("T")


class Restorer(Protocol):
    """Brings a value sent in another shape back to the schema's own (`Transformed`)."""

    def restore(self, value: Any) -> Any:
        """The whole value in the schema's shape."""

    def restore_partial(self, value: Any) -> Any:
        """The part of a streamed value that can be shown in the schema's shape."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallSpec:
    """What one structured-output model call adds to the caller's request.

    Attributes:
        strategy: The strategy this call runs.
        tools: Structured-output tools in OpenAI format, added to the user's tools.
        tool_choice: Tool choice to force, or None to leave the caller's.
        model_settings: Extra keyword arguments for the model (e.g. response_format).
        system_suffix: Text appended to the system prompt, or None.
        restore: Brings a strict-dialect answer (whole, or partial while it
            streams) back to the original shape, or None.
        tool_restore: Per structured tool whose parameters were rewritten (for the
            model's dialect, or to an object root), how its arguments come back
            to the variant's shape.
    """

    strategy: st.StrategyName
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: Any = None
    model_settings: Mapping[str, Any] = field(default_factory=dict)
    system_suffix: str | None = None
    restore: Restorer | None = None
    tool_restore: Mapping[str, Restorer] = field(default_factory=dict)
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """What a shell builds from this spec once (specs are cached per plan)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """Everything the engine needs to know about one response format.

    It keeps the strategy it was built from and reads the options from it; what
    it adds is what the engine builds from them once per plan: the schema in
    each strict dialect, the request pieces of each call, the prompt text. The
    options read on every attempt are copied from the (frozen) strategy into
    plain attributes when the plan is made.

    Attributes:
        strategy: The strategy object the plan was built from.
        schemas: The variants the answer may take.
        candidates: Strategies to try, in order; explicit strategies have one.
        auto: Whether the strategy is picked at run time (`AutoStrategy`).
        limits: Bounds on the size, depth and checking time of each reply.
        tool_message_content: Fixed text for the success tool message, or None.
        tool_names: Names of the artificial tools of the tool strategy.
    """

    strategy: st.Strategy
    schemas: SchemaSet = field(init=False, compare=False, repr=False)
    candidates: tuple[st.StrategyName, ...] = field(init=False, compare=False, repr=False)
    auto: bool = field(init=False, compare=False, repr=False)
    limits: Limits = field(init=False, compare=False, repr=False)
    tool_message_content: str | None = field(init=False, compare=False, repr=False)
    tool_names: frozenset[str] = field(init=False, compare=False, repr=False)
    _dialects: dict[str, Transformed] = field(default_factory=dict, compare=False, repr=False)
    _specs: dict[str, CallSpec] = field(default_factory=dict, compare=False, repr=False)
    _built: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        strategy = self.strategy
        derived = {
            "schemas": strategy.schemas,
            "candidates": strategy.candidates,
            "auto": isinstance(strategy, st.AutoStrategy),
            "limits": strategy.limits,
            "tool_message_content": getattr(strategy, "tool_message_content", None),
            "tool_names": strategy.schemas.name_set,
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    @property
    def policy(self) -> ErrorPolicy:
        """The same policy, compiled once when the strategy was built."""
        return self.strategy.policy

    @property
    def max_retries(self) -> int:
        """Retries allowed after the first attempt."""
        return self.strategy.max_retries

    @property
    def strict(self) -> bool | None:
        """Provider strict mode, or None (strategies without the option: None)."""
        return getattr(self.strategy, "strict", None)

    @property
    def json_mode(self) -> bool:
        """Whether the prompted strategy also asks for JSON mode."""
        return bool(getattr(self.strategy, "json_mode", False))

    def check_tools(self, tools: Sequence[Any]) -> None:
        """Refuse user tools named like a variant when the tool strategy may run.

        Such a tool would be bound twice, and its calls taken for the answer.

        Raises:
            UserError: Naming the clashing tools.
        """
        if not tools or not any(st.behaviour(s).answers_in_tool_call for s in self.candidates):
            return
        clash = sorted(self.tool_names & tool_names(tools))
        if clash:
            raise UserError(
                f"Tool name(s) {', '.join(clash)} clash with the structured-output "
                "variants of the same name; rename the tool(s) or the schema(s)."
            )

    def call_spec(
        self,
        strategy: st.StrategyName,
        *,
        dialect: Dialect | None = None,
        native: Dialect | None = None,
        alone: bool = False,
        json_mode: bool = True,
        forced: bool = True,
    ) -> CallSpec:
        """Build the request pieces for `strategy`.

        Args:
            strategy: The strategy to ask with.
            dialect: For the provider strategy, the strict dialect to rewrite the
                schema into, or None to send it as it is.
            native: The model's own dialect. Gemini's client rewrites tool
                parameters into its own schema type, losing what it does not
                know (`oneOf`, recursion), so they are sent in the Gemini dialect.
            alone: Whether the request carries no tools of the caller's. With
                one structured tool the tool choice then names it (see
                `tool_choice_for`); otherwise it is `"any"`.
            json_mode: For the prompted strategy, whether to ask for JSON mode
                when the plan does; False once the provider has refused it.
            forced: For the tool strategy, whether to force the tool choice;
                False where the provider refuses a forced choice (a model that
                is thinking), which leaves the choice to the model.

        Raises:
            DialectError: When the schema cannot be expressed in `dialect`, or
                as Gemini tool parameters.
        """
        does = st.behaviour(strategy)
        alone = alone and does.answers_in_tool_call
        forced = forced or not does.answers_in_tool_call
        if does.answers_in_tool_call:
            dialect = native if native == "gemini" else None
        # Anthropic has no JSON mode: its client fails on `json_object` before sending.
        json_mode = (
            json_mode
            and self.json_mode
            and does.optional_setting == "json_mode"
            and native != "anthropic"
        )
        key = f"{strategy}:{dialect}:{alone}:{json_mode}:{forced}"
        found = self._specs.get(key)
        if found is None:
            found = self._build_spec(strategy, dialect, alone, json_mode, forced)
            self._specs[key] = found
        return found

    def tool_choice_for(self, *, alone: bool) -> str:
        """The tool choice of the tool strategy.

        A request whose only tool is our one structured tool names it: servers
        that speak OpenAI's protocol (llama.cpp's, vLLM, Ollama) enforce a named
        tool with a grammar but may ignore `"required"`, and a named choice asks
        hosted providers for exactly the same thing. With tools of the caller's,
        or one tool per union variant, the model must be free to pick: `"any"`.

        Examples:
            >>> from langchain_structx.strategies import ToolStrategy
            >>> build_plan(ToolStrategy({"title": "Tag", "type": "object"})).tool_choice_for(
            ...     alone=True
            ... )
            'Tag'
        """
        if alone and len(self.schemas.variants) == 1:
            return self.schemas.variants[0].name
        return "any"

    def _build_spec(
        self,
        strategy: st.StrategyName,
        dialect: Dialect | None,
        alone: bool,
        json_mode: bool,
        forced: bool,
    ) -> CallSpec:
        does = st.behaviour(strategy)
        if does.answers_in_tool_call:
            return self._tool_spec(dialect, self.tool_choice_for(alone=alone) if forced else None)
        if does.native_schema and dialect is not None:
            strict = self.transformed(dialect)
            settings = _response_format(self.output_name(), strict.schema, strict=True)
            return CallSpec(strategy=strategy, model_settings=settings, restore=strict)
        if does.native_schema:
            settings = _response_format(self.output_name(), self.output_schema(), self.strict)
            return CallSpec(strategy=strategy, model_settings=settings)
        settings = {"response_format": {"type": "json_object"}} if json_mode else {}
        return CallSpec(
            strategy=strategy, model_settings=settings, system_suffix=self.instructions()
        )

    def _tool_spec(self, dialect: Dialect | None, choice: str | None) -> CallSpec:
        if dialect is None:
            shaped = {v.name: object_root(v.json_schema) for v in self.schemas.variants}
            return CallSpec(
                strategy="tool",
                tools=tuple(_tool(v, shaped[v.name][0]) for v in self.schemas.variants),
                tool_choice=choice,
                tool_restore={name: undo for name, (_, undo) in shaped.items() if undo},
            )
        rewritten = {v.name: self._variant_in(v, dialect) for v in self.schemas.variants}
        tools = tuple(_tool(v, rewritten[v.name].schema) for v in self.schemas.variants)
        return CallSpec(strategy="tool", tools=tools, tool_choice=choice, tool_restore=rewritten)

    def _variant_in(self, variant: Variant, dialect: Dialect) -> Transformed:
        # The client turns tool parameters into its own schema type, which has
        # no references: a recursive schema cannot travel as a tool.
        return transform_for_tools(
            variant.json_schema,
            dialect,
            limits=self.limits,
            defaults_apply=variant.origin in _DEFAULTS_APPLY,
        )

    def instructions(self) -> str:
        """The prompted strategy's system-prompt text, rendered once per plan."""
        variants, union = self.schemas.variants, self.schemas.is_union
        shapes = ((v.name, v.description, v.json_schema) for v in variants)
        return self.memo("instructions", lambda: _prompt.instructions(list(shapes), envelope=union))

    def output_schema(self) -> dict[str, Any]:
        """The JSON schema of the whole answer: the variant, or the union envelope."""
        if not self.schemas.is_union:
            return self.schemas.variants[0].json_schema
        return self.memo("envelope", lambda: envelope_schema(self.schemas.variants))

    def memo(self, key: str, build: Callable[[], T]) -> T:
        """`build()`, computed on first use and kept with the plan under `key`."""
        found = self._built.get(key)
        if found is None:
            found = self._built.setdefault(key, build())
        return cast("T", found)

    def output_name(self) -> str:
        """Name sent with the provider's response format."""
        if not self.schemas.is_union:
            return self.schemas.variants[0].name
        return "_or_".join(self.schemas.names)[:64]

    def transformed(self, dialect: Dialect) -> Transformed:
        """The answer's schema rewritten for `dialect`, computed once per dialect."""
        found = self._dialects.get(dialect)
        if found is None:
            # Objects that say nothing of other keys are closed (strict modes
            # close them). Pydantic and dataclasses fill in defaults, so an
            # absent key can be sent as its default.
            fills = all(v.origin in _DEFAULTS_APPLY for v in self.schemas.variants)
            found = transform(
                self.output_schema(), dialect, limits=self.limits, defaults_apply=fills
            )
            self._dialects[dialect] = found
        return found

    def strict_dialect(self, model_dialect: Dialect | None) -> Dialect | None:
        """The dialect to rewrite into for a model, or None for no strict mode.

        `strict=True` always rewrites (into the model's dialect, OpenAI's when it
        has none of its own); `strict=None` rewrites only under `AutoStrategy` and
        only for a model known to have a strict mode. Anthropic and Gemini have
        no lenient schema mode (their format is always enforced, within the
        same subset of JSON Schema), so their models always get their dialect.
        """
        if self.strict:
            return model_dialect or "openai"
        if (self.strict is None and self.auto) or model_dialect in _ALWAYS_STRICT:
            return model_dialect
        return None


_ALWAYS_STRICT = ("anthropic", "gemini")
_DEFAULTS_APPLY = ("pydantic", "dataclass")


def _response_format(name: str, schema: dict[str, Any], strict: bool | None) -> dict[str, Any]:
    # Clients that rebuild the format from the schema (ChatOpenAI.bind_tools) take
    # the name from its title, so the title carries the name we mean to send.
    json_schema: dict[str, Any] = {"name": name, "schema": {**schema, "title": name}}
    if strict:
        json_schema["strict"] = True
    return {"response_format": {"type": "json_schema", "json_schema": json_schema}}


def _tool(variant: Variant, schema: dict[str, Any]) -> dict[str, Any]:
    parameters = {k: v for k, v in schema.items() if k not in ("title",)}
    parameters.pop("description", None)
    return {
        "type": "function",
        "function": {
            "name": variant.name,
            "description": variant.description or f"Return the answer as {variant.name}.",
            "parameters": parameters,
        },
    }


def as_strategy(response_format: Any) -> st.Strategy:
    """Our strategy for anything accepted as a response format.

    The one place that reads a bare schema as `AutoStrategy` and turns LangChain's
    strategy objects into ours; every face goes through it.

    Raises:
        UserError: For None.
    """
    if isinstance(response_format, _OURS):
        return cast("st.Strategy", response_format)
    from langchain.agents import structured_output as lc

    if response_format is None:
        raise UserError("response_format is required for structured output")
    if isinstance(response_format, lc.ToolStrategy):
        schema: Any = response_format.schema
        return st.ToolStrategy(
            schema,
            tool_message_content=response_format.tool_message_content,
            handle_errors=response_format.handle_errors,
            max_retries=LANGCHAIN_RETRY_BOUND,
        )
    if isinstance(response_format, lc.ProviderStrategy):
        return st.ProviderStrategy(
            response_format.schema, strict=response_format.schema_spec.strict
        )
    if isinstance(response_format, lc.AutoStrategy):
        return st.AutoStrategy(response_format.schema)
    return st.AutoStrategy(response_format)


_OURS = tuple(st.STRATEGIES.values())

LANGCHAIN_RETRY_BOUND = 3
"""Retries given to LangChain's strategy objects: LangChain sets no bound of its own."""


def build_plan(response_format: Any) -> Plan:
    """Normalise anything accepted as `response_format` into a `Plan`.

    Args:
        response_format: One of our strategies, LangChain's `ToolStrategy`,
            `ProviderStrategy` or `AutoStrategy`, or a bare schema (meaning auto).

    Returns:
        The plan, which keeps the strategy object it was built from.

    Raises:
        UserError: When the format cannot be used.
    """
    return Plan(strategy=as_strategy(response_format))
