"""A callback handler that records what the traces of a structured run show."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage

REPORT_KEY = "structured_output_report"


class Recorder(BaseCallbackHandler):
    """Records the labels of chat-model runs, chain names, custom events and reports."""

    def __init__(self) -> None:
        self.models: list[tuple[list[str], dict[str, Any]]] = []
        self.options: list[dict[str, Any]] = []
        self.chains: list[str] = []
        self.custom: list[tuple[str, Any]] = []
        self.reports: list[Any] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.models.append((list(tags or []), dict(metadata or {})))
        self.options.append(dict(kwargs.get("options") or {}))

    def on_chain_start(
        self, serialized: dict[str, Any], inputs: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.chains.append(str(kwargs.get("name")))

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.custom.append((name, data))

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        found = _report_in(outputs)
        if found is not None:
            self.reports.append(found)


def _report_in(outputs: Any) -> Any:
    """The report in a run's outputs: a state update, or a list of them."""
    if isinstance(outputs, dict):
        return outputs.get(REPORT_KEY)
    update = getattr(outputs, "update", None)
    if isinstance(update, dict):
        return update.get(REPORT_KEY)
    if isinstance(outputs, (list, tuple)):
        return next((r for r in map(_report_in, outputs) if r is not None), None)
    return None
