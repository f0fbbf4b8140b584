"""Fixtures shared by the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from langchain_structx import FALLBACKS


@pytest.fixture(autouse=True)
def _isolate_fallbacks() -> Iterator[None]:
    """Each test starts and ends with no remembered strategy rejections."""
    FALLBACKS.forget()
    yield
    FALLBACKS.forget()
