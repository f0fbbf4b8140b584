"""Reading a provider's error: is it a rejection of our request, and does it last?

When a provider refuses a structured-output request (an HTTP 400 naming the
response format, the tools or the tool choice), AutoStrategy falls back to the
next strategy; when the refusal is about the request itself rather than a user's
tool or a passing server fault, it is remembered. The SDKs and the LangChain
clients wrap these errors differently, so the checks read the whole chain of
causes, the status and the body. Some SDK errors carry a finished reply
(truncated or filtered) instead: `finished_reply` recovers it.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_structx.strategies import StrategyName, behaviour

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

# A model's own word that it cannot take tools at all (Ollama: "... does not support
# tools"; Workers AI: "... does not support 'tools'"). It lasts for the tool route
# only: a refusal of tools that come with some condition ("tools with streaming")
# is left to the wording above.
_NO_TOOLS = re.compile(
    r"\b(?:does not|doesn't|do not|don't|cannot|can't) support ['\"`]?tools\b['\"`]?"
    r"(?!\s+(?:with|when|in|for|and|on|if|while)\b)"
    r"|\btools (?:are|is) not supported\b(?!\s+(?:with|when|in|for|and|on|if|while)\b)",
    re.IGNORECASE,
)


def is_rejection(
    error: BaseException, strategy: StrategyName, user_tools: frozenset[str] = frozenset()
) -> bool:
    """Whether `error` means the provider refused the request for `strategy`.

    Rejections are: `NotImplementedError` (no tool or format support), an HTTP
    400/422 (on the error or one it was raised from) whose message or body
    names the response format, output config, schema or tools, an HTTP 500 to a
    native-format request (llama.cpp's server answers an unsupported format so),
    and Workers AI's "JSON Mode couldn't be met". A 400 that names one of the
    user's own tools is about that tool: asking another way would not help,
    except on the provider route, where some clients change the caller's tools
    (langchain-openai makes every tool strict beside a response format on Chat
    Completions, and strict mode refuses optional arguments). Nor is a
    conversation too long for the model (LangChain's `ContextOverflowError`,
    which the official clients raise), whatever its wording names: it goes out
    unchanged, for the caller or a middleware that shortens the history.
    """
    if isinstance(error, NotImplementedError):
        return True
    if _overflows(error):
        return False
    text = error_text(error)
    lowered = text.lower()
    if "json mode couldn't be met" in lowered:
        return True
    status = _status(error)
    if status in (400, 422):
        named = any(word in lowered for word in _REJECTION_WORDS)
        return named and (behaviour(strategy).native_schema or not _names_any(text, user_tools))
    return status == 500 and behaviour(strategy).native_schema


def refuses_user_tool(error: BaseException, user_tools: frozenset[str]) -> bool:
    """Whether `error` is a 400 or 422 that names one of the caller's tools.

    Examples:
        >>> class Refused(Exception):
        ...     status_code = 400
        >>> mine = frozenset({"lookup"})
        >>> refuses_user_tool(Refused("Invalid schema for function 'lookup'"), mine)
        True
        >>> refuses_user_tool(Refused("Invalid schema for function 'lookups'"), mine)
        False
    """
    return _status(error) in (400, 422) and _names_any(error_text(error), user_tools)


def refuses_tool_choice(error: BaseException, user_tools: frozenset[str] = frozenset()) -> bool:
    """Whether `error` refuses the tool route's forced tool choice, not its tools.

    A model that is thinking takes no forced tool choice (Anthropic: "Thinking may
    not be enabled when tool_choice forces tool use"; Qwen and DeepSeek servers
    say the same of their thinking modes); the route works when the model chooses.

    Examples:
        >>> class Refused(Exception):
        ...     status_code = 400
        >>> thinking = "Thinking may not be enabled when tool_choice forces tool use."
        >>> refuses_tool_choice(Refused(thinking))
        True
        >>> refuses_tool_choice(Refused("tools.0.input_schema: type must be object"))
        False
    """
    lowered = error_text(error).lower()
    named = "tool_choice" in lowered or "tool choice" in lowered
    return named and is_rejection(error, "tool", user_tools)


def is_lasting(
    error: BaseException,
    ours: frozenset[str],
    user_tools: frozenset[str] = frozenset(),
    strategy: StrategyName | None = None,
) -> bool:
    """Whether a rejection will hold for later runs, so it is worth remembering.

    Only a refusal of our own request is: a missing integration
    (`NotImplementedError`), or a 400/422 naming our response format, JSON
    mode, tool choice or one of our structured tools `ours`, and none of the
    user's tools. A refusal of the tool route by a model that says it takes no
    tools at all is one too. A server error (5xx) may pass, so it is never
    remembered.

    Examples:
        >>> class Refused(Exception):
        ...     status_code = 400
        >>> no_tools = Refused("llama2:latest does not support tools")
        >>> is_lasting(no_tools, frozenset({"Contact"}), strategy="tool")
        True
        >>> is_lasting(no_tools, frozenset({"Contact"}), strategy="provider")
        False
        >>> conditional = Refused("this model does not support tools with streaming")
        >>> is_lasting(conditional, frozenset(), strategy="tool")
        False
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
    if strategy is not None and behaviour(strategy).answers_in_tool_call and _NO_TOOLS.search(text):
        return True
    return any(word in lowered for word in _LASTING_WORDS) or _names_any(text, ours)


def is_model_wide(error: BaseException, strategy: StrategyName | None = None) -> bool:
    """Whether a lasting rejection holds for the model whatever the schema.

    Only a missing integration and a model that takes no tools at all are; any
    other refusal may be about the one schema sent (a keyword the provider's
    strict mode lacks), so it is remembered for that schema alone and one
    tenant's schema never moves another's requests.

    Examples:
        >>> class Refused(Exception):
        ...     status_code = 400
        >>> is_model_wide(Refused("llama2:latest does not support tools"), "tool")
        True
        >>> is_model_wide(Refused("Invalid schema for response_format 'Contact'"), "provider")
        False
    """
    if isinstance(error, NotImplementedError):
        return True
    if strategy is None or not behaviour(strategy).answers_in_tool_call:
        return False
    return _NO_TOOLS.search(error_text(error)) is not None


def _overflows(error: BaseException) -> bool:
    # By name, as `finished_reply` reads LangChain's errors: no import on this path.
    return any(
        "ContextOverflowError" in {cls.__name__ for cls in type(link).__mro__}
        for link in _chain(error)
    )


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
    """The reply an exception stands for, as an `AIMessage`, or None.

    The `openai` SDK parses a `response_format` answer itself and raises
    `LengthFinishReasonError` / `ContentFilterFinishReasonError` instead of
    returning it; the completion is on the exception. As a message with its
    finish reason, it takes the same path as any cut-off or filtered answer.
    LangChain's `ModelRefusalError` (raised by its `ModelRefusalMiddleware`, for
    one, when it runs inside ours) carries the refusing reply as `raw_message`:
    that reply is judged as our own refusal, under the strategy's policy.
    """
    from langchain_core.messages import AIMessage

    names = {cls.__name__ for cls in type(error).__mro__}
    if "ModelRefusalError" in names:
        raw = getattr(error, "raw_message", None)
        return raw if isinstance(raw, AIMessage) else None
    if not names & {"LengthFinishReasonError", "ContentFilterFinishReasonError"}:
        return None

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
