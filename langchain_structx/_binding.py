"""The types of `bind_tools`, shared by the package's two chat models.

LangChain's `BaseChatModel.bind_tools` takes tools in any of its forms and a
tool choice; the embedded model and the scripted test model accept the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from langchain_core.tools import BaseTool

ToolLike: TypeAlias = "dict[str, Any] | type | Callable[..., Any] | BaseTool"
"""A tool as `bind_tools` accepts it: an OpenAI-format dict, a class, a function or a tool."""

ToolChoice: TypeAlias = "str | dict[str, Any] | bool | None"
"""Which tool the model must call: a name, `"auto"`, `"any"`/`"required"`, `"none"`,
an OpenAI-format choice dict, True (the only tool) or None (the model decides)."""

__all__ = ("ToolChoice", "ToolLike")
