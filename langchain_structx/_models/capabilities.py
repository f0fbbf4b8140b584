"""What a model can do, what its provider rejected, and what we remember of it.

`AutoStrategy` reads the model's profile (and, failing that, its name) to order
the strategies. When a provider rejects a request at run time, the next strategy
is tried in the same run. A rejection that is about our structured-output
request itself (not a user's tool, not a server error) is also remembered, per
model identity, in the `FallbackMemory` of the agent or node that saw it, for
`FALLBACK_TTL_SECONDS`, so its later runs skip the round trip. The memory is
guarded by a lock: agents are run from many threads.

A strategy whose replies keep failing in a way that says the route itself does
not work on this model (`route_broken`: no tool call at all, or prose where a
native JSON schema was asked for) is given up the same way, within the retry
budget, and remembered like a rejection.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from langchain.agents import factory as _langchain_factory
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableBinding, ensure_config

from langchain_structx._models.identity import client_setup as client_setup
from langchain_structx._models.identity import model_identity as model_identity
from langchain_structx._models.rejections import finished_reply as finished_reply
from langchain_structx._models.rejections import is_lasting as is_lasting
from langchain_structx._models.rejections import is_model_wide as is_model_wide
from langchain_structx._models.rejections import is_rejection as is_rejection
from langchain_structx._models.rejections import refuses_tool_choice as refuses_tool_choice
from langchain_structx._models.rejections import refuses_user_tool as refuses_user_tool
from langchain_structx.dialects import Dialect
from langchain_structx.errors import FailureKind
from langchain_structx.strategies import ANSWERING, Setting, StrategyName

try:
    from langchain.chat_models.base import _ConfigurableModel
except ImportError:  # pragma: no cover - a LangChain without it has no such models
    CONFIGURABLE: tuple[type, ...] = ()
else:
    CONFIGURABLE = (_ConfigurableModel,)
"""LangChain's configurable model (`init_chat_model(..., configurable_fields=...)`)."""


def chosen_model(model: Any) -> Any:
    """The model whose capabilities and identity count for the current call.

    LangChain's configurable model builds its chat model at each call from the
    run's config: its class names no provider, and each attribute read on it
    builds another model. So it is built once here, under the current run's
    config, as LangChain builds it for the call, and read through its bindings.
    Any other model is returned as it is; so is a configurable one that cannot
    be built, whose error LangChain raises at the call itself.
    """
    if not _is_configurable(model.__class__):
        return model
    try:
        built = model._model(ensure_config())
    except Exception:  # noqa: BLE001 - raised again, as LangChain's, by the call
        return model
    while isinstance(built, RunnableBinding):
        built = built.bound
    return built


@functools.lru_cache(maxsize=256)
def _is_configurable(cls: type) -> bool:
    # From the class, once: `isinstance` against LangChain's Runnable classes goes
    # through the ABC machinery, and this runs before every model call.
    return issubclass(cls, CONFIGURABLE)


def tool_names(tools: Iterable[Any]) -> frozenset[str]:
    """Names of tools given as `BaseTool`s, OpenAI-format dicts or functions.

    Examples:
        >>> def search(query: str) -> str: ...
        >>> sorted(tool_names([search, {"type": "function", "function": {"name": "f"}}]))
        ['f', 'search']
    """
    found: set[str] = set()
    for tool in tools:
        if isinstance(tool, dict):
            name = (tool.get("function") or {}).get("name") or tool.get("name")
        else:
            name = getattr(tool, "name", None) or getattr(tool, "__name__", None)
        if isinstance(name, str):
            found.add(name)
    return frozenset(found)


def supported_strategies(model: Any, tools: Sequence[Any] = ()) -> frozenset[StrategyName]:
    """The strategies the model's profile (or name) says it supports.

    Native output follows LangChain's own rule (profile, known model names, and
    the exception for models that cannot combine it with tools), looked up at
    call time so that it stays in step with the installed LangChain, except
    that a profile saying `structured_output: False` (or `tool_calling: False`)
    is the user's word and beats any rule based on the model's name.
    """
    profile = getattr(model, "profile", None) or {}
    found: set[StrategyName] = {"prompted"}
    if _provider_supported(model, tools):
        found.add("provider")
    tool_calling = profile.get("tool_calling")
    if tool_calling or (tool_calling is None and _overrides_bind_tools(model)):
        found.add("tool")
    return frozenset(found)


def _provider_supported(model: Any, tools: Sequence[Any]) -> bool:
    profile = getattr(model, "profile", None) or {}
    if profile.get("structured_output") is False:
        # LangChain falls through to its model-name patterns here, so a local
        # server behind ChatOpenAI(model="gpt-...") would be sent json_schema.
        return False
    check = getattr(_langchain_factory, "_supports_provider_strategy", None)
    if check is not None and isinstance(model, BaseChatModel):
        return bool(check(model, tools=list(tools)))
    return bool(profile.get("structured_output"))


