"""Private machinery behind `langchain_structx.dialects`.

`walker` turns any JSON Schema into a provider dialect while building a codec (see
`codecs`) that moves instances between the original shape and the provider's shape.
Each provider module (`openai`, `anthropic`, `gemini`) only states that provider's
rules and limits.
"""
