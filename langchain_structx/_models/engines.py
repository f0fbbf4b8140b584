"""The serving engines behind OpenAI-compatible endpoints, and how each constrains output.

llama.cpp's server, llama-cpp-python's, vLLM, SGLang, Ollama and LM Studio all
speak OpenAI's chat protocol and all have constrained decoding of their own,
but each reads the schema from its own request field, and several answer a
field they do not know with an HTTP 200 and unconstrained text. The table
`ENGINES` says, per engine, how the engine names itself and which field carries
the schema; `probe` asks a server who it is, with cheap `GET`s that cost no
model call:

- `GET {base}/models`: the `owned_by` of the listed models (llama.cpp says
  `llamacpp`, llama-cpp-python `me`, vLLM `vllm`, SGLang `sglang`, LM Studio
  `organization_owner`);
- `GET {root}/api/version`: Ollama's version endpoint, `{"version": "..."}`;
- `GET {root}/api/v0/models`: LM Studio's own model list.

`ChatOllama` needs no probe: its class says which engine it reaches, and its
`format` parameter is Ollama's native constraint.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

Shape = Literal["json_schema", "json_object_schema", "format"]
"""How an engine takes a schema:

- `json_schema`: OpenAI's `response_format` `{"type": "json_schema", "json_schema":
  {"name": ..., "schema": ...}}`;
- `json_object_schema`: `response_format` `{"type": "json_object", "schema": ...}`
  (llama-cpp-python's server knows no `json_schema` type: it answers it with an
  error), sent in the client's `extra_body`, which `ChatOpenAI` passes through
  untouched where it would rewrite a `response_format` it does not know;
- `format`: Ollama's native `format` parameter (`ChatOllama(format=...)`).
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Engine:
    """One serving engine: how it names itself and where its constraint goes.

    Attributes:
        name: Our name for it, kept in the fallback memory.
        title: What reports call it.
        owned_by: The `owned_by` values its `/v1/models` lists.
        shape: How its chat endpoint takes a schema.
        field: The request field that carries the schema, as the docs say it.
    """

    name: str
    title: str
    owned_by: frozenset[str] = frozenset()
    shape: Shape = "json_schema"
    field: str = "response_format (json_schema)"


ENGINES: Mapping[str, Engine] = {
    engine.name: engine
    for engine in (
        Engine(name="llama.cpp", title="llama.cpp's server", owned_by=frozenset({"llamacpp"})),
        Engine(
            name="llama-cpp-python",
            title="llama-cpp-python's server",
            owned_by=frozenset({"me"}),
            shape="json_object_schema",
            field="response_format (json_object with schema), in extra_body",
        ),
        Engine(name="vllm", title="vLLM", owned_by=frozenset({"vllm"})),
        Engine(name="sglang", title="SGLang", owned_by=frozenset({"sglang"})),
        Engine(name="ollama", title="Ollama's OpenAI-compatible route"),
        Engine(
            name="ollama-native",
            title="Ollama",
            shape="format",
            field="format (ChatOllama)",
        ),
        Engine(name="lm-studio", title="LM Studio", owned_by=frozenset({"organization_owner"})),
    )
}
"""Every engine we know, by name."""

NO_ENGINE = "none"
"""What the memory keeps for a server that answered as none of `ENGINES`."""

PROBE_TIMEOUT_SECONDS = 3.0
"""How long each `GET` of a probe may take."""

_OPENAI_HOSTS = ("api.openai.com",)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where an OpenAI-compatible client sends, as a probe needs it.

    Attributes:
        base: The client's base URL, without a trailing slash (`.../v1`).
        model: The model id the client asks for.
        key: The client's API key, sent as a bearer token; "" for none.
    """

    base: str
    model: str
    key: str = ""

    @property
    def root(self) -> str:
        """The server's root: the base URL without its `/v1`."""
        return self.base.removesuffix("/v1")


def endpoint(model: Any) -> Engine | Endpoint | None:
    """The engine `model` is known to reach, the endpoint to probe, or None.

    `ChatOllama` reaches Ollama's native route. `ChatOpenAI` (not Azure's) with a
    base URL other than OpenAI's reaches some OpenAI-compatible server, which a
    probe names. Any other client is left to its profile.

    Examples:
        >>> class ChatOllama: ...
        >>> endpoint(ChatOllama()).name
        'ollama-native'
        >>> endpoint(object()) is None
        True
    """
    kind = _client_kind(model.__class__)
    if kind == "ollama":
        return ENGINES["ollama-native"]
    if kind != "openai":
        return None
    base = getattr(model, "__dict__", {}).get("openai_api_base")
    if not isinstance(base, str) or not base or _is_hosted(base):
        return None
    if getattr(model, "use_responses_api", None):
        return None  # the fields in the table are Chat Completions fields
    name = getattr(model, "model_name", None) or ""
    secret = getattr(model, "openai_api_key", None)
    reveal = getattr(secret, "get_secret_value", None)
    key = reveal() if callable(reveal) else ""
    return Endpoint(base.rstrip("/"), str(name), key if isinstance(key, str) else "")


@functools.lru_cache(maxsize=256)
def _client_kind(cls: type) -> str | None:
    names = {base.__name__ for base in cls.__mro__}
    if "ChatOllama" in names:
        return "ollama"
    if "ChatOpenAI" in names and "AzureChatOpenAI" not in names:
        return "openai"
    return None


def _is_hosted(base: str) -> bool:
    # OpenAI itself, and Workers AI's compatible route (see `_quirks`), are no engine.
    parts = urlsplit(base)
    host = (parts.hostname or "").lower()
    return host in _OPENAI_HOSTS or "/ai/v1" in parts.path


def from_models(listing: Any, model: str) -> Engine | None:
    """The engine a `/v1/models` answer names, by the `owned_by` of `model` (or any entry).

    Examples:
        >>> from_models({"data": [{"id": "m", "owned_by": "vllm"}]}, "m").name
        'vllm'
        >>> from_models({"data": [{"id": "m", "owned_by": "openai"}]}, "m") is None
        True
    """
    entries = listing.get("data") if isinstance(listing, Mapping) else None
    if not isinstance(entries, list):
        return None
    entries = [e for e in entries if isinstance(e, Mapping)]
    mine = [e for e in entries if e.get("id") == model] or entries
    for entry in mine:
        owner = entry.get("owned_by")
        for engine in ENGINES.values():
            if isinstance(owner, str) and owner in engine.owned_by:
                return engine
    return None


def is_ollama_version(answer: Any) -> bool:
    """Whether an answer is Ollama's `/api/version`: `{"version": "0.12.3"}`."""
    return isinstance(answer, Mapping) and isinstance(answer.get("version"), str)


def is_lm_studio_listing(answer: Any) -> bool:
    """Whether an answer is LM Studio's `/api/v0/models`: models with `arch` and `state`."""
    entries = answer.get("data") if isinstance(answer, Mapping) else None
    return (
        isinstance(entries, list)
        and bool(entries)
        and all(isinstance(e, Mapping) and "arch" in e and "state" in e for e in entries)
    )


async def probe(where: Endpoint) -> str | None:
    """Ask the server at `where` which engine it is.

    Returns:
        An engine's name; `NO_ENGINE` when the server answered as none of
        them; None when it could not be reached (a later run asks again).
    """
    import httpx

    headers = {"Authorization": f"Bearer {where.key}"} if where.key else {}
    async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_SECONDS, headers=headers) as client:
        try:
            listing = await _get(client, f"{where.base}/models")
        except httpx.TransportError:
            return None
        found = from_models(listing, where.model)
        if found is not None:
            return found.name
        for url, says, name in (
            (f"{where.root}/api/version", is_ollama_version, "ollama"),
            (f"{where.root}/api/v0/models", is_lm_studio_listing, "lm-studio"),
        ):
            try:
                if says(await _get(client, url)):
                    return name
            except httpx.TransportError:
                return None
    return NO_ENGINE


_MAX_PROBE_BYTES = 1 << 20


async def _get(client: Any, url: str) -> Any:
    """The JSON a `GET` answers with, or None for an error status or no JSON."""
    response = await client.get(url)
    if response.status_code != 200 or len(response.content) > _MAX_PROBE_BYTES:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def settings(engine: Engine, name: str, schema: dict[str, Any], model: Any) -> dict[str, Any]:
    """The model settings that carry `schema` in `engine`'s own field.

    The schema goes as it is: these engines turn it into a grammar, so OpenAI's
    strict rewriting (every field required, absent ones as null) would only
    cost tokens. A client's own `extra_body` is kept beside ours.

    Examples:
        >>> settings(ENGINES["ollama-native"], "Tag", {"type": "object"}, object())
        {'format': {'type': 'object'}}
        >>> settings(ENGINES["llama-cpp-python"], "Tag", {"type": "object"}, object())
        {'extra_body': {'response_format': {'type': 'json_object', 'schema': {'type': 'object'}}}}
    """
    if engine.shape == "format":
        return {"format": schema}
    if engine.shape == "json_object_schema":
        own = getattr(model, "extra_body", None)
        extra = dict(own) if isinstance(own, Mapping) else {}
        extra["response_format"] = {"type": "json_object", "schema": schema}
        return {"extra_body": extra}
    # `bind_tools` (beside the caller's tools) rebuilds the format from the
    # schema and takes the name from its title: the title carries our name.
    json_schema = {"name": name, "schema": {**schema, "title": name}}
    return {"response_format": {"type": "json_schema", "json_schema": json_schema}}
