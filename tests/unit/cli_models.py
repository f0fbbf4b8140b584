"""Chat models for the `structx` subprocess tests: `--model python:cli_models:echo`.

`echo` answers with the user's text (so a text that is an object's JSON extracts
to that object) and reports 15 tokens per call. `CLI_TEST_BLOCK_ON=TEXT` makes
it hang on that one text, so a test can kill the command at a known record
(with `CLI_TEST_BLOCKED_FILE=PATH`, it creates that file when it starts to hang);
`CLI_TEST_INTERRUPT_HERE=1` then has the hanging call's own thread take the
process's SIGINT, as the kernel may hand a Ctrl-C to any thread of the process;
`CLI_TEST_DELAY=SECONDS` slows every answer.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatResult

from langchain_structx.testing import ScriptedChatModel

USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}


def _reply(messages: list[BaseMessage], call: Any) -> AIMessage:
    text = next(m.text for m in reversed(messages) if isinstance(m, HumanMessage))
    if os.environ.get("CLI_TEST_BLOCK_ON") == text:
        marker = os.environ.get("CLI_TEST_BLOCKED_FILE")
        if marker:
            with open(marker, "w"):
                pass
        if os.environ.get("CLI_TEST_INTERRUPT_HERE"):
            time.sleep(0.5)  # the main thread is now idle, waiting on its event loop
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        time.sleep(3600)  # until the test kills the command
    time.sleep(float(os.environ.get("CLI_TEST_DELAY", "0")))
    return AIMessage(text, usage_metadata=dict(USAGE))  # type: ignore[arg-type]


class _Echo(ScriptedChatModel):
    """The scripted model, answering async calls on a worker thread.

    The batch runs its records on one event loop. A hanging answer must hang its
    own record only, as a real client's pending request does: answered on the
    loop itself (the scripted model's default), it stopped every other record,
    and whether the records before it were written depended on scheduling.
    """

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return await asyncio.to_thread(self._generate, messages, stop, **kwargs)


def echo() -> ScriptedChatModel:
    return _Echo(
        model_name="cli-echo", responses=[_reply] * 1000, profile={"structured_output": True}
    )
