"""The shared engine of the line-oriented grammars: split text into turns at header lines.

A grammar supplies a compiled header pattern (anchored with ``^`` under MULTILINE, never
consuming the line end); the engine finds every header in one pass over the whole text and
hands back blocks: the header match, the body (the rest of the header line plus every
continuation line up to the next header) and the 1-based line span. Multi-line turns are
therefore handled once, here, for every grammar.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

import regex

FENCE = regex.compile(r"^[ \t]{0,3}(?:```|~~~)", regex.MULTILINE)


@dataclass(slots=True)
class Block:
    """One turn's extent in the text. ``header`` is None for a preamble before the first header."""

    header: regex.Match | None
    body: str
    line_start: int
    line_end: int


def fenced_regions(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Character ranges inside fenced code blocks; an unclosed fence runs to the end."""
    end = len(text) if end is None else end
    marks = [m.start() for m in FENCE.finditer(text, start, end)]
    if len(marks) % 2:
        marks.append(end)
    return [(marks[i], marks[i + 1]) for i in range(0, len(marks), 2)]


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

    for m in header.finditer(text, start, end):
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


def line_starts(text: str, positions: list[int], first_line: int = 1) -> list[int]:
    """Line numbers of ascending character positions, counted in one pass."""
    out: list[int] = []
    line, cursor = first_line, 0
    for pos in positions:
        line += text.count("\n", cursor, pos)
        cursor = pos
        out.append(line)
    return out
