"""Whatever the user gives as a schema, normalised into named variants with one validator each.

Nothing here imports LangChain.
"""