def _overrides_bind_tools(model: Any) -> bool:
    method = getattr(type(model), "bind_tools", None)
    return method is not None and method is not BaseChatModel.bind_tools


_STRICT_DIALECTS: dict[str, Dialect] = {
    "ChatOpenAI": "openai",
    "AzureChatOpenAI": "openai",
    "ChatXAI": "openai",
    "ChatAnthropic": "anthropic",
    "ChatAnthropicVertex": "anthropic",
    "ChatGoogleGenerativeAI": "gemini",
    "ChatVertexAI": "gemini",
}


def model_dialect(model: Any) -> Dialect | None:
    """The strict structured-output dialect of a model's provider, if it has one.

    Examples:
        >>> class ChatAnthropic: ...
        >>> model_dialect(ChatAnthropic())
        'anthropic'
    """
    return _dialect_of_class(model.__class__)


@functools.lru_cache(maxsize=256)
def _dialect_of_class(cls: type) -> Dialect | None:
    for base in cls.__mro__:
        if base.__name__ in _STRICT_DIALECTS:
            return _STRICT_DIALECTS[base.__name__]
    return None


FALLBACK_TTL_SECONDS = 3600.0
"""How long a remembered rejection holds before the preferred strategy is tried again."""

_SETTING = "setting:"
_FACT = "fact:"

FALLBACK_MAX_MODELS = 1024
"""Most model identities one memory holds; the oldest entry is dropped past it."""


FALLBACK_MAX_ENTRIES = 256
"""Most rejections and settings one memory holds for one model (many schemas may
each have their own); the oldest is dropped past it."""

_FOR_SCHEMA = "@"
"""Joins a strategy and the key of the one schema it was rejected for."""


class FallbackMemory:
    """Strategies each model identity has rejected, shared across threads.

    It also keeps the settings a model refused on a route that works without
    them (`Setting`), so later runs ask without them from the first request.
    Every agent and node has its own memory; pass one memory to several of them
    (`StructuredOutputMiddleware(..., fallback_memory=memory)`) to share what
    they learn. Entries expire after `ttl_seconds`, so a provider that gains a
    feature, or a passing fault, is not avoided for ever.

    Args:
        ttl_seconds: How long a rejection is remembered.
        clock: Monotonic time source (tests pass a fake one).

    Examples:
        >>> memory = FallbackMemory()
        >>> memory.remember("m", "provider")
        >>> memory.rejected("m")
        frozenset({'provider'})
    """

    def __init__(
        self,
        *,
        ttl_seconds: float = FALLBACK_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float)):
            raise TypeError(f"ttl_seconds must be a number, got {ttl_seconds!r}")
        if not ttl_seconds > 0:
            raise ValueError(f"ttl_seconds must be positive, got {ttl_seconds!r}")
        self.ttl_seconds = float(ttl_seconds)
        self._clock = clock
        self._lock = threading.Lock()
        # Per model: strategy names and `setting:`-prefixed settings, each with
        # the time it expires.
        self._rejected: dict[str, dict[str, float]] = {}
        self._holds_settings = False

    @property
    def holds_settings(self) -> bool:
        """Whether any setting was ever remembered: a run looks them up only then."""
        return self._holds_settings

    def rejected(self, key: str, schema: str | None = None) -> frozenset[StrategyName]:
        """Strategies rejected for `key` and not yet expired.

        Args:
            key: The model's identity.
            schema: Only count rejections remembered for this schema key (and
                those that hold for every schema); None counts them all.

        Examples:
            >>> memory = FallbackMemory()
            >>> memory.remember("m", "provider", schema="s1")
            >>> memory.rejected("m"), memory.rejected("m", "s1"), memory.rejected("m", "s2")
            (frozenset({'provider'}), frozenset({'provider'}), frozenset())
        """
        found: set[StrategyName] = set()
        for name in self._live(key):
            strategy, _, scope = name.partition(_FOR_SCHEMA)
            if strategy in ANSWERING and (not scope or schema is None or scope == schema):
                found.add(strategy)
        return frozenset(found)

    def remember(self, key: str, strategy: StrategyName, *, schema: str = "") -> None:
        """Record that the model `key` rejected `strategy` (for one schema key, if given)."""
        self._note(key, f"{strategy}{_FOR_SCHEMA}{schema}" if schema else strategy)

    def refused_settings(self, key: str, setup: str = "") -> frozenset[Setting]:
        """Settings the model `key` refused, not yet expired, for clients set up as `setup`.

        `setup` tells apart clients of one model whose thinking or reasoning
        settings differ (`client_setup`): one may refuse what the other takes.

        Examples:
            >>> memory = FallbackMemory()
            >>> memory.remember_setting("m", "json_mode")
            >>> memory.refused_settings("m"), memory.rejected("m")
            (frozenset({'json_mode'}), frozenset())
            >>> memory.remember_setting("m", "tool_choice", setup="thinks")
            >>> memory.refused_settings("m", "thinks"), memory.refused_settings("m")
            (frozenset({'tool_choice'}), frozenset({'json_mode'}))
        """
        prefix = f"{_SETTING}{setup}/"
        found = (s.removeprefix(prefix) for s in self._live(key) if s.startswith(prefix))
        return frozenset(cast("Setting", s) for s in found)

    def remember_setting(self, key: str, setting: Setting, setup: str = "") -> None:
        """Record that the model `key`, set up as `setup`, refused `setting`."""
        self._holds_settings = True
        self._note(key, f"{_SETTING}{setup}/{setting}")

    def fact(self, key: str, topic: str) -> str | None:
        """What was last learnt of `topic` for the model `key`, if not yet expired.

        Facts are what a run finds out about the server behind a model (which
        serving engine it is, whether its constrained decoding was seen
        honoured), kept so that later runs need not find out again.

        Examples:
            >>> memory = FallbackMemory()
            >>> memory.remember_fact("m", "engine", "vllm")
            >>> memory.fact("m", "engine"), memory.fact("m", "other"), memory.rejected("m")
            ('vllm', None, frozenset())
        """
        prefix = f"{_FACT}{topic}="
        found = [s.removeprefix(prefix) for s in self._live(key) if s.startswith(prefix)]
        return found[-1] if found else None

    def remember_fact(self, key: str, topic: str, value: str) -> None:
        """Record `value` as what is known of `topic` for the model `key`."""
        self._note(key, f"{_FACT}{topic}={value}")

    def _live(self, key: str) -> list[str]:
        now = self._clock()
        with self._lock:
            return [s for s, until in self._rejected.get(key, {}).items() if until > now]

    def _note(self, key: str, name: str) -> None:
        until = self._clock() + self.ttl_seconds
        with self._lock:
            entry = self._rejected.pop(key, {})
            entry.pop(name, None)
            entry[name] = until  # re-inserted, as the key is: dicts keep recency order
            while len(entry) > FALLBACK_MAX_ENTRIES:
                del entry[next(iter(entry))]
            self._rejected[key] = entry
            while len(self._rejected) > FALLBACK_MAX_MODELS:
                del self._rejected[next(iter(self._rejected))]

    def forget(self, key: str | None = None) -> None:
        """Forget one model's rejections and settings, or every model's when `key` is None."""
        with self._lock:
            if key is None:
                self._rejected.clear()
            else:
                self._rejected.pop(key, None)


