"""Suite-wide settings and fixtures.

`make test` sets STRUCTX_NO_SKIP=1: it installs every extra the integration tests
need, so there a skipped integration test means something is missing from the
setup, and it fails instead of passing quietly.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from langchain_structx import FALLBACKS


@pytest.fixture(autouse=True)
def _isolate_fallbacks() -> Iterator[None]:
    """Each test starts and ends with no remembered strategy rejections."""
    FALLBACKS.forget()
    yield
    FALLBACKS.forget()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    strict = os.environ.get("STRUCTX_NO_SKIP") == "1"
    if strict and report.skipped and item.get_closest_marker("integration") is not None:
        if not hasattr(report, "wasxfail"):
            report.outcome = "failed"
            report.longrepr = f"integration test skipped under STRUCTX_NO_SKIP=1: {report.longrepr}"
