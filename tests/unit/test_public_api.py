"""The public namespace is exactly `__all__`, and the contract names stay importable."""

from __future__ import annotations

import inspect
import types

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
