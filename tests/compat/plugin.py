"""Pytest plugin: run LangChain's own structured-output tests against our drop-in.

Load it with ``python -m pytest -p tests.compat.plugin tests/compat`` from the
repository root. Before any test module is imported it:

1. replaces ``langchain.agents.create_agent`` and
   ``langchain.agents.factory.create_agent`` with ``langchain_structx``'s
   ``create_agent`` (ours keeps its own reference to LangChain's original, taken
   when ``langchain_structx.middleware`` is imported, so there is no recursion);
2. makes the verbatim upstream helpers importable under their upstream name,
   ``tests.unit_tests`` (the upstream tests import ``tests.unit_tests.agents.model``);
3. marks as strict xfail each upstream test listed in `DELIBERATE` (we
   deliberately behave better), `FORCED` (no middleware can pass it) or
   `KNOWN_BUGS` (our bug, awaiting a fix), so an unexpected pass is noticed.
   docs/compatibility.md explains the first two.

It also provides LangChain's autouse ``blockbuster`` fixture, as LangChain's
``tests/unit_tests/conftest.py`` does, so blocking calls inside the event loop
fail here as they would upstream.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

UPSTREAM = Path(__file__).parent / "upstream"
"""Verbatim copies of LangChain's test files, at their paths in the sdist."""

UPSTREAM_PACKAGE = "tests.unit_tests"

_RF = "tests/unit_tests/agents/test_response_format.py"
_REFUSAL = "tests/unit_tests/agents/middleware/implementations/test_model_refusal.py"

DELIBERATE: dict[str, str] = {
    f"{_RF}::TestResponseFormatAsProviderStrategy::test_validation_error_with_invalid_response": (
        "Deliberate: LangChain's ProviderStrategy raises StructuredOutputValidationError at the "
        "first reply that does not match the schema (it has no retry option at all). We send the "
        "validation errors back to the model and retry, bounded (max_retries=3 for LangChain "
        "strategy objects); the fake model repeats the same bad JSON, so the run ends with "
        "StructuredOutputRetryError (a StructuredOutputError carrying every attempt's error, the "
        "last AI message and the summed usage). Better: a one-off schema slip costs one more call "
        "instead of failing the whole agent run, and the bound prevents a runaway loop."
    ),
}
"""Upstream node id (as in LangChain's repository) -> why we deliberately differ.

Every reason says what LangChain does, what we do and why ours is better.
docs/compatibility.md lists the same entries.
"""

FORCED: dict[str, str] = {}
"""Upstream tests that cannot pass with any middleware-based implementation.

docs/compatibility.md lists the same entries, apart from the improvements.
"""

KNOWN_BUGS: dict[str, str] = {}
"""Upstream tests failing because of bugs on our side, until the core is fixed.

Strict, so the fix turns them into an XPASS failure: then delete the entry.
"""

EXPECTED_FAILURES: dict[str, str] = {**DELIBERATE, **FORCED, **KNOWN_BUGS}

_ORIGINALS: dict[str, Any] = {}
_STALE = pytest.StashKey[list[str] | None]()


def pytest_configure(config: pytest.Config) -> None:
    """Swap in our create_agent and expose the upstream helpers, before collection."""
    install_drop_in()
    _register_upstream_package()
    config.stash[_STALE] = None


def pytest_unconfigure(config: pytest.Config) -> None:
    """Put LangChain's create_agent back."""
    import langchain.agents
    import langchain.agents.factory

    for module in (langchain.agents, langchain.agents.factory):
        original = _ORIGINALS.get(module.__name__)
        if original is not None:
            module.create_agent = original  # type: ignore[attr-defined]


def install_drop_in() -> None:
    """Make every import path of LangChain's create_agent yield ours."""
    import langchain.agents
    import langchain.agents.factory

    # Imported first: it binds LangChain's original create_agent for its own use.
    from langchain_structx import middleware

    for module in (langchain.agents, langchain.agents.factory):
        current = module.create_agent
        if current is not middleware.create_agent:
            _ORIGINALS[module.__name__] = current
        module.create_agent = middleware.create_agent  # type: ignore[attr-defined]


def _register_upstream_package() -> None:
    # The upstream tests say `from tests.unit_tests.agents.model import ...`. Our own
    # `tests` is already imported (this plugin lives in it), so register LangChain's
    # `tests.unit_tests` package explicitly instead of relying on sys.path order.
    # Pytest then imports the upstream test modules under their upstream names.
    if UPSTREAM_PACKAGE in sys.modules:
        return
    root = UPSTREAM / "tests" / "unit_tests"
    spec = importlib.util.spec_from_file_location(
        UPSTREAM_PACKAGE, root / "__init__.py", submodule_search_locations=[str(root)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[UPSTREAM_PACKAGE] = module
    spec.loader.exec_module(module)
    parent = sys.modules.get("tests")
    if parent is not None:
        parent.unit_tests = module  # type: ignore[attr-defined]


def upstream_id(item: pytest.Item) -> str | None:
    """The node id an upstream test has in LangChain's repository, or None."""
    try:
        relative = item.path.relative_to(UPSTREAM)
    except ValueError:
        return None
    name = item.nodeid.split("::", 1)[1]
    return f"{relative.as_posix()}::{name}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the deliberate differences as strict xfail; note entries naming no test."""
    seen: set[str] = set()
    files: set[str] = set()
    for item in items:
        key = upstream_id(item)
        if key is None:
            continue
        seen.add(key)
        files.add(key.split("::", 1)[0])
        reason = EXPECTED_FAILURES.get(key)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
    narrowed = any("::" in str(arg) for arg in config.args)
    if not narrowed:
        config.stash[_STALE] = sorted(
            key for key in EXPECTED_FAILURES if key.split("::", 1)[0] in files and key not in seen
        )


def stale_entries(config: pytest.Config) -> list[str] | None:
    """`EXPECTED_FAILURES` keys that name no collected test; None when not checked."""
    return config.stash.get(_STALE, None)


@pytest.fixture(autouse=True)
def blockbuster() -> Iterator[Any]:
    """Fail on blocking calls in the event loop, as LangChain's unit tests do."""
    from blockbuster import blockbuster_ctx

    with blockbuster_ctx() as bb:
        yield bb
