"""Adjusting a call for a provider whose clients would send it in a form it refuses.

Workers AI (Cloudflare) documents that JSON mode does not work together with
streaming, yet a LangChain model streams whenever a streaming callback is
attached, as it is under `agent.stream(..., stream_mode="messages")`: both
`ChatCloudflareWorkersAI` and `ChatOpenAI` on Workers AI's OpenAI-compatible
route would then send `response_format` with `stream: true`. Streaming through
`ChatCloudflareWorkersAI` also loses tool calls on the compatible route (only
text deltas are read) and leaves the body of an error unread, so a refusal of
JSON mode or of tools could not be told from any other 400. Structured calls to
Workers AI are therefore made without streaming; the answer still arrives as
one message event.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langchain_structx._request.plan import CallSpec

# Workers AI's OpenAI-compatible base URL: .../accounts/{account_id}/ai/v1
_WORKERS_AI_COMPATIBLE = re.compile(r"/accounts/[^/]+/ai/v1/?$")


def for_model(spec: CallSpec, model: Any) -> CallSpec:
    """`spec` as it must be sent to `model`'s provider.

    Examples:
        >>> class ChatCloudflareWorkersAI: ...
        >>> dict(for_model(CallSpec(strategy="prompted"), ChatCloudflareWorkersAI()).model_settings)
        {'stream': False}
        >>> dict(for_model(CallSpec(strategy="prompted"), object()).model_settings)
        {}
    """
    if "stream" in spec.model_settings or not talks_to_workers_ai(model):
        return spec
    found: CallSpec | None = spec.derived.get("unstreamed")
    if found is None:
        settings = {**spec.model_settings, "stream": False}
        # Its own cache of what shells build from it: a binding made with the
        # streaming settings must not be taken for this one.
        found = replace(spec, model_settings=settings, derived={})
        spec.derived["unstreamed"] = found
    return found


def plain(model: Any) -> bool:
    """Whether no call to `model` needs any adjustment here, decided from its class alone.

    True for a Pydantic model class that is neither Anthropic's nor Workers AI's
    client and has no `openai_api_base` field: `forces_tools` is then True and
    `for_model` changes nothing, whatever the instance's settings, and the
    attempt loop skips reading them on every call.

    Examples:
        >>> from langchain_structx.testing import ScriptedChatModel
        >>> plain(ScriptedChatModel(responses=[])), plain(object())
        (True, False)
    """
    return _plain_class(model.__class__)


@functools.lru_cache(maxsize=256)
def _plain_class(cls: type) -> bool:
    fields = getattr(cls, "model_fields", None)
    return (
        isinstance(fields, Mapping)
        and "openai_api_base" not in fields
        and not _is_anthropic_class(cls)
        and not _is_cloudflare_class(cls)
    )


def lost_routes(model: Any) -> frozenset[str]:
    """Strategies `model`'s client cannot send as asked, so `AutoStrategy` skips them.

    `ChatCloudflareWorkersAI` declares, per model family, the parameters it renames
    or drops: a family whose `response_format` goes out under another name (the
    "mistral" family's `guided_json`, which most of its models ignore) loses the
    provider route, and one that drops `tool_choice` cannot force the tool route.
    The client's own table is read, so a new family is handled as it declares.
    """
    if not _is_cloudflare_client(model):
        return frozenset()
    try:
        from langchain_cloudflare.chat_models import get_model_behavior
    except ImportError:  # an older client without the table
        return frozenset()
    behavior = get_model_behavior(str(getattr(model, "model", "") or ""))
    lost = set()
    if getattr(behavior, "response_format_param", "response_format") != "response_format":
        lost.add("provider")
    if "tool_choice" in getattr(behavior, "unsupported_params", ()):
        lost.add("tool")
    return frozenset(lost)


def _is_cloudflare_client(model: Any) -> bool:
    return _is_cloudflare_class(model.__class__)


@functools.lru_cache(maxsize=256)
def _is_cloudflare_class(cls: type) -> bool:
    return any(base.__name__ == "ChatCloudflareWorkersAI" for base in cls.__mro__)


def forces_tools(model: Any) -> bool:
    """Whether the tool route may force `model`'s tool choice.

    Anthropic refuses a forced choice while the model thinks ("Thinking may not
    be enabled when tool_choice forces tool use"). `ChatAnthropic` with
    `thinking` enabled or adaptive drops a forced choice itself, warning on every
    call, and some models think on every request: the client's own list of the
    models that take a forced choice is read. A refusal not foreseen here (a
    model made to think another way) is met when it comes: the tool route asks
    again unforced.

    Examples:
        >>> class ChatAnthropic:
        ...     model = "claude-sonnet-4-6"
        ...     thinking = {"type": "enabled", "budget_tokens": 2048}
        >>> forces_tools(ChatAnthropic()), forces_tools(object())
        (False, True)
    """
    if not _is_anthropic_class(model.__class__):
        return True
    thinking = getattr(model, "thinking", None)
    if isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive"):
        return False
    return _anthropic_forces(str(getattr(model, "model", "") or ""))


@functools.lru_cache(maxsize=256)
def _is_anthropic_class(cls: type) -> bool:
    return any(base.__name__ == "ChatAnthropic" for base in cls.__mro__)


@functools.lru_cache(maxsize=256)
def _anthropic_forces(name: str) -> bool:
    try:
        from langchain_anthropic.chat_models import (
            _supports_forced_tool_choice,
        )
    except ImportError:  # another client version: refusals are met when they come
        return True
    return bool(_supports_forced_tool_choice(name))


def talks_to_workers_ai(model: Any) -> bool:
    """Whether `model` is Workers AI's client, or an OpenAI client on its compatible route."""
    if _is_cloudflare_client(model):
        return True
    # Read from the instance's own fields: a failed attribute lookup on a
    # Pydantic model raises inside, which costs more than the whole check.
    base = getattr(model, "__dict__", {}).get("openai_api_base")
    return isinstance(base, str) and bool(_WORKERS_AI_COMPATIBLE.search(base))