def auto_order(
    model: Any,
    preferred: tuple[StrategyName, ...],
    memory: FallbackMemory,
    tools: Sequence[Any] = (),
    schema_key: str | None = None,
) -> tuple[StrategyName, ...]:
    """Strategies to try for `model`, best first, skipping remembered rejections.

    `schema_key` also skips what the model rejected for that one schema.
    """
    usable = supported_strategies(model, tools)
    rejected = memory.rejected(model_identity(model), schema_key)
    order = tuple(s for s in preferred if s in usable and s not in rejected)
    return order or ("prompted",)


ROUTE_STRIKES = 2
"""Consecutive route failures of one strategy after which AutoStrategy moves on."""

ROUTE_FAILURES: dict[StrategyName, frozenset[FailureKind]] = {
    # No tool call: the model writes its call as prose (a server that ignores
    # `tool_choice`, a chat template that cannot express tools).
    "tool": frozenset({"no_output"}),
    # Nothing, or no JSON, despite a native schema: the server does not enforce it.
    "provider": frozenset({"no_output", "parse"}),
}
"""Failure kinds that say the route, not the content, is broken. A reply that
is JSON but breaks the schema is a content mistake: feedback fixes those."""


def route_broken(
    strategy: StrategyName,
    outcomes: Sequence[tuple[StrategyName, str]],
    alternatives: int,
    strikes: int = ROUTE_STRIKES,
) -> bool:
    """Whether AutoStrategy should give up `strategy` for the next one.

    Args:
        strategy: The strategy just tried.
        outcomes: This run's failed attempts, oldest first, as (strategy, kind).
        alternatives: How many strategies are left after this one.
        strikes: How many route failures in a row it takes.

    Returns:
        True when the last `strikes` failures were all `strategy`'s, all of a
        kind that says its route is broken, and another strategy is left.

    Examples:
        >>> route_broken("tool", [("tool", "no_output"), ("tool", "no_output")], 1)
        True
        >>> route_broken("tool", [("tool", "no_output"), ("tool", "validation")], 1)
        False
        >>> route_broken("tool", [("tool", "no_output"), ("tool", "no_output")], 0)
        False
    """
    recent = outcomes[-strikes:] if strikes > 0 else ()
    kinds = ROUTE_FAILURES.get(strategy, frozenset())
    return (
        alternatives > 0
        and strikes > 0
        and len(recent) == strikes
        and all(name == strategy and kind in kinds for name, kind in recent)
    )
