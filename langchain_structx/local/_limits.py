"""Bounds on the grammar the local model builds from an untrusted JSON schema.

llama.cpp's grammar engine has no limits of its own that protect the process: its
parser recurses once per nested group (a `maxLength` of 20,000 overflows the C stack
and kills the process), and its sampler follows every alternative the grammar leaves
open at once, so a schema whose alternatives overlap (an enum of 10,000 values, a
union nested in a union, a regex such as `(a?){300}`) makes one token take minutes.
The schema is therefore loosened before it becomes a grammar, and refused only
where loosening cannot help. Loosening never rejects an answer the schema allows:
the answer is still validated against the original schema.
"""

from __future__ import annotations

MAX_SCHEMA_DEPTH = 128
"""Most JSON objects and lists a value in a schema may sit inside; deeper is a
`GrammarError`."""

MAX_SCHEMA_NODES = 100_000
"""Most JSON values (each visit of a shared one counts) in a schema; more is a
`GrammarError`. This matches the strategies' own bound on schemas."""

MAX_REPEAT = 1_000
"""Largest count written out into the grammar: `minItems`, `maxItems`, `minLength`,
`maxLength` and the counts of a pattern's `{m,n}`. llama.cpp's parser refuses a
chain of much more than 1,000 optional copies, and crashes on one of 20,000. A larger
count becomes an unbounded repetition (`*` or `+`) in the grammar."""

MAX_ALTERNATIVES = 1_024
"""Most alternatives the grammar may keep open at once while one value is written:
enum values, union branches that start alike (multiplied through nesting), and the
positions of a pattern that one character can reach. An enum or union past it
becomes the set of JSON types it allows; a pattern past it is left out."""

MAX_OPTIONAL_PROPERTIES = 128
"""Most optional properties of one object written into the grammar (the converter
spends time quadratic in their number, and recursion linear in it). Past it, the
optional properties become generic `"key": value` pairs."""

MAX_PATTERN_CHARS = 5_000
"""Longest pattern analysed; a longer one is left out of the grammar unread (Python's
`re` and the converter spend milliseconds per thousand characters on it). Reading a
pattern costs five steps of `MAX_PATTERNS_WORK` per character."""

MAX_PATTERN_POSITIONS = 4_096
"""Most character positions a pattern may have once its counts are written out;
a larger pattern is left out of the grammar."""

MAX_PATTERN_WORK = 50_000
"""Steps one pattern's analysis may take; a pattern that needs more is left out."""

MAX_PATTERNS_WORK = 1_000_000
"""Steps the analysis of all of one schema's patterns may take together; patterns
met after that are left out of the grammar."""

MAX_GRAMMAR_CHARS = 2_000_000
"""Largest grammar text built for one schema. Counts are dropped (from the last
ones met) to keep the estimated size within it; a schema whose grammar is larger
even so (tens of thousands of properties, or very long property names nested deep)
is refused with a `GrammarError`, before converting when the estimate is over twice
the bound, after when the grammar itself is over it."""

MAX_NAME_PROBES = 1_000_000
"""Most lookups the converter may spend naming rules. It names a rule after its
path of property names with every character outside `[a-zA-Z0-9-]` made `-`, and
numbers the names that come out alike one by one, trying each number in turn: a
thousand property names in Chinese all come out as `-`, and cost half a million
lookups (a second). A schema whose names would take more is a `GrammarError`."""

MAX_RULE_GROUPS = 2_000
"""Most groups and repetition operators in one grammar rule: llama.cpp's parser
turns each into a rule and refuses a rule that expands into many more than 2,000."""

MAX_GRAMMAR_NESTING = 1_100
"""Deepest nesting of parentheses in the grammar text: llama.cpp's parser recurses
once per level on the C stack, at up to half a kilobyte a level."""
