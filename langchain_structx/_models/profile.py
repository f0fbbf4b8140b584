"""A measured strategy choice, kept in a file: what `structx eval --save-profile` writes.

The file is JSON. `AutoStrategy.from_profile` and `structx extract --profile`
read its `order` (the strategies, best first) and `json_mode` (whether the
prompted strategy asks the provider for JSON mode); the measurements it also
holds are for people, and are not read back.

```json
{"format": "structx-strategy-profile/1", "model": "local",
 "order": ["prompted", "tool", "provider"], "json_mode": true,
 "measured": [{"strategy": "json", "valid_pct": 100.0, ...}]}
```
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from langchain_structx._clip import read_capped
from langchain_structx.errors import UserError

PROFILE_FORMAT = "structx-strategy-profile/1"
"""The `format` a profile names; another format is refused, not guessed at."""
MAX_PROFILE_BYTES = 1 << 20
"""The largest profile file read (1 MiB)."""
_ANSWERING = ("provider", "tool", "prompted")


class StrategyProfileError(UserError):
    """A strategy profile that cannot be read: missing, not JSON, or of another form."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyProfile:
    """The strategy order (and JSON mode) measured for one model and schema."""

    order: tuple[str, ...]
    """The strategies, best first: `provider`, `tool` and `prompted`."""
    json_mode: bool = False
    """Whether the prompted strategy asks for the provider's JSON mode."""
    model: str | None = None
    """The model it was measured on, as `structx eval --model` named it."""
    measured: tuple[Mapping[str, Any], ...] = field(default=())
    """The eval table, one row per strategy; for people, not read back."""

    def to_json(self) -> dict[str, Any]:
        """The profile as the JSON object a file holds.

        Examples:
            >>> StrategyProfile(order=("tool",)).to_json()["format"]
            'structx-strategy-profile/1'
        """
        return {
            "format": PROFILE_FORMAT,
            "model": self.model,
            "order": list(self.order),
            "json_mode": self.json_mode,
            "measured": [dict(row) for row in self.measured],
        }


def read_profile(source: str | os.PathLike[str] | Mapping[str, Any]) -> StrategyProfile:
    """A profile from a file path or from its JSON object.

    Raises:
        StrategyProfileError: When the file cannot be read or is not a profile.

    Examples:
        >>> read_profile({"format": PROFILE_FORMAT, "order": ["prompted"], "json_mode": True})
        StrategyProfile(order=('prompted',), json_mode=True, model=None, measured=())
    """
    if isinstance(source, Mapping):
        return _from_object(source, "the profile")
    where = f"profile {os.fspath(source)}"
    return _from_object(_load(Path(source), where), where)


def write_profile(path: str | os.PathLike[str], profile: StrategyProfile) -> None:
    """Write `profile` to `path` as JSON (0666 less the umask, replacing it whole).

    Raises:
        StrategyProfileError: When the file cannot be written.
    """
    target = Path(path)
    temporary = target.with_name(f".{target.name}.tmp")
    text = json.dumps(profile.to_json(), indent=2, ensure_ascii=False) + "\n"
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise StrategyProfileError(f"cannot write profile {path}: {exc.strerror or exc}") from None


def _load(path: Path, where: str) -> Any:
    try:
        return json.loads(read_capped(path, MAX_PROFILE_BYTES, where))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise StrategyProfileError(f"{where} is not valid JSON: {exc}") from None
    except ValueError as exc:
        raise StrategyProfileError(str(exc)) from None


def _from_object(value: Any, where: str) -> StrategyProfile:
    if not isinstance(value, Mapping) or value.get("format") != PROFILE_FORMAT:
        raise StrategyProfileError(
            f'{where} is not a strategy profile: it needs "format": "{PROFILE_FORMAT}" '
            "(write one with structx eval --save-profile)"
        )
    order = _order(value.get("order"), where)
    json_mode = value.get("json_mode", False)
    if not isinstance(json_mode, bool):
        raise StrategyProfileError(f"{where}: json_mode must be true or false")
    model = value.get("model")
    measured = value.get("measured", [])
    rows = tuple(cast("Mapping[str, Any]", row) for row in measured if isinstance(row, Mapping))
    return StrategyProfile(
        order=order,
        json_mode=json_mode,
        model=model if isinstance(model, str) else None,
        measured=rows if isinstance(measured, list) else (),
    )


def _order(value: Any, where: str) -> tuple[str, ...]:
    names: Sequence[Any] = value if isinstance(value, list) else []
    if not names or any(name not in _ANSWERING for name in names) or len(set(names)) < len(names):
        raise StrategyProfileError(
            f"{where}: order must list some of provider, tool and prompted, each once; "
            f"got {json.dumps(value)[:200]}"
        )
    return tuple(names)
