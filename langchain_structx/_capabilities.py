"""What a model can do, what its provider rejected, and what we remember of it.

`AutoStrategy` reads the model's profile (and, failing that, its name) to order
the strategies. When a provider rejects a request at run time, the next strategy
is tried in the same run. A rejection that is about our structured-output
request itself (not a user's tool, not a server error) is also remembered, per
model identity, in the `FallbackMemory` of the agent or node that saw it, for
`FALLBACK_TTL_SECONDS`, so its later runs skip the round trip. The memory is
guarded by a lock: agents are run from many threads.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain.agents import factory as _langchain_factory
from langchain_core.language_models import BaseChatModel

from langchain_structx.dialects import Dialect
from langchain_structx.strategies import StrategyName

_REJECTION_WORDS = (
    "output_config",
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


# Words that place a 400 on our structured-output request itself, so that the
# rejection holds for every later run of the same model.
_LASTING_WORDS = (
    "output_config",
    "response_format",
    "response format",
    "json_schema",
    "json schema",
    "json_object",
    "structured output",
    "json mode",
    "tool_choice",
    "tool choice",
)

_CREDENTIAL_ATTRS = (
    "openai_api_key",
    "anthropic_api_key",
    "google_api_key",
    "api_key",
    "xai_api_key",
)


def model_identity(model: Any) -> str:
    """A stable identity for a model: its class, name, endpoint and credentials.

    Credentials are reduced to a short hash, so two tenants' clients of the same
    endpoint stay apart without the secret being stored.

    Examples:
        >>> class M:
        ...     model_name = "m1"
        >>> model_identity(M())
        'M:m1:'
    """
    name = _first_attr(model, ("model_name", "model", "model_id", "deployment_name"))
    endpoint = _first_attr(model, ("openai_api_base", "base_url", "endpoint", "api_base"))
    identity = f"{type(model).__name__}:{name}:{endpoint}"
    secret = _credential(model)
    if secret is None:
        return identity
    digest = hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()[:16]
    return f"{identity}:key-{digest}"


def _credential(model: Any) -> str | None:
    for attr in _CREDENTIAL_ATTRS:
        value = getattr(model, attr, None)
        reveal = getattr(value, "get_secret_value", None)
        if callable(reveal):
            value = reveal()
        if isinstance(value, str) and value:
            return value
    return None


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


def is_rejection(
    error: BaseException, strategy: StrategyName, user_tools: frozenset[str] = frozenset()
) -> bool:
    """Whether `error` means the provider refused the request for `strategy`.

    Rejections are: `NotImplementedError` (no tool or format support), an HTTP
    400/422 (on the error or one it was raised from) whose message or body
    names the response format, output config, schema or tools, an HTTP 500 to a
    native-format request (llama.cpp's server answers an unsupported format so),
    and Workers AI's "JSON Mode couldn't be met". A 400 that names one of the
    user's own tools is about that tool: asking another way would not help.
    """
    if isinstance(error, NotImplementedError):
        return True
    text = error_text(error)
    lowered = text.lower()
    if "json mode couldn't be met" in lowered:
        return True
    status = _status(error)
    if status in (400, 422):
        named = any(word in lowered for word in _REJECTION_WORDS)
        return named and not _names_any(text, user_tools)
    return status == 500 and strategy == "provider"


def is_lasting(
    error: BaseException, ours: frozenset[str], user_tools: frozenset[str] = frozenset()
) -> bool:
    """Whether a rejection will hold for later runs, so it is worth remembering.

    Only a refusal of our own request is: a missing integration
    (`NotImplementedError`), or a 400/422 naming our response format, JSON
    mode, tool choice or one of our structured tools `ours`, and none of the
    user's tools. A server error (5xx) may pass, so it is never remembered.
    """
    if isinstance(error, NotImplementedError):
        return True
    text = error_text(error)
    lowered = text.lower()
    status = _status(error)
    if status is not None and status >= 500:
        return False
    if "json mode couldn't be met" in lowered:
        return True
    if status not in (400, 422) or _names_any(text, user_tools):
        return False
    return any(word in lowered for word in _LASTING_WORDS) or _names_any(text, ours)


def _names_any(text: str, names: frozenset[str]) -> bool:
    # Whole names only: a tool called "a" must not match every message.
    return any(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) for name in names if name)


_MAX_CHAIN = 4
_MAX_BODY_CHARS = 4_000


def _chain(error: BaseException) -> list[BaseException]:
    """The error and the errors it was raised from, a few links deep.

    Clients wrap the HTTP error (langchain-google-genai puts the 400 on the
    cause of its own exception), so status and message are looked for along it.
    """
    found = [error]
    while len(found) < _MAX_CHAIN:
        cause = found[-1].__cause__ or found[-1].__context__
        if cause is None or cause in found:
            break
        found.append(cause)
    return found


def error_text(error: BaseException) -> str:
    """What an error says: its message, its causes' and the HTTP body it carries.

    An `httpx.HTTPStatusError` says only the status and URL; the provider's
    reason is in the response body, read here when it was read off the wire.

    Examples:
        >>> try:
        ...     try:
        ...         raise ValueError("400 response_format is not supported")
        ...     except ValueError as inner:
        ...         raise RuntimeError("model error") from inner
        ... except RuntimeError as outer:
        ...     error_text(outer)
        'model error | 400 response_format is not supported'
    """
    parts: list[str] = []
    for link in _chain(error):
        parts.append(str(link))
        body = _body(link)
        if body and body not in parts[-1]:
            parts.append(body)
    return " | ".join(p for p in parts if p)


def _body(error: BaseException) -> str:
    response = getattr(error, "response", None)
    try:
        text = getattr(response, "text", None)
    except Exception:  # noqa: BLE001 - a streamed body that was never read
        return ""
    return text[:_MAX_BODY_CHARS] if isinstance(text, str) else ""


def _status(error: BaseException) -> int | None:
    for link in _chain(error):
        status = getattr(link, "status_code", None)
        if status is None:
            status = getattr(getattr(link, "response", None), "status_code", None)
        if isinstance(status, int):
            return status
    return None


def finished_reply(error: BaseException) -> Any:
    """The reply an SDK exception stands for, as an `AIMessage`, or None.

    The `openai` SDK parses a `response_format` answer itself and raises
    `LengthFinishReasonError` / `ContentFilterFinishReasonError` instead of
    returning it; the completion is on the exception. As a message with its
    finish reason, it takes the same path as any cut-off or filtered answer.
    """
    names = {cls.__name__ for cls in type(error).__mro__}
    if not names & {"LengthFinishReasonError", "ContentFilterFinishReasonError"}:
        return None
    from langchain_core.messages import AIMessage

    reason = "length" if "LengthFinishReasonError" in names else "content_filter"
    completion = getattr(error, "completion", None)
    choices = getattr(completion, "choices", None) or [None]
    sent = getattr(choices[0], "message", None)
    refusal = getattr(sent, "refusal", None)
    kwargs = {"refusal": refusal} if refusal else {}
    return AIMessage(
        content=getattr(sent, "content", None) or "",
        additional_kwargs=kwargs,
        response_metadata={"finish_reason": reason},
        usage_metadata=_usage(getattr(completion, "usage", None)),
    )


def _usage(usage: Any) -> Any:
    if usage is None:
        return None
    tokens = [getattr(usage, k, 0) or 0 for k in ("prompt_tokens", "completion_tokens")]
    return {"input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": sum(tokens)}


FALLBACK_TTL_SECONDS = 3600.0
"""How long a remembered rejection holds before the preferred strategy is tried again."""

FALLBACK_MAX_MODELS = 1024
"""Most model identities one memory holds; the oldest entry is dropped past it."""


class FallbackMemory:
    """Strategies each model identity has rejected, shared across threads.

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
        self._rejected: dict[str, dict[StrategyName, float]] = {}

    def rejected(self, key: str) -> frozenset[StrategyName]:
        """Strategies rejected for `key` and not yet expired."""
        now = self._clock()
        with self._lock:
            found = self._rejected.get(key, {})
            return frozenset(s for s, until in found.items() if until > now)

    def remember(self, key: str, strategy: StrategyName) -> None:
        """Record that the model `key` rejected `strategy`."""
        until = self._clock() + self.ttl_seconds
        with self._lock:
            entry = self._rejected.pop(key, {})
            entry[strategy] = until
            self._rejected[key] = entry  # re-inserted: the dict keeps recency order
            while len(self._rejected) > FALLBACK_MAX_MODELS:
                del self._rejected[next(iter(self._rejected))]

    def forget(self, key: str | None = None) -> None:
        """Forget one model's rejections, or every model's when `key` is None."""
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
) -> tuple[StrategyName, ...]:
    """Strategies to try for `model`, best first, skipping remembered rejections."""
    usable = supported_strategies(model, tools)
    rejected = memory.rejected(model_identity(model))
    order = tuple(s for s in preferred if s in usable and s not in rejected)
    return order or ("prompted",)
