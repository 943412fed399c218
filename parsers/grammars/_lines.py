"""Helpers shared by the line-oriented human chat grammars (whatsapp, irc, inferred).

``scan`` is a faster stand-in for ``split_blocks`` on the hot path of very large exports: the
stdlib engine cannot skip ahead to a ``^`` under MULTILINE and tries every character of a 100 MB
file, whereas a pattern that starts with a literal ``\\n`` is searched for with a fast scan of
line ends. Every match of ``scan`` therefore starts at the line end *before* its header (except a
header on the very first line), so the body of one turn is simply ``text[previous.end():next.start()]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import chain


def line_patterns(body: str, flags: int = 0) -> tuple[re.Pattern, re.Pattern]:
    """(pattern for a header on line 1, pattern for a header after a line end) of one header body."""
    return re.compile(body, flags), re.compile("\n" + body, flags)


def scan(text: str, first: re.Pattern, rest: re.Pattern) -> Iterator[re.Match]:
    """Every header of ``text`` in order: one match at 0 from ``first``, then ``rest``'s matches."""
    m = first.match(text)
    if m is None:
        return rest.finditer(text)
    return chain((m,), rest.finditer(text, m.end()))  # chain, not a generator: no Python frame per header


def line_count(text: str) -> int:
    """Number of lines of a text (a last line without a line end counts; an empty text has none)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def drop_final_newline(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


def unreadable_times(count: int, why: str) -> str:
    """The one aggregated warning line for the turns whose time could not be read."""
    return f"{count} turn time{'s' if count != 1 else ''} could not be read ({why}): time left empty, raw text kept"
