"""Workers AI through `langchain-cloudflare`: its HTTP errors carry the reason only in the body.

A small fake of the native route (`/accounts/{account}/ai/run/{model}`), answering
in the documented envelope `{"result": ..., "success": ..., "errors": [...]}`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from langchain_structx import AutoStrategy, create_agent
from langchain_structx._capabilities import is_rejection

from .wire import FakeProvider, Rendered

pytestmark = pytest.mark.integration

MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"


class Parcel(BaseModel):
    label: str


def _error(message: str, code: int) -> Any:
    return {"result": None, "success": False, "errors": [{"message": message, "code": code}]}


class FakeWorkersAI(FakeProvider):
    """Refuses tools (a model without tool calling) and JSON mode (a schema it cannot meet)."""

    def answer(self, path: str, body: dict[str, Any]) -> Rendered:
        self.requests.append(body)
        if not path.endswith(f"/ai/run/{MODEL}"):
            return Rendered(404, _error("No route for that URI", 7000))
        # Workers AI "JSON Mode" docs: JSON mode does not support streaming.
        if body.get("response_format") and body.get("stream"):
            self.violations.append("JSON mode together with stream")
            return Rendered(400, _error("JSON mode does not support streaming", 5006))
        if body.get("response_format"):
            self.rejected += 1
            return Rendered(400, _error("AiError: JSON Mode couldn't be met", 5028))
        if body.get("tools"):
            self.rejected += 1
            return Rendered(400, _error("AiError: this model does not support 'tools'", 5007))
        text = json.dumps({"label": "box"})
        usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
        result = {"response": text, "usage": usage}
        return Rendered(200, {"result": result, "success": True, "errors": [], "messages": []})


def _client(server: FakeProvider) -> Any:
    from langchain_cloudflare import ChatCloudflareWorkersAI

    return ChatCloudflareWorkersAI(
        model=MODEL, account_id="acct", api_token="token", base_url=server.url
    )


def test_a_tool_rejection_in_the_body_falls_back_to_a_prompt() -> None:
    with FakeWorkersAI(lambda ask: None) as server:
        agent = create_agent(_client(server), response_format=AutoStrategy(Parcel))
        state = agent.invoke({"messages": [("user", "Describe the parcel.")]})
    assert state["structured_response"] == Parcel(label="box")
    report = state["structured_output_report"]
    assert report["strategy"] == "prompted"
    assert [f["from_strategy"] for f in report["fallbacks"]] == ["tool"]
    assert server.rejected == 1
    assert server.violations == []


def test_json_mode_that_cannot_be_met_is_a_rejection() -> None:
    with FakeWorkersAI(lambda ask: None) as server:
        model = _client(server).bind(response_format={"type": "json_object"})
        with pytest.raises(Exception) as info:
            model.invoke("Describe the parcel as JSON.")
    assert "couldn't be met" not in str(info.value)  # the client's message leaves it out
    assert is_rejection(info.value, "prompted")
    assert server.violations == []
