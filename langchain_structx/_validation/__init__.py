"""JSON Schema validation of untrusted values, with its bounds on size, depth, regexes and time.

Nothing here imports LangChain.
"""
