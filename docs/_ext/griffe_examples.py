"""Griffe extension for the docs build: read `Example:` sections as examples.

The package's Google-style docstrings title their doctest sections `Example:`.
Griffe only knows the plural `Examples:`, so it would render the section as an
admonition of Markdown, where `>>>` lines turn into block quotes. This extension
renames the title before the docstring is parsed. It changes nothing in the
package and can be dropped once the docstrings say `Examples:`.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_TITLE = re.compile(r"^(?P<indent>[ \t]*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename `Example:` section titles to `Examples:`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the docstring of every object as it is loaded."""
        docstring = obj.docstring
        if docstring is not None and "Example:" in docstring.value:
            docstring.value = _TITLE.sub(r"\g<indent>Examples:", docstring.value)
