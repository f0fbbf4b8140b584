"""Who a model is, for what the fallback memory keeps of it.

Two clients share what the memory learnt of a model only when they send to the
same place with the same credentials; refused settings also need the same
thinking and reasoning settings. Credentials and settings are reduced to short
hashes, so no secret is stored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

_CREDENTIAL_ATTRS = (
    "openai_api_key",
    "anthropic_api_key",
    "google_api_key",
    "api_key",
    "xai_api_key",
)
_SETTING_ATTRS = (
    "extra_body",
    "model_kwargs",
    "reasoning",
    "reasoning_effort",
    "thinking",
    "thinking_budget",
    "thinking_level",
    "include_thoughts",
)
"""Client settings that change which request settings a model takes: its thinking
and reasoning switches (OpenAI-compatible servers read theirs from `extra_body`)."""


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
    endpoint = _first_attr(
        model, ("openai_api_base", "base_url", "endpoint", "api_base", "azure_endpoint")
    )
    identity = f"{type(model).__name__}:{name}:{endpoint}"
    # Azure's API versions differ in what they accept (structured output among it).
    version = _first_attr(model, ("openai_api_version",))
    if version:
        identity = f"{identity}@{version}"
    secret = _credential(model)
    if secret is None:
        return identity
    return f"{identity}:key-{_digest(secret)}"


def client_setup(model: Any) -> str:
    """A short hash of the client's thinking and reasoning settings; "" when none is set.

    Refused request settings are kept per setup: one client of a model may
    think (and so refuse a forced tool choice) while another client of the same
    model, endpoint and key does not.

    Examples:
        >>> class M:
        ...     model_name = "m1"
        ...     extra_body = None
        >>> client_setup(M())
        ''
        >>> thinking = M()
        >>> thinking.extra_body = {"enable_thinking": True}
        >>> len(client_setup(thinking))
        16
    """
    shown = {}
    for name in _SETTING_ATTRS:
        value = getattr(model, name, None)
        # Unset is None (or an empty dict); False and 0 are settings too.
        if value is not None and not (isinstance(value, dict) and not value):
            shown[name] = value
    if not shown:
        return ""
    try:
        text = json.dumps(shown, sort_keys=True, default=repr)
    except (TypeError, ValueError):  # keys of mixed types, or a cycle
        text = repr(shown)
    return _digest(text)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def _credential(model: Any) -> str | None:
    for attr in _CREDENTIAL_ATTRS:
        value = getattr(model, attr, None)
        reveal = getattr(value, "get_secret_value", None)
        if callable(reveal):
            value = reveal()
        if isinstance(value, str) and value:
            return value
    return None


def _first_attr(model: Any, names: Iterable[str]) -> str:
    for name in names:
        value = getattr(model, name, None)
        if isinstance(value, str) and value:
            return value
    return ""
