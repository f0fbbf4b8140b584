"""From a response format to what is sent to the model for each strategy.

A `Plan` is built once per agent or node. For a given strategy it yields a
`CallSpec`: the extra tools, tool choice, model settings and system-prompt text
that ask the model for structured output. Nothing here calls a model.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_structx import _prompt
from langchain_structx._capabilities import tool_names
from langchain_structx._schema import SchemaSet, Variant, normalize
from langchain_structx.dialects import Dialect, Transformed, transform
from langchain_structx.errors import UserError
from langchain_structx.limits import DEFAULT_LIMITS, Limits
from langchain_structx.strategies import (
    AutoStrategy,
    ErrorPolicy,
    HandleErrors,
    PromptedStrategy,
    ProviderStrategy,
    StrategyName,
    ToolStrategy,
    compile_policy,
)

ENVELOPE_KIND = "kind"
ENVELOPE_DATA = "data"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallSpec:
    """What one structured-output model call adds to the caller's request.

    Attributes:
        strategy: The strategy this call runs.
        tools: Structured-output tools in OpenAI format, added to the user's tools.
        tool_choice: Tool choice to force, or None to leave the caller's.
        model_settings: Extra keyword arguments for the model (e.g. response_format).
        system_suffix: Text appended to the system prompt, or None.
        restore: Maps a strict-dialect answer back to the original shape, or None.
    """

    strategy: StrategyName
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: Any = None
    model_settings: Mapping[str, Any] = field(default_factory=dict)
    system_suffix: str | None = None
    restore: Callable[[Any], Any] | None = None
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """What a shell builds from this spec once (specs are cached per plan)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """Everything the engine needs to know about one response format.

    Attributes:
        schemas: The variants the answer may take.
        candidates: Strategies to try, in order; explicit strategies have one.
        auto: Whether the strategy was chosen automatically.
        handle_errors: The user's error policy.
        policy: The same policy, compiled once.
        max_retries: Retries allowed after the first attempt.
        coerce: Whether coercion of near-miss values is on.
        strict: Provider strict mode, or None.
        json_mode: Whether the prompted strategy also asks for JSON mode.
        tool_message_content: Fixed text for the success tool message, or None.
        limits: Bounds on the size, depth and checking time of each reply.
    """

    schemas: SchemaSet
    candidates: tuple[StrategyName, ...]
    auto: bool
    handle_errors: HandleErrors
    max_retries: int
    coerce: bool = True
    strict: bool | None = None
    json_mode: bool = False
    tool_message_content: str | None = None
    limits: Limits = DEFAULT_LIMITS
    policy: ErrorPolicy = field(default_factory=lambda: ErrorPolicy(mode="retry"))
    _dialects: dict[str, Transformed] = field(default_factory=dict, compare=False, repr=False)
    _specs: dict[str, CallSpec] = field(default_factory=dict, compare=False, repr=False)

    @property
    def tool_names(self) -> frozenset[str]:
        """Names of the artificial tools of the tool strategy."""
        return self.schemas.name_set

    def check_tools(self, tools: Sequence[Any]) -> None:
        """Refuse user tools named like a variant when the tool strategy may run.

        Such a tool would be bound twice, and its calls taken for the answer.

        Raises:
            UserError: Naming the clashing tools.
        """
        if "tool" not in self.candidates or not tools:
            return
        clash = sorted(self.tool_names & tool_names(tools))
        if clash:
            raise UserError(
                f"Tool name(s) {', '.join(clash)} clash with the structured-output "
                "variants of the same name; rename the tool(s) or the schema(s)."
            )

    def call_spec(self, strategy: StrategyName, *, dialect: Dialect | None = None) -> CallSpec:
        """Build the request pieces for `strategy`.

        Args:
            strategy: The strategy to ask with.
            dialect: For the provider strategy, the strict dialect to rewrite the
                schema into, or None to send it as it is.

        Raises:
            DialectError: When the schema cannot be expressed in `dialect`.
        """
        key = f"{strategy}:{dialect}"
        found = self._specs.get(key)
        if found is None:
            found = self._specs[key] = self._build_spec(strategy, dialect)
        return found

    def _build_spec(self, strategy: StrategyName, dialect: Dialect | None) -> CallSpec:
        if strategy == "tool":
            return CallSpec(
                strategy="tool",
                tools=tuple(_tool(v) for v in self.schemas.variants),
                tool_choice="any",
            )
        if strategy == "provider" and dialect is not None:
            strict = self.transformed(dialect)
            settings = _response_format(self.output_name(), strict.schema, strict=True)
            return CallSpec(strategy="provider", model_settings=settings, restore=strict.restore)
        if strategy == "provider":
            settings = _response_format(self.output_name(), self.output_schema(), self.strict)
            return CallSpec(strategy="provider", model_settings=settings)
        settings = {"response_format": {"type": "json_object"}} if self.json_mode else {}
        return CallSpec(
            strategy="prompted", model_settings=settings, system_suffix=self.instructions()
        )

    def instructions(self) -> str:
        """The prompted strategy's system-prompt text."""
        shapes = [(v.name, v.description, v.json_schema) for v in self.schemas.variants]
        return _prompt.instructions(shapes, envelope=self.schemas.is_union)

    def output_schema(self) -> dict[str, Any]:
        """The JSON schema of the whole answer: the variant, or the union envelope."""
        if not self.schemas.is_union:
            return self.schemas.variants[0].json_schema
        return envelope_schema(self.schemas.variants)

    def output_name(self) -> str:
        """Name sent with the provider's response format."""
        if not self.schemas.is_union:
            return self.schemas.variants[0].name
        return "_or_".join(self.schemas.names)[:64]

    def transformed(self, dialect: Dialect) -> Transformed:
        """The answer's schema rewritten for `dialect`, computed once per dialect."""
        found = self._dialects.get(dialect)
        if found is None:
            # Undeclared keys are carried where the validator keeps them: JSON
            # Schema does; Pydantic, dataclasses and TypedDicts drop them (or
            # declare `additionalProperties` themselves when they keep them).
            carry = any(v.kind == "json_schema" for v in self.schemas.variants)
            found = transform(
                self.output_schema(), dialect, limits=self.limits, carry_undeclared=carry
            )
            self._dialects[dialect] = found
        return found

    def strict_dialect(self, model_dialect: Dialect | None) -> Dialect | None:
        """The dialect to rewrite into for a model, or None for no strict mode.

        `strict=True` always rewrites (into the model's dialect, OpenAI's when it
        has none of its own); `strict=None` rewrites only under `AutoStrategy` and
        only for a model known to have a strict mode.
        """
        if self.strict:
            return model_dialect or "openai"
        if self.strict is None and self.auto:
            return model_dialect
        return None


