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
fail here as they would upstream, and the ``vcr_config`` that pytest-recording
reads for tests marked ``@pytest.mark.vcr``: LangChain's recorded OpenAI
exchanges (gzipped YAML under ``upstream/tests/cassettes``) are replayed with
recording switched off, so an unrecorded request fails the test instead of
reaching the network. Requests are matched on method, the redacted URI and the
JSON body, as upstream matches them: what we send must equal what LangChain
sent, key order aside.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

UPSTREAM = Path(__file__).parent / "upstream"
"""Verbatim copies of LangChain's test files, at their paths in the sdist."""

UPSTREAM_PACKAGE = "tests.unit_tests"

CASSETTES = UPSTREAM / "tests" / "cassettes"
"""LangChain's recorded HTTP exchanges, replayed and never re-recorded."""

_RF = "tests/unit_tests/agents/test_response_format.py"
_REFUSAL = "tests/unit_tests/agents/middleware/implementations/test_model_refusal.py"
_CASSETTES = "tests/unit_tests/agents/test_response_format_integration.py"
_STRICT_BY_DEFAULT = (
    "Deliberate: for a bare schema on gpt-5, LangChain infers ProviderStrategy with strict "
    "unset and sends OpenAI a non-strict json_schema (strict: false, the schema as Pydantic "
    "writes it). Our AutoStrategy also picks the native route but asks for OpenAI's strict "
    "mode: strict: true, with the schema transformed for it (additionalProperties: false; "
    "optional fields become nullable and required, and are restored after decoding). The "
    "recorded cassette only answers LangChain's exact request body, so replay finds no match. "
    "Better: in strict mode OpenAI constrains decoding to the schema, so the reply always "
    "parses and validates and no retry is spent on a schema slip; non-strict json_schema is "
    "only a hint. Pass ProviderStrategy(schema, strict=False) for a non-strict request."
)

_LEAN_STRICT = (
    "Deliberate: for ProviderStrategy(strict=True), LangChain sends the schema as Pydantic "
    "writes it, with a `title` on every property. We send the schema without "
    "those titles, the smallest request that carries the type: titles are annotations, which "
    "validate nothing and constrain no decoding, so the validated answer is the same. The "
    "recorded cassette answers only LangChain's exact request body, so replay finds no match. "
    "Better: fewer prompt tokens on every call (benchmarks/request_size.py: a median 0.82x of "
    "the OpenAI SDK's own strict conversion) for the same validated value."
)

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
    f"{_RF}::test_wrap_model_call_narrows_response_format_tools": (
        "Deliberate: LangChain binds its structured-output tools as StructuredTool objects, "
        "which every model call converts to OpenAI's format again (LangChain's "
        "dereference_refs and title removal, about 30 us per tool per call). We bind the "
        "OpenAI-format dict that conversion gives, made once per schema, which bind_tools "
        "takes as it is: the model sees the same tool, at a fraction of the cost, and a "
        "recursive schema keeps its references, where the conversion cuts it after two levels. "
        "The test's recording model counts only BaseTool objects, so it sees none of ours; "
        "tests/compat/test_upstream_intent.py runs the same narrowing and counts dicts too."
    ),
    f"{_CASSETTES}::test_inference_to_native_output[False]": _STRICT_BY_DEFAULT,
    f"{_CASSETTES}::test_inference_to_native_output[True]": _STRICT_BY_DEFAULT,
    f"{_CASSETTES}::test_strict_mode[False]": _LEAN_STRICT,
    f"{_CASSETTES}::test_strict_mode[True]": _LEAN_STRICT,
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


# --- Recorded HTTP exchanges ---------------------------------------------------------


def cassette_config() -> dict[str, Any]:
    """Replay-only cassette settings, matching requests as LangChain's conftest does.

    tests/compat/conftest.py serves it as pytest-recording's ``vcr_config``
    fixture (a conftest fixture outranks the one pytest-recording defines).
    """
    from vcr import VCR

    return {
        "record_mode": "none",
        "cassette_library_dir": str(CASSETTES),
        "match_on": ["method", "uri", "json_body"],
        "allow_playback_repeats": True,
        "decode_compressed_response": True,
        "before_record_request": _redact_request,
        "serializer": "yaml.gz",
        "path_transformer": VCR.ensure_suffix(".yaml.gz"),
    }


@pytest.hookimpl(optionalhook=True)
def pytest_recording_configure(config: pytest.Config, vcr: Any) -> None:
    """Teach VCR the gzipped cassette format and the JSON body matcher."""
    vcr.register_persister(ReadOnlyCassettes)
    vcr.register_serializer("yaml.gz", GzipYamlSerializer)
    vcr.register_matcher("json_body", _same_json_body)


def _redact_request(request: Any) -> Any:
    # The cassettes were recorded with every header and the URI replaced by a
    # placeholder; a live request is put through the same filter before matching.
    for key in request.headers:
        request.headers[key] = "**REDACTED**"
    request.uri = "**REDACTED**"
    return request


def _same_json_body(first: Any, second: Any) -> None:
    """Raise AssertionError unless both bodies are equal JSON (or equal bytes)."""
    bodies = (first.body, second.body)
    texts = [body.decode() if isinstance(body, bytes) else (body or "") for body in bodies]
    try:
        values = [json.loads(text) for text in texts]
    except ValueError:
        values = texts
    if values[0] != values[1]:
        raise AssertionError(f"request bodies differ:\n{values[0]}\n!=\n{values[1]}")


class ReadOnlyCassettes:
    """Reads cassette files as bytes (VCR's own persister reads text); never writes."""

    @staticmethod
    def load_cassette(path: str | Path, serializer: Any) -> tuple[list[Any], list[Any]]:
        """The requests and responses recorded in `path`."""
        from vcr.persisters.filesystem import CassetteNotFoundError

        file = Path(path)
        if not file.is_file():
            raise CassetteNotFoundError(f"no cassette at {file.name}")
        cassette = serializer.deserialize(file.read_bytes())
        return cassette["requests"], cassette["responses"]

    @staticmethod
    def save_cassette(path: str | Path, cassette: dict[str, Any], serializer: Any) -> None:
        """Refuse: the upstream cassettes are read-only here."""
        raise RuntimeError("the compat suite replays LangChain's cassettes and never records")


class GzipYamlSerializer:
    """Cassettes stored as gzipped YAML, read with the safe YAML loader only."""

    @staticmethod
    def deserialize(data: bytes | str) -> dict[str, Any]:
        """Turn a cassette file's bytes into VCR's requests and responses."""
        import yaml
        from vcr.request import Request

        raw = data.encode("latin-1") if isinstance(data, str) else data
        cassette = yaml.safe_load(gzip.decompress(raw).decode("utf-8"))
        cassette["requests"] = [Request(**fields) for fields in cassette["requests"]]
        return dict(cassette)

    @staticmethod
    def serialize(cassette: dict[str, Any]) -> bytes:
        """Refuse: the upstream cassettes are read-only here."""
        raise RuntimeError("the compat suite replays LangChain's cassettes and never records")
