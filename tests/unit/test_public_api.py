"""The public namespace is exactly `__all__`, and the contract names stay importable."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import langchain_structx

CONTRACT = (
    "create_agent",
    "StructuredOutputMiddleware",
    "ToolStrategy",
    "ProviderStrategy",
    "PromptedStrategy",
    "AutoStrategy",
    "ErrorContext",
    "StructuredOutputRetryError",
)


def test_all_is_a_tuple_without_duplicates() -> None:
    names = langchain_structx.__all__
    assert isinstance(names, tuple)
    assert len(set(names)) == len(names)


def test_all_matches_the_public_namespace() -> None:
    # Names whose modules need LangChain load on first use; load them all first.
    for name in langchain_structx.__all__:
        getattr(langchain_structx, name)
    public = {
        name
        for name, value in vars(langchain_structx).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    exported = set(langchain_structx.__all__) - {"__version__"}
    assert public == exported


def test_contract_names_are_exported() -> None:
    for name in CONTRACT:
        assert name in langchain_structx.__all__
        assert getattr(langchain_structx, name) is not None


def test_every_exported_callable_has_a_docstring() -> None:
    for name in langchain_structx.__all__:
        value = getattr(langchain_structx, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name} has no docstring"


def test_dir_lists_every_exported_name() -> None:
    assert set(langchain_structx.__all__) <= set(dir(langchain_structx))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        langchain_structx.no_such_name  # type: ignore[attr-defined]  # noqa: B018


PURE_IMPORT = """
import sys
import langchain_structx
import langchain_structx.dialects, langchain_structx.limits, langchain_structx._exceptions
import langchain_structx._parsing.parse, langchain_structx._schemas.normalise
import langchain_structx._validation.validate
from langchain_structx import Limits, SchemaError, StructxError
loaded = sorted(m for m in sys.modules if m == "langchain" or m.startswith("langchain."))
assert not loaded, loaded
from langchain_structx import ToolStrategy, create_agent
assert "langchain.agents" in sys.modules
"""


def test_the_pure_layers_import_without_langchain() -> None:
    root = Path(langchain_structx.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", PURE_IMPORT], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


PUBLIC_MODULES = (
    "langchain_structx",
    "langchain_structx.dialects",
    "langchain_structx.errors",
    "langchain_structx.graphs",
    "langchain_structx.limits",
    "langchain_structx.middleware",
    "langchain_structx.nodes",
    "langchain_structx.report",
    "langchain_structx.streaming",
    "langchain_structx.strategies",
    "langchain_structx.testing",
)


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_module_has_a_sorted_tuple_all(module: str) -> None:
    names = importlib.import_module(module).__all__
    assert isinstance(names, tuple)
    assert list(names) == sorted(names)


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_name_in_all_exists(module: str) -> None:
    loaded = importlib.import_module(module)
    for name in loaded.__all__:
        assert hasattr(loaded, name), f"{module}.{name}"


@pytest.mark.parametrize(
    ("module", "name", "home"),
    [
        ("langchain_structx", "JSONParseError", "langchain_structx.errors"),
        ("langchain_structx", "MalformedJSONError", "langchain_structx.errors"),
        ("langchain_structx", "TruncatedJSONError", "langchain_structx.errors"),
        ("langchain_structx.middleware", "ToolStrategy", "langchain_structx.strategies"),
        ("langchain_structx.middleware", "AutoStrategy", "langchain_structx.strategies"),
        ("langchain_structx.graphs", "echo_model", "langchain_structx.testing"),
        ("langchain_structx.graphs", "offline_extraction_graph", "langchain_structx.testing"),
    ],
)
def test_moved_names_still_resolve_with_a_deprecation_warning(
    module: str, name: str, home: str
) -> None:
    loaded = importlib.import_module(module)
    assert name not in loaded.__all__
    with pytest.warns(DeprecationWarning, match=f"import it from {home}") as caught:
        value = getattr(loaded, name)
    assert value is getattr(importlib.import_module(home), name)
    assert caught[0].filename == __file__  # the warning points at the caller


def test_the_stream_event_type_is_exported_with_its_module() -> None:
    from langchain_structx.streaming import StructuredOutputEvent

    assert langchain_structx.StructuredOutputEvent is StructuredOutputEvent


def test_the_fallback_memory_is_public_because_the_faces_accept_it() -> None:
    middleware = langchain_structx.StructuredOutputMiddleware
    node = langchain_structx.structured_output_node
    for face in (middleware.__init__, node):
        assert "fallback_memory" in inspect.signature(face).parameters
    assert "FallbackMemory" in langchain_structx.__all__
