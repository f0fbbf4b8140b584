"""Text to JSON: lenient parsing, repairs, partial values and schema-guided coercion.

Nothing here imports LangChain.
"""
