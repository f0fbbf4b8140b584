"""Refuse to run the upstream tests without the plugin that swaps in our create_agent."""

from __future__ import annotations

from typing import Any

import pytest

PLUGIN = "tests.compat.plugin"


def pytest_configure(config: pytest.Config) -> None:
    # Without the plugin these would silently test LangChain's own create_agent.
    if not config.pluginmanager.has_plugin(PLUGIN):
        raise pytest.UsageError(
            f"run the compat tests with: python -m pytest -p {PLUGIN} tests/compat"
        )


@pytest.fixture(scope="session")
def vcr_config() -> dict[str, Any]:
    """Replay LangChain's recorded OpenAI exchanges; never record."""
    from tests.compat.plugin import cassette_config

    return cassette_config()
