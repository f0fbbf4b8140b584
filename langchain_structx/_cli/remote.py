"""Extraction as runs of a graph on LangGraph Server (`structx extract --server`).

Each text becomes one stateless run of the deployed extraction graph
(`langchain_structx.graphs`), so the server's queue spreads a batch over its
workers. The schemas travel as JSON schema; a Python schema (Pydantic model,
dataclass, TypedDict) is validated again here, so a record's output is exactly
what a local run would print.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from langchain_structx._schemas.normalise import json_value_validator
from langchain_structx._schemas.typeddicts import pydantic_ready
from langchain_structx.errors import StructxError
from langchain_structx.report import ERROR_KEY, KIND_KEY, REPORT_KEY, RESPONSE_KEY

SERVER_EXTRA_HINT = "install langchain-structx[server]"
"""What to do when `langgraph-sdk` is missing."""


class ServerUnavailableError(StructxError):
    """The server cannot be reached, or does not serve the graph."""


class RemoteRunError(StructxError):
    """A run ended in an error on the server.

    Attributes:
        error_type: The name of the exception the server raised, so an error
            record reads as it would from a local run.
    """

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteSettings:
    """Where and how the runs are made."""

    url: str
    """The server's base URL."""
    graph: str
    """The graph (or assistant) id that extracts."""
    strategy: str
    """The strategy name the server's graph should use."""
    max_retries: int
    """Retries after the first attempt, per record."""
    system: str
    """The system prompt."""


def json_schema(schema: Any) -> dict[str, Any]:
    """A schema as the JSON schema sent to the server.

    Examples:
        >>> from typing_extensions import TypedDict
        >>> class City(TypedDict):
        ...     name: str
        >>> json_schema(City)["title"], json_schema({"type": "object"})
        ('City', {'type': 'object'})
    """
    if isinstance(schema, dict):
        return schema
    return TypeAdapter(pydantic_ready(schema)).json_schema()


class RemoteExtractor:
    """Runs extractions on a LangGraph Server and returns them as state updates."""

    def __init__(self, settings: RemoteSettings, schemas: Sequence[Any]) -> None:
        try:
            import langgraph_sdk  # noqa: F401 - only checking the extra is there
        except ImportError as exc:
            raise ImportError(f"{exc} ({SERVER_EXTRA_HINT})") from None
        self.settings = settings
        payloads = [json_schema(s) for s in schemas]
        self._request: dict[str, Any] = {
            "schema": payloads[0] if len(payloads) == 1 else payloads,
            "strategy": settings.strategy,
            "max_retries": settings.max_retries,
            "system": settings.system,
        }
        # Python schemas are validated again here, keyed by the name the server reports.
        self._adapters = {
            str(p.get("title")): json_value_validator(TypeAdapter(pydantic_ready(s)))
            for s, p in zip(schemas, payloads, strict=True)
            if not isinstance(s, dict)
        }
        # With one schema, the value is of that schema whatever name the server gives it.
        only = list(self._adapters.values()) if len(schemas) == 1 else []
        self._only = only[0] if only else None
        self._client: Any = None

    async def _connected(self) -> Any:
        if self._client is None:
            from langgraph_sdk import get_client

            # No key unless the environment gives one: a local server needs none.
            self._client = get_client(url=self.settings.url)
        return self._client

    async def check(self) -> None:
        """Make sure the server answers and serves the graph.

        Raises:
            ServerUnavailableError: When it does not.
        """
        from langgraph_sdk.errors import APIStatusError

        client = await self._connected()
        url, graph = self.settings.url, self.settings.graph
        try:
            found = await client.assistants.search(graph_id=graph, limit=1)
        except APIStatusError as exc:  # the server answered, and refused the graph
            raise ServerUnavailableError(f"{url} serves no graph {graph!r}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - any transport failure means the same
            raise ServerUnavailableError(f"cannot reach {url}: {exc}") from None
        if not found:
            raise ServerUnavailableError(f"{url} serves no graph {graph!r}")

    async def ainvoke(self, text: str) -> dict[str, Any]:
        """Extract from one text as one run; the result is the run's state update.

        Raises:
            RemoteRunError: When the run ended in an error.
        """
        client = await self._connected()
        result = await client.runs.wait(
            None, self.settings.graph, input={"text": text, **self._request}, raise_error=False
        )
        if isinstance(result, dict) and isinstance(result.get(ERROR_KEY), dict):
            error = result[ERROR_KEY]  # the graph's own failure: an extraction that failed
            raise RemoteRunError(str(error.get("type")), str(error.get("message")))
        if isinstance(result, dict) and isinstance(result.get("__error__"), dict):
            error = result["__error__"]  # anything else the run raised
            raise RemoteRunError(str(error.get("error")), str(error.get("message")))
        if not isinstance(result, dict) or RESPONSE_KEY not in result:
            raise RemoteRunError("MissingOutputError", f"the run returned no {RESPONSE_KEY}")
        return self._typed(result)

    def _typed(self, result: dict[str, Any]) -> dict[str, Any]:
        kind = result.get(KIND_KEY)
        value = result[RESPONSE_KEY]
        validate = self._adapters.get(str(kind), self._only)
        if validate is not None:
            value = validate(value)
        return {RESPONSE_KEY: value, KIND_KEY: kind, REPORT_KEY: result.get(REPORT_KEY)}

    async def aclose(self) -> None:
        """Close the connection, if one was opened."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
