"""The LCEL runnable and the agent through official clients, where a provider differs.

Each case failed before its fix; the fake servers enforce each provider's rules.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from langchain_structx import PromptedStrategy, create_agent
from langchain_structx.runnables import with_structured_output

from .clients import client, fake
from .wire import answering as _answer

pytestmark = pytest.mark.integration


class City(BaseModel):
    name: str
    country: str


OSLO = {"name": "Oslo", "country": "Norway"}


def test_json_mode_on_anthropic_asks_in_the_prompt_alone() -> None:
    # Anthropic has no JSON mode; its client failed with an AssertionError on
    # `response_format={"type": "json_object"}`, before sending anything.
    with fake("anthropic", _answer(OSLO)) as server:
        model = client("anthropic", server)
        runnable = with_structured_output(model, City, method="json_mode", include_raw=True)
        result = runnable.invoke("Oslo?")
        agent = create_agent(model, response_format=PromptedStrategy(City, json_mode=True))
        state = agent.invoke({"messages": [("user", "Oslo?")]})
        requests = server.requests
    assert result["parsed"] == City(**OSLO) and result["parsing_error"] is None
    assert state["structured_response"] == City(**OSLO)
    assert len(requests) == 2
    for request in requests:
        assert "output_config" not in request and "tools" not in request
        assert "Answer with only a JSON object" in json.dumps(request["system"])
    assert server.violations == []