def _response_format(name: str, schema: dict[str, Any], strict: bool | None) -> dict[str, Any]:
    # Clients that rebuild the format from the schema (ChatOpenAI.bind_tools) take
    # the name from its title, so the title carries the name we mean to send.
    json_schema: dict[str, Any] = {"name": name, "schema": {**schema, "title": name}}
    if strict:
        json_schema["strict"] = True
    return {"response_format": {"type": "json_schema", "json_schema": json_schema}}


def _tool(variant: Variant) -> dict[str, Any]:
    parameters = {k: v for k, v in variant.json_schema.items() if k not in ("title",)}
    parameters.pop("description", None)
    return {
        "type": "function",
        "function": {
            "name": variant.name,
            "description": variant.description or f"Return the answer as {variant.name}.",
            "parameters": parameters,
        },
    }


def envelope_schema(variants: tuple[Variant, ...]) -> dict[str, Any]:
    """The schema of `{"kind": <name>, "data": <variant>}` over all variants.

    Each variant's own definitions are hoisted into one `$defs`, renamed where two
    variants use the same definition name for different things.

    Examples:
        >>> from langchain_structx._schema import normalize
        >>> s = normalize([{"title": "A", "type": "object"}, {"title": "B", "type": "object"}])
        >>> envelope_schema(s.variants)["anyOf"][0]["properties"]["kind"]
        {'const': 'A'}
    """
    defs: dict[str, Any] = {}
    branches = []
    for variant in variants:
        body = _hoist(variant, defs)
        branches.append(
            {
                "type": "object",
                "properties": {ENVELOPE_KIND: {"const": variant.name}, ENVELOPE_DATA: body},
                "required": [ENVELOPE_KIND, ENVELOPE_DATA],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {"anyOf": branches}
    if defs:
        schema["$defs"] = defs
    return schema


def _hoist(variant: Variant, defs: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(variant.json_schema)
    local = {**body.pop("definitions", {}), **body.pop("$defs", {})}
    renames = _def_names(variant.name, local, defs)
    for name, sub in local.items():
        defs.setdefault(renames[name], _rewrite_refs(sub, renames))
    return _rewrite_refs(body, renames)  # type: ignore[no-any-return]


def _def_names(prefix: str, local: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, str]:
    """Where each of a variant's definitions goes in the shared `$defs`.

    A definition keeps its name only when the shared one is identical once its
    own references are renamed; since renaming one definition can change
    another that refers to it, this repeats until nothing moves (each round can
    only move names, so it ends within `len(local)` rounds).
    """
    renames = {name: name for name in local}
    taken = set(defs) | set(local)
    moved = True
    while moved:
        moved = False
        for name, sub in local.items():
            if renames[name] != name or name not in defs:
                continue
            if defs[name] != _rewrite_refs(sub, renames):
                renames[name] = _fresh(f"{prefix}__{name}", taken)
                moved = True
    return renames


def _fresh(name: str, taken: set[str]) -> str:
    found, n = name, 1
    while found in taken:
        n += 1
        found = f"{name}_{n}"
    taken.add(found)
    return found


_DEF_PREFIXES = ("#/$defs/", "#/definitions/")


def _rewrite_refs(node: Any, renames: Mapping[str, str]) -> Any:
    if isinstance(node, list):
        return [_rewrite_refs(item, renames) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _rewrite_refs(v, renames) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEF_PREFIXES):
        out["$ref"] = _renamed_ref(ref, renames)
    return out


def _renamed_ref(ref: str, renames: Mapping[str, str]) -> str:
    """`ref` pointed at the renamed definition, keeping any path inside it.

    Examples:
        >>> _renamed_ref("#/definitions/a~1b/properties/x", {"a/b": "V__a/b"})
        '#/$defs/V__a~1b/properties/x'
    """
    rest = ref.split("/", 2)[2]
    first, _, inside = rest.partition("/")
    name = _unescape(first)
    target = _escape(renames.get(name, name))
    return f"#/$defs/{target}/{inside}" if inside else f"#/$defs/{target}"


def _unescape(segment: str) -> str:
    # JSON pointer order: "~1" before "~0", so "~01" reads as "~1", not "/".
    return segment.replace("~1", "/").replace("~0", "~")


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def build_plan(response_format: Any) -> Plan:
    """Normalise anything accepted as `response_format` into a `Plan`.

    Args:
        response_format: One of our strategies, LangChain's `ToolStrategy`,
            `ProviderStrategy` or `AutoStrategy`, or a bare schema (meaning auto).

    Returns:
        The plan.

    Raises:
        UserError: When the format cannot be used.
    """
    strategy = _from_langchain(response_format)
    if not isinstance(strategy, (ToolStrategy, ProviderStrategy, PromptedStrategy, AutoStrategy)):
        strategy = AutoStrategy(strategy)
    schemas = normalize(strategy.schema)
    common: dict[str, Any] = {
        "schemas": schemas,
        "handle_errors": strategy.handle_errors,
        "max_retries": strategy.max_retries,
        "coerce": strategy.coerce,
        "limits": strategy.limits,
        "policy": compile_policy(strategy.handle_errors),
    }
    if isinstance(strategy, AutoStrategy):
        return Plan(
            candidates=strategy.order,
            auto=True,
            strict=strategy.strict,
            json_mode=strategy.json_mode,
            tool_message_content=strategy.tool_message_content,
            **common,
        )
    return Plan(candidates=(_name_of(strategy),), auto=False, **_options(strategy), **common)


def _name_of(strategy: ToolStrategy[Any] | ProviderStrategy[Any] | PromptedStrategy[Any]) -> Any:
    if isinstance(strategy, ToolStrategy):
        return "tool"
    return "provider" if isinstance(strategy, ProviderStrategy) else "prompted"


def _options(strategy: Any) -> dict[str, Any]:
    if isinstance(strategy, ToolStrategy):
        return {"tool_message_content": strategy.tool_message_content}
    if isinstance(strategy, ProviderStrategy):
        return {"strict": strategy.strict}
    return {"json_mode": strategy.json_mode}


LANGCHAIN_UNBOUNDED_RETRIES = 3
"""Retry bound given to LangChain strategy objects, which have none of their own."""


def _from_langchain(response_format: Any) -> Any:
    from langchain.agents import structured_output as lc

    if response_format is None:
        raise UserError("response_format is required for structured output")
    if isinstance(response_format, lc.ToolStrategy):
        return ToolStrategy(
            response_format.schema,
            tool_message_content=response_format.tool_message_content,
            handle_errors=response_format.handle_errors,
            max_retries=LANGCHAIN_UNBOUNDED_RETRIES,
        )
    if isinstance(response_format, lc.ProviderStrategy):
        return ProviderStrategy(response_format.schema, strict=response_format.schema_spec.strict)
    if isinstance(response_format, lc.AutoStrategy):
        return AutoStrategy(response_format.schema)
    return response_format
