"""The one line engine of the line-oriented grammars: find header lines in one pass, cut turns there.

Every line grammar (whatsapp, irc, inferred, discord-text, transcript, markdown) splits its text
at header lines with this module. A header is a pattern anchored at a line start; the engine never
tries it at every character: it searches for the line end *before* a header (a pattern that starts
with a literal ``\\n`` is found with a fast scan of line ends) and reads the header from the next
character. Multi-line turns are therefore handled once, here, for every grammar.

Two entry points over the same scan:

- ``scan(text, first, rest)`` (the hot path of very large exports): ``first``/``rest`` come from
  ``line_patterns(body)``; each match of ``rest`` starts at the line end before its header, so the
  body of one turn is simply ``text[previous.end():next.start()]``.
- ``split_blocks(text, header)`` (``header`` anchored with ``^`` under MULTILINE): yields ``Block``
  objects with the header match, the body and the 1-based line span, as it always has.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain

import regex

FENCE = regex.compile(r"^[ \t]{0,3}(?:```|~~~)", regex.MULTILINE)
_LEADING_FLAGS = re.compile(r"^\(\?[a-zA-Z]+\)")


@dataclass(slots=True)
class Block:
    """One turn's extent in the text. ``header`` is None for a preamble before the first header."""

    header: regex.Match | None
    body: str
    line_start: int
    line_end: int

    @property
    def text(self) -> str:
        """The body as a turn's text: without the blank lines that end it (``trim_blank_tail``)."""
        return trim_blank_tail(self.body)


def line_patterns(body: str, flags: int = 0) -> tuple[re.Pattern, re.Pattern]:
    """(pattern for a header on line 1, pattern for a header after a line end) of one header body."""
    return re.compile(body, flags), re.compile("\n" + body, flags)


def scan(text: str, first: re.Pattern, rest: re.Pattern) -> Iterator[re.Match]:
    """Every header of ``text`` in order: one match at 0 from ``first``, then ``rest``'s matches."""
    m = first.match(text)
    if m is None:
        return rest.finditer(text)
    return chain((m,), rest.finditer(text, m.end()))  # chain, not a generator: no Python frame per header


_AHEAD: dict[object, object] = {}


def _line_ends_before(header):
    """``\\n(?=header)`` in the header's own regex module, or None for a header not anchored at ``^``."""
    found = _AHEAD.get(header)
    if found is None:
        source = header.pattern
        inline = _LEADING_FLAGS.match(source)
        body = source[inline.end():] if inline else source
        if not body.startswith("^"):
            found = _AHEAD[header] = False
        else:
            module = regex if isinstance(header, regex.Pattern) else re
            found = _AHEAD[header] = module.compile(r"\n(?=" + body + ")", header.flags)
    return found or None


def header_matches(text: str, header, start: int = 0, end: int | None = None) -> Iterator:
    """Every match of a line-anchored ``header`` in ``text[start:end]``, found at line ends (one pass)."""
    end = len(text) if end is None else end
    ahead = _line_ends_before(header)
    if ahead is None:
        yield from header.finditer(text, start, end)
        return
    done = start
    if start == 0 or text[start - 1] == "\n":
        m = header.match(text, start, end)
        if m is not None:
            done = m.end()
            yield m
    for cut in ahead.finditer(text, start, end):
        pos = cut.start() + 1
        if pos < done:
            continue  # inside the previous header's own match
        m = header.match(text, pos, end)
        if m is not None:
            done = m.end()
            yield m


def fenced_regions(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Character ranges inside fenced code blocks; an unclosed fence runs to the end."""
    end = len(text) if end is None else end
    marks = [m.start() for m in header_matches(text, FENCE, start, end)]
    if len(marks) % 2:
        marks.append(end)
    return [(marks[i], marks[i + 1]) for i in range(0, len(marks), 2)]


TRAILING_BLANK = r"(?:\n[ \t]*)+$"
"""Blank lines at the end of a turn's text: separators between turns, never its content (one rule for
every line grammar: ``split_blocks``, ``parsers.columns.group_turns``, WhatsApp's scan)."""
_TRAILING_BLANK = re.compile(TRAILING_BLANK.replace("$", r"\Z"))


def trim_blank_tail(body: str) -> str:
    """``body`` without the blank lines that end it."""
    return _TRAILING_BLANK.sub("", body) if body.endswith(("\n", " ", "\t")) else body


def split_blocks(
    text: str,
    header: regex.Pattern,
    *,
    start: int = 0,
    end: int | None = None,
    first_line: int = 1,
    skip_fenced: bool = False,
) -> Iterator[Block]:
    """Yield the blocks of ``text[start:end]``: a preamble (if not blank), then one per header.

    ``first_line`` is the line number of ``text[start]``. With ``skip_fenced`` a header-like
    line inside a fenced code block does not start a turn.
    """
    end = len(text) if end is None else end
    fences = fenced_regions(text, start, end) if skip_fenced else []
    fence_starts = [a for a, _ in fences]

    def inside_fence(pos: int) -> bool:
        i = bisect_right(fence_starts, pos) - 1
        return i >= 0 and fences[i][0] < pos < fences[i][1]

    line = first_line  # line number of text[cursor]
    cursor = start
    current: regex.Match | None = None
    seg_start = body_start = start

    def block(seg_end: int) -> Block | None:
        body = text[body_start:seg_end]
        if body.endswith("\n"):
            body = body[:-1]
            seg_end -= 1
        if current is None and not body.strip():
            return None
        return Block(current, body, line, line + text.count("\n", seg_start, seg_end))

    for m in header_matches(text, header, start, end):
        pos = m.start()
        if fences and inside_fence(pos):
            continue
        done = block(pos)
        if done is not None:
            yield done
        line += text.count("\n", cursor, pos)
        cursor = seg_start = pos
        current = m
        body_start = m.end()
    done = block(end)
    if done is not None:
        yield done

