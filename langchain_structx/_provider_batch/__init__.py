"""Extraction through the providers' own batch APIs (OpenAI Batch, Anthropic Message Batches).

`_rows` keeps each record's attempt loop (the engine's, unchanged) and builds
the request it waits on; `_openai` and `_anthropic` speak to each batch API
through its official SDK; `_state` keeps the job on disk; `_job` runs the
rounds: submit, poll, collect, feed the replies to the loops, write the rows
that settled, and re-ask the rest. The public face is `langchain_structx.batch`.
"""
