"""What the repair scanner recognises in sloppy JSON, as compiled patterns and tables.

Runs of plain JSON that can be copied through in one match, the runs that one
bulk fix repairs (single-quoted strings, unquoted keys, Python literals, comments),
and the single tokens `langchain_structx._parsing.rewrite.Rewriter` stops at. Every
repeated group is possessive: the scanner's time stays linear in the text.
"""

from __future__ import annotations

import re
from typing import Final

# Fast runs: plain JSON copied through in one regex match. Strings inside a run may
# not hold brackets, so every bracket in a run is structural and can be counted.
# Repeated groups are possessive (`*+`, `++`): without that, the regex engine keeps
# backtracking state per repetition, which costs gigabytes on megabyte inputs.
_PLAIN = r"[\s:,{}\[\]]+|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|(?:true|false|null)(?![\w$])"
_DQ_STRING = r'"[^"\\\x00-\x1f{}\[\]]*+(?:\\.[^"\\\x00-\x1f{}\[\]]*+)*+"'
BORING = re.compile(rf"(?:{_PLAIN}|{_DQ_STRING})++")
# A run of simple single-quoted strings (and double-quoted ones free of apostrophes)
# that one str.replace turns into JSON; the lookahead leaves apostrophes alone.
_DQ_NO_APOSTROPHE = r'"[^"\'\\\x00-\x1f{}\[\]]*+(?:\\.[^"\'\\\x00-\x1f{}\[\]]*+)*+"'
_SQ_STRING = r"'[^'\"\\\x00-\x1f{}\[\]]*+'(?=\s*[,:}\]])"
SINGLE_RUN = re.compile(rf"(?:{_PLAIN}|{_DQ_NO_APOSTROPHE}|{_SQ_STRING})++")
_COMMENT = re.compile(r"#[^\n]*+|//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+\*/")
BLANK = re.compile(rf"(?:\s++|{_COMMENT.pattern})++")
# A string-free run of unquoted keys, Python literals and comments: fixed in bulk.
_KEY = r"(?:[^\W\d]|\$)[\w$-]*+(?=\s*:)"
_PY_WORD = r"(?:True|False|None)(?![\w$])(?!\s*:)"
BARE_RUN = re.compile(rf"(?:{_PLAIN}|{_PY_WORD}|{_KEY}|{_COMMENT.pattern}){{1,4096}}+")
# Inside a bare run: the comments to blank and the keys to quote, split out in one call.
COMMENT_SPLIT = re.compile(rf"({_COMMENT.pattern})")
KEY_SPLIT = re.compile(rf"(?<![\w$-])({_KEY})")

# Structure: brackets counted for depth, and a comma that a closing bracket follows.
BRACKET = re.compile(r"[{}\[\]]")
TRAILING_COMMA = re.compile(r",(?=\s*[}\]])")
LEADING_CLOSE = re.compile(r"\s*[}\]]")

# Single tokens the scanner stops at, outside any fast run.
PY_LITERAL = re.compile(_PY_WORD)
WORD = re.compile(r"(?:[^\W\d]|\$)[\w$-]*")
KEY_AFTER = re.compile(r"\s*:")
DQ_BODY = re.compile(r'[^"\\]*+(?:\\[\s\S][^"\\]*+)*+')
CONTROL = re.compile(r"[\x00-\x1f]")

# What may follow a cut-off value when the text is truncated rather than wrong.
TO_END = re.compile(r"\s*(?:```[\s\S]*)?")
INCOMPLETE = re.compile(r"[-+.\deE]*\s*(?:```[\s\S]*)?")

QUOTES: Final = {
    "'": ("'", "single_quotes"),
    "\u2018": ("\u2018\u2019", "smart_quotes"),
    "\u2019": ("\u2018\u2019", "smart_quotes"),
    "\u201c": ("\u201c\u201d", "smart_quotes"),
    "\u201d": ("\u201c\u201d", "smart_quotes"),
}
# A colon or comma typed in full width (Chinese or Japanese input) between values.
FULLWIDTH: Final = {"\uff1a": ":", "\uff0c": ","}
# A closing quote is one followed by a delimiter, so that apostrophes inside survive.
QUOTE_CLOSE: Final = {
    closers: re.compile(rf"[{closers}](?=\s*(?:[,:}}\]\uff1a\uff0c]|```|\Z))")
    for closers, _ in QUOTES.values()
}
PY_LITERALS: Final = {"True": "true", "False": "false", "None": "null"}
LITERAL_NAMES: Final = ("true", "false", "null", "True", "False", "None")
NON_FINITE: Final = ("NaN", "Infinity")
