"""What a model can do, what its provider rejected, and what we remember of it.

`AutoStrategy` reads the model's profile (and, failing that, its name) to order
the strategies. When a provider rejects a request at run time, the rejected
strategy is remembered per model identity for the rest of the process, so later
runs skip the round trip. The memory is guarded by a lock: agents are run from
many threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from langchain.agents import factory as _langchain_factory
from langchain_core.language_models import BaseChatModel

from langchain_structx.dialects import Dialect
from langchain_structx.strategies import StrategyName

_REJECTION_WORDS = (
    "response_format",
    "response format",
    "json_schema",
    "json schema",
    "schema",
    "structured output",
    "json mode",
    "tool_choice",
    "tools",
)


def model_identity(model: Any) -> str:
    """A stable identity for a model: its class, name and endpoint.

    Examples:
        >>> class M:
        ...     model_name = "m1"
        >>> model_identity(M())
        'M:m1:'
    """
    name = _first_attr(model, ("model_name", "model", "model_id", "deployment_name"))
    endpoint = _first_attr(model, ("openai_api_base", "base_url", "endpoint", "api_base"))
    return f"{type(model).__name__}:{name}:{endpoint}"


def _first_attr(model: Any, names: Iterable[str]) -> str:
    for name in names:
        value = getattr(model, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def supported_strategies(model: Any, tools: Sequence[Any] = ()) -> frozenset[StrategyName]:
    """The strategies the model's profile (or name) says it supports.

    Native output follows LangChain's own rule (profile, known model names, and
    the exception for models that cannot combine it with tools), looked up at
    call time so that it stays in step with the installed LangChain.
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
    check = getattr(_langchain_factory, "_supports_provider_strategy", None)
    if check is not None and isinstance(model, BaseChatModel):
        return bool(check(model, tools=list(tools)))
    profile = getattr(model, "profile", None) or {}
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
    for cls in type(model).__mro__:
        if cls.__name__ in _STRICT_DIALECTS:
            return _STRICT_DIALECTS[cls.__name__]
    return None


def is_rejection(error: BaseException, strategy: StrategyName) -> bool:
    """Whether `error` means the provider refused the request for `strategy`.

    Rejections are: `NotImplementedError` (no tool or format support), an HTTP
    400/422 that names the response format, schema or tools, an HTTP 500 to a
    native-format request (llama.cpp's server answers an unsupported format so),
    and Workers AI's "JSON Mode couldn't be met".
    """
    if isinstance(error, NotImplementedError):
        return True
    text = str(error).lower()
    if "json mode couldn't be met" in text:
        return True
    status = _status(error)
    if status in (400, 422):
        return any(word in text for word in _REJECTION_WORDS)
    return status == 500 and strategy == "provider"


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


class FallbackMemory:
    """Strategies each model identity has rejected, shared across threads.

    Examples:
        >>> memory = FallbackMemory()
        >>> memory.remember("m", "provider")
        >>> memory.rejected("m")
        frozenset({'provider'})
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rejected: dict[str, set[StrategyName]] = {}

    def rejected(self, key: str) -> frozenset[StrategyName]:
        """Strategies rejected so far for `key`."""
        with self._lock:
            return frozenset(self._rejected.get(key, ()))

    def remember(self, key: str, strategy: StrategyName) -> None:
        """Record that the model `key` rejected `strategy`."""
        with self._lock:
            self._rejected.setdefault(key, set()).add(strategy)

    def forget(self, key: str | None = None) -> None:
        """Forget one model's rejections, or every model's when `key` is None."""
        with self._lock:
            if key is None:
                self._rejected.clear()
            else:
                self._rejected.pop(key, None)


FALLBACKS = FallbackMemory()
"""The process-wide memory used by `AutoStrategy`."""


def auto_order(
    model: Any,
    preferred: tuple[StrategyName, ...],
    memory: FallbackMemory = FALLBACKS,
    tools: Sequence[Any] = (),
) -> tuple[StrategyName, ...]:
    """Strategies to try for `model`, best first, skipping remembered rejections."""
    usable = supported_strategies(model, tools)
    rejected = memory.rejected(model_identity(model))
    order = tuple(s for s in preferred if s in usable and s not in rejected)
    return order or ("prompted",)
