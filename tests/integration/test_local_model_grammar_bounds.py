"""The embedded model answers hostile schemas that used to crash it, stall it or fail.

The schemas that crashed the process (llama.cpp's grammar parser overflowing the C
stack) or stalled it (one token taking minutes) run in a child process, so that the
old behaviour fails one test instead of taking the session down or hanging it; the
child's time limit is only a guard against such a hang, far above the seconds the
calls take. Each answer is validated against the original, unloosened schema.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from langchain_structx.local import LocalChatModel

pytestmark = pytest.mark.integration

_HANG_GUARD_SECONDS = 600

_CHILD = textwrap.dedent(
    """
    import json, sys
    from langchain_structx.local import LocalChatModel

    model = LocalChatModel(seed=0)
    for line in sys.stdin:
        case = json.loads(line)
        fmt = {"type": "json_schema", "json_schema": {"name": "Answer", "schema": case["schema"]}}
        reply = model.invoke(case["prompt"], response_format=fmt, max_tokens=case["tokens"])
        print(json.dumps({"content": reply.content}), flush=True)
    """
)


def _word(**keywords: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"word": {"type": "string", **keywords}},
        "required": ["word"],
    }


def _answer_in_child(cases: list[tuple[dict[str, Any], str, int]]) -> list[Any]:
    """Ask a fresh process for each (schema, prompt, max_tokens); return the parsed answers."""
    lines = "".join(
        json.dumps({"schema": schema, "prompt": prompt, "tokens": tokens}) + "\n"
        for schema, prompt, tokens in cases
    )
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=lines,
        capture_output=True,
        text=True,
        timeout=_HANG_GUARD_SECONDS,
        check=False,
    )
    assert done.returncode == 0, (
        f"the model process died ({done.returncode}): {done.stderr[-2000:]}"
    )
    replies = [json.loads(line)["content"] for line in done.stdout.splitlines()]
    assert len(replies) == len(cases)
    return [json.loads(reply) for reply in replies]


def test_long_counts_no_longer_crash_the_process(default_weights: Path) -> None:
    # Each of these overflowed llama.cpp's parser stack: a segmentation fault.
    numbers = {"type": "array", "items": {"type": "integer"}, "maxItems": 100_000}
    cases = [
        (numbers, "Write the JSON array [1, 2, 3] and nothing else.", 16),
        (_word(maxLength=20_000), 'Answer with {"word": "hello"}.', 16),
        (_word(pattern="^[a-z]{1,20000}$"), 'Answer with {"word": "hello"}.', 16),
    ]
    for (schema, _, _), answer in zip(cases, _answer_in_child(cases), strict=True):
        jsonschema.validate(answer, schema)


def test_costly_alternatives_no_longer_stall_sampling(default_weights: Path) -> None:
    # The pattern made four tokens take minutes; the union, setting the sampler up.
    levels = 30
    defs: dict[str, Any] = {
        f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
        for i in range(levels)
    }
    defs[f"d{levels}"] = {"type": "integer"}
    doubling = {
        "type": "object",
        "properties": {"v": {"$ref": "#/$defs/d0"}},
        "required": ["v"],
        "$defs": defs,
    }
    cases = [
        (_word(pattern="^(a?){300}$"), 'Answer with {"word": "aaa"}.', 16),
        (doubling, 'Answer with {"v": 7}.', 16),
    ]
    for (schema, _, _), answer in zip(cases, _answer_in_child(cases), strict=True):
        jsonschema.validate(answer, schema)


def _ask(model: LocalChatModel, schema: dict[str, Any], prompt: str) -> Any:
    fmt = {"type": "json_schema", "json_schema": {"name": "Answer", "schema": schema}}
    answer = json.loads(str(model.invoke(prompt, response_format=fmt, max_tokens=16).content))
    jsonschema.validate(answer, schema)
    return answer


def test_a_length_llama_cpp_refused_is_now_answered(local_model: LocalChatModel) -> None:
    # A `maxLength` of 5,000 made llama.cpp refuse the grammar: a GrammarError.
    assert _ask(local_model, _word(maxLength=5_000), 'Answer with {"word": "hello"}.')


def test_a_true_subschema_is_answered(local_model: LocalChatModel) -> None:
    # The converter used to crash on it with an AttributeError.
    schema = {"type": "object", "properties": {"x": True}, "required": ["x"]}
    assert "x" in _ask(local_model, schema, 'Answer with {"x": 1}.')


def test_an_integer_longer_than_sixteen_digits_comes_back_whole(
    local_model: LocalChatModel,
) -> None:
    # The converter's integers stopped at 16 digits: the model's 17-digit id was
    # cut to 16 by the grammar and returned as a valid, wrong value.
    schema = {
        "type": "object",
        "properties": {"order_id": {"type": "integer"}},
        "required": ["order_id"],
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "Order", "schema": schema}}
    prompt = "Order id: 12345678901234567. Extract the order id."
    reply = local_model.invoke(prompt, response_format=fmt, max_tokens=40)
    assert json.loads(str(reply.content)) == {"order_id": 12345678901234567}


def test_a_definition_named_like_a_grammar_rule_keeps_its_shape(
    local_model: LocalChatModel,
) -> None:
    # A definition called `space` was taken for the converter's own `space` rule:
    # the object became an optional blank and no reply could be read.
    schema = {
        "$ref": "#/$defs/space",
        "$defs": {
            "space": {
                "type": "object",
                "properties": {"seats": {"type": "integer"}},
                "required": ["seats"],
            }
        },
    }
    assert _ask(local_model, schema, "The room has 12 seats.") == {"seats": 12}


def test_a_lone_surrogate_in_the_text_is_no_untyped_error(local_model: LocalChatModel) -> None:
    # llama.cpp encodes the prompt as UTF-8 and raised UnicodeEncodeError.
    reply = local_model.invoke("Say hi to Ana\ud800.", max_tokens=4)
    assert isinstance(reply.content, str)


def test_the_grammars_a_model_keeps_are_bounded(local_model: LocalChatModel) -> None:
    from langchain_structx.local._guidance import KEPT_GRAMMARS, _kept

    for n in range(KEPT_GRAMMARS + 10):
        schema = {"type": "object", "properties": {f"field_{n}": {"type": "integer"}}}
        fmt = {"type": "json_schema", "json_schema": {"name": "A", "schema": schema}}
        local_model.invoke("{}", response_format=fmt, max_tokens=1)
    assert _kept.cache_info().currsize <= KEPT_GRAMMARS
