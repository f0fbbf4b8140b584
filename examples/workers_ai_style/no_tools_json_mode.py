"""A model with no tool calling and no native JSON schema: JSON mode plus repair.

Some hosted models (Workers AI's smaller ones, many llama.cpp and vLLM setups)
offer only a JSON mode: `response_format={"type": "json_object"}` makes them
emit JSON, but they do not take a schema and cannot call tools. And they still
wrap the JSON in a markdown fence or a sentence now and then.

`PromptedStrategy(schema, json_mode=True)` describes the schema in the system
prompt, asks for JSON mode, then repairs and validates the reply locally. The
model here is scripted (a real model will not produce a sloppy reply on cue):
its one reply is fenced, preceded by prose, has a trailing comma and gives the
score as a string. The answer still validates, and the report lists each repair.

Run it with `python examples/workers_ai_style/no_tools_json_mode.py`.
"""

from __future__ import annotations

from typing import Any

from langchain_structx import PromptedStrategy, create_agent
from langchain_structx.testing import ScriptedChatModel

REVIEW = "Works really well, fast and solidly built. I give it 5."

REVIEW_SCHEMA: dict[str, Any] = {
    "title": "ReviewSummary",
    "description": "Sentiment and score of a product review.",
    "type": "object",
    "properties": {
        "sentiment": {"type": "string", "enum": ["positive", "neutral", "negative"]},
        "score": {"type": "integer", "minimum": 1, "maximum": 5, "description": "1 to 5"},
        "summary": {"type": "string", "description": "A few words"},
    },
    "required": ["sentiment", "score"],
}

SLOPPY_REPLY = (
    "Here is the JSON you asked for:\n"
    "```json\n"
    '{"sentiment": "positive", "score": "5", "summary": "fast and well built",}\n'
    "```"
)


def default_model() -> ScriptedChatModel:
    """A scripted model with JSON mode only: no tools, no native schema."""
    return ScriptedChatModel(
        model_name="json-mode-only",
        responses=[SLOPPY_REPLY],
        profile={"tool_calling": False, "structured_output": False},
    )


def main(model: Any = None) -> dict[str, Any]:
    """Extract a `ReviewSummary` dict from `REVIEW` (default: the scripted model)."""
    if model is None:
        model = default_model()
    if isinstance(model, ScriptedChatModel):
        print("The model is scripted: its reply was written in advance.")
    agent = create_agent(
        model,
        response_format=PromptedStrategy(REVIEW_SCHEMA, json_mode=True),
        system_prompt="Summarise the product review.",
    )
    state = agent.invoke({"messages": [{"role": "user", "content": REVIEW}]})
    if isinstance(model, ScriptedChatModel):
        call = model.calls[0]
        print(f"request: response_format={call.response_format}, tools={call.tools}")
        print(f"reply:\n{state['messages'][1].content}")
    report = state["structured_output_report"]
    print(f"repairs ({report['attempts']} attempt(s)):")
    for repair in report["repairs"]:
        print(f"  - {repair}")
    summary: dict[str, Any] = state["structured_response"]
    print(summary)
    return summary


if __name__ == "__main__":
    main()
