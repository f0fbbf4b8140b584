"""A scripted chat model for testing your own agents and graphs.

`ScriptedChatModel` is a real `BaseChatModel` that answers from a list you give
it instead of calling a provider, much like `httpx.MockTransport` answers HTTP
requests in tests. It works wherever a chat model does: `invoke`, `ainvoke`,
`stream`, `astream`, `batch`, `bind_tools`, `with_structured_output`,
`langchain.agents.create_agent` and LangGraph nodes. Every call is recorded, so a
test can assert on what the graph sent as well as on what it did with the reply.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_structx.testing import ScriptedChatModel, tool_call
    >>> model = ScriptedChatModel(
    ...     responses=[
    ...         AIMessage(content="", tool_calls=[tool_call("add", {"a": 2, "b": 2})]),
    ...         "2 + 2 = 4",
    ...     ]
    ... )
    >>> model.invoke("What is 2 + 2?").tool_calls[0]["args"]
    {'a': 2, 'b': 2}
    >>> model.invoke("And now?").content
    '2 + 2 = 4'
    >>> [call.messages[-1].content for call in model.calls]
    ['What is 2 + 2?', 'And now?']
"""

from langchain_structx.testing._echo import echo_model, offline_extraction_graph
from langchain_structx.testing._model import ScriptedChatModel
from langchain_structx.testing._script import (
    RecordedCall,
    ScriptedResponse,
    ScriptExhaustedError,
    ScriptFunction,
    tool_call,
)

__all__ = (
    "RecordedCall",
    "ScriptExhaustedError",
    "ScriptFunction",
    "ScriptedChatModel",
    "ScriptedResponse",
    "echo_model",
    "offline_extraction_graph",
    "tool_call",
)

# Tracebacks, pickles and the API docs name the public module.
for _name in ("RecordedCall", "ScriptExhaustedError", "ScriptedChatModel", "tool_call"):
    globals()[_name].__module__ = __name__
del _name
