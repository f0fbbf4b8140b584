"""Names that moved: still served from their old place, with a `DeprecationWarning`."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping


def moved(module: str, name: str, homes: Mapping[str, str]) -> object:
    """Serve `module.name` from its new home, warning that the old path is deprecated.

    Meant to be called from a module's `__getattr__`.

    Args:
        module: The module that used to provide the name.
        name: The attribute that was asked for.
        homes: The module each moved name now lives in.

    Returns:
        The object from its new home.

    Raises:
        AttributeError: `name` never moved out of `module`.
    """
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} is deprecated; import it from {home}",
        DeprecationWarning,
        stacklevel=3,  # the code that asked, past this function and __getattr__
    )
    return getattr(importlib.import_module(home), name)
