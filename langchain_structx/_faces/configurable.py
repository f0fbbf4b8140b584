"""Chat models chosen at call time: LangChain's configurable model in the runnable.

`init_chat_model(..., configurable_fields=...)`, and `init_chat_model()` without a
model, return a model that builds its chat model for each call from that call's
`config["configurable"]` (keys behind its `config_prefix`, if it has one). The
runnable does likewise: it builds the chat model once per invocation, before the
attempt loop starts, so the strategy order, the strict dialect and every
binding follow the model that answers, and an error of LangChain's (an unknown
provider, no model named) reaches the caller as LangChain raised it.

LangChain has no public way to build that model, so this module reads three
private names of `langchain.chat_models.base` (`_capabilities.chosen_model`, for
the agent and the graph node, reads the first two):

- the class `_ConfigurableModel`, to recognise such a model (were it renamed,
  the runnable would refuse these models again, as any non-chat model);
- its method `_model(config)`, which builds the chat model for a config and
  applies the operations queued on it (`with_config`, `bind_tools`, ...);
- its attribute `_queued_declarative_operations`, a list of
  `(method name, args, kwargs)`, read to refuse queued tools or a queued
  `with_structured_output` when the runnable is built. Without it they are
  still refused, at the first call, when the built model is unwrapped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.runnables import Runnable, RunnableConfig, RunnableWithFallbacks
from langchain_core.runnables.config import merge_configs

from langchain_structx._faces.lcel import Bound, peel, refuse_ours, unbind
from langchain_structx._models.capabilities import CONFIGURABLE
from langchain_structx.errors import UserError

_QUEUED_REFUSED = frozenset({"bind_tools", "with_structured_output"})
"""Queued operations that set what the runnable sets itself."""


def is_configurable(model: Any) -> bool:
    """Whether `model` is LangChain's configurable model (chosen per call).

    Examples:
        >>> from langchain.chat_models import init_chat_model
        >>> is_configurable(init_chat_model(configurable_fields=("model",)))
        True
        >>> is_configurable("openai:gpt-4.1-mini")
        False
    """
    return isinstance(model, CONFIGURABLE)


def accept(model: Any) -> tuple[Runnable[LanguageModelInput, Any], Bound]:
    """The chat model or configurable model under `model`, and what bindings add.

    Raises:
        UserError: As `check`, or when the bindings set tools or a response format.
    """
    inner, bound = peel(model)
    check(inner)
    return inner, bound


def check(model: Any) -> None:
    """Refuse what is neither a chat model nor a configurable model the runnable can use.

    Raises:
        UserError: For anything else, and for a configurable model with tools, a
            response format or structured output queued on it, which the runnable
            sets itself.
    """
    if not is_configurable(model):
        unbind(model)  # for a model under no binding, only the chat-model check
        return
    queued = vars(model).get("_queued_declarative_operations") or ()
    for name, _args, kwargs in queued:
        if name in _QUEUED_REFUSED:
            raise UserError(
                f"The configurable model has {name}(...) queued, which "
                "with_structured_output sets itself; pass the model without it."
            )
        refuse_ours(kwargs)


def resolve(
    model: Runnable[LanguageModelInput, Any], outer: Bound, config: RunnableConfig
) -> tuple[BaseChatModel, Bound]:
    """The chat model a configurable model builds for one call, and what binds it.

    Args:
        model: The configurable model.
        outer: What bindings around the configurable model add.
        config: The call's config; with `outer.config` under it, it chooses the model.

    Returns:
        The chat model, and the arguments and config of every binding: the
        operations queued on the configurable model, then the bindings around it,
        whose arguments win, as when LangChain calls the same stack.

    Raises:
        UserError: When the built model carries tools or a response format.
        Exception: What LangChain raises building the model, unchanged.
    """
    built = model._model(merge_configs(outer.config, config))  # type: ignore[attr-defined]
    chat, inner = unbind(built)
    return chat, Bound({**inner.kwargs, **outer.kwargs}, merge_configs(inner.config, outer.config))


def fallback_chain(
    model: Any, build: Callable[[Any], Runnable[LanguageModelInput, Any]]
) -> Runnable[LanguageModelInput, Any] | None:
    """For models chained by `with_fallbacks`, the same chain of what `build` makes of each.

    LangChain's `model.with_fallbacks([...]).with_structured_output(...)` asks each
    model in turn, and hands over on the errors the chain names; so does this.

    Returns:
        The chain, or None when `model` is no such chain.
    """
    if not isinstance(model, RunnableWithFallbacks):
        return None
    return RunnableWithFallbacks(
        runnable=build(model.runnable),
        fallbacks=[build(fallback) for fallback in model.fallbacks],
        exceptions_to_handle=model.exceptions_to_handle,
        exception_key=model.exception_key,
    )
