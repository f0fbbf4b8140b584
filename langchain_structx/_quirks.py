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
from dataclasses import replace
from typing import Any

from langchain_structx._plan import CallSpec

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
        found = spec.derived["unstreamed"] = replace(spec, model_settings=settings)
    return found


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


def talks_to_workers_ai(model: Any) -> bool:
    """Whether `model` is Workers AI's client, or an OpenAI client on its compatible route."""
    if _is_cloudflare_client(model):
        return True
    # Read from the instance's own fields: a failed attribute lookup on a
    # Pydantic model raises inside, which costs more than the whole check.
    base = getattr(model, "__dict__", {}).get("openai_api_base")
    return isinstance(base, str) and bool(_WORKERS_AI_COMPATIBLE.search(base))
