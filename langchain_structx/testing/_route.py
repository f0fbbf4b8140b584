"""Which structured-output route a script implies, so a bare schema takes it.

`AutoStrategy` picks the route from the model's profile. A fixed default profile
would send a script of JSON texts down the tool route, where every text is "no
tool call"; so, unless a test sets `profile`, the double reports the profile its
script implies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import AIMessage

TOOL_ROUTE: ModelProfile = {
    "tool_calling": True,
    "tool_choice": True,
    "tool_call_streaming": True,
    "structured_output": False,
}
"""A script with a tool call, or one decided at call time: tools, no native output."""

TEXT_ROUTE: ModelProfile = {
    "tool_calling": False,
    "tool_choice": False,
    "tool_call_streaming": False,
    "structured_output": False,
}
"""A script of text replies only: the answer is asked for in the prompt."""


def implied_profile(script: Sequence[Any]) -> ModelProfile:
    """The profile that sends a bare schema down the route `script` is written for.

    Text replies only (strings, or `AIMessage`s without tool calls; exceptions
    aside) imply the prompted route; any tool call, a function entry (its reply
    is unknown until the call) or an empty script keep the tool route.

    Examples:
        >>> implied_profile(['{"city": "Oslo"}'])["tool_calling"]
        False
        >>> implied_profile([])["tool_calling"]
        True
    """
    replies = [entry for entry in script if not isinstance(entry, BaseException)]
    if not replies or not all(isinstance(entry, str | AIMessage) for entry in replies):
        return dict(TOOL_ROUTE)  # type: ignore[return-value]
    if any(isinstance(e, AIMessage) and (e.tool_calls or e.invalid_tool_calls) for e in replies):
        return dict(TOOL_ROUTE)  # type: ignore[return-value]
    return dict(TEXT_ROUTE)  # type: ignore[return-value]
