"""Line accounting: a text session's lines in turns, in declared regions, loose or doubled.

The primitives of the source accounting (validators/accounting.py) for text sources: what was found
(``Accounting``), the line index of one text, the line-by-line check of an extent against turn and
region spans (``account_lines``, which also names what is loose or doubled) and the census of lines
shaped like a turn start (``shaped_lines``, ``undeclared_shapes``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from models.errors import Reason

MAX_LISTED = 20

@dataclass(slots=True)
class Accounting:
    """What the accounting found for one session."""

    unit: str  # "lines" or "records"
    checked: int = 0
    in_turns: int = 0
    declared: int = 0
    unaccounted: int = 0
    overlapping: int = 0
    listed: list[str] = field(default_factory=list)
    unlisted: int = 0
    merged: int = 0
    """Lines shaped like a turn start inside a turn and not declared (the census)."""
    merged_listed: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.unaccounted or self.overlapping or self.merged)

    def codes(self) -> list[Reason]:
        """The reason codes of what was found."""
        return ([Reason.UNACCOUNTED_SOURCE] if self.unaccounted or self.overlapping else []) + (
            [Reason.POSSIBLE_MERGED_TURNS] if self.merged else [])

    def note_merged(self, lines: Iterable[str]) -> None:
        for where in lines:
            self.merged += 1
            if len(self.merged_listed) < MAX_LISTED:
                self.merged_listed.append(where)

    def note(self, where: str) -> None:
        if len(self.listed) < MAX_LISTED:
            self.listed.append(where)
        else:
            self.unlisted += 1

    def absorb(self, other: Accounting, part: str | None) -> None:
        """Add the accounting of one part of a source over several files; its places name the part."""
        self.checked += other.checked
        self.in_turns += other.in_turns
        self.declared += other.declared
        self.unaccounted += other.unaccounted
        self.overlapping += other.overlapping
        for where in other.listed:
            self.note(f"{part} {where}" if part else where)
        self.unlisted += other.unlisted
        self.merged += other.merged
        self.merged_listed.extend(f"{part} {w}" if part else w for w in other.merged_listed)
        del self.merged_listed[MAX_LISTED:]

    def reason(self) -> str | None:
        """The coverage reason when the source is not fully accounted for, else None."""
        if self.clean:
            return None
        reasons = [r for r in (self._unaccounted_reason(), self._merged_reason()) if r]
        return "; ".join(reasons)

    def _merged_reason(self) -> str | None:
        if not self.merged:
            return None
        more = f" and {self.merged - len(self.merged_listed)} more" if self.merged > len(self.merged_listed) else ""
        return (f"{Reason.POSSIBLE_MERGED_TURNS.value}: {self.merged} lines shaped like a turn start inside a "
                f"turn, neither read as one nor declared: {', '.join(self.merged_listed)}{more}")

    def _unaccounted_reason(self) -> str | None:
        if not (self.unaccounted or self.overlapping):
            return None
        parts = []
        if self.unaccounted:
            parts.append(f"{self.unaccounted} {self.unit} in no interaction and no declared region")
        if self.overlapping:
            parts.append(f"{self.overlapping} {self.unit} in more than one interaction or region")
        more = f" and {self.unlisted} more" if self.unlisted else ""
        return f"unaccounted_source: {'; '.join(parts)}: {', '.join(self.listed)}{more}"

    def as_dict(self) -> dict[str, Any]:
        out = {
            "unit": self.unit, "checked": self.checked, "inInteractions": self.in_turns,
            "inDeclaredRegions": self.declared, "unaccounted": self.unaccounted,
            "overlapping": self.overlapping, "first": list(self.listed),
        }
        if self.merged:  # only then: the documents of every other session keep their bytes
            out["possibleMergedTurns"] = self.merged
            out["firstMerged"] = list(self.merged_listed)
        return out


class LineIndex:
    """Line start offsets of one text, built once per file."""

    __slots__ = ("starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        find = text.find
        pos = find("\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        if text.endswith("\n"):
            starts.pop()  # the empty "line" after the final newline does not exist
        self.starts = starts

    @property
    def count(self) -> int:
        return len(self.starts) if self.text else 0

    def span_text(self, first: int, last: int) -> str:
        """The text of 1-based lines first..last inclusive."""
        start = self.starts[first - 1]
        end = self.starts[last] if last < len(self.starts) else len(self.text)
        return self.text[start:end]

    def non_blank(self, first: int, last: int) -> list[int]:
        """The 1-based numbers of the non-blank lines in first..last."""
        first, last = max(first, 1), min(last, self.count)
        if first > last or not self.span_text(first, last).strip():
            return []
        return [first + i for i, line in enumerate(self.span_text(first, last).split("\n")[: last - first + 1])
                if line.strip()]


def _ranges(lines: Sequence[int]) -> Iterator[str]:
    start = prev = None
    for n in lines:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            yield f"line {start}" if start == prev else f"lines {start}-{prev}"
            start = prev = n
    if start is not None:
        yield f"line {start}" if start == prev else f"lines {start}-{prev}"


def account_lines(index: LineIndex, extent: tuple[int, int], turns: Iterable[tuple[int, int]],
                  regions: Iterable[tuple[int, int]]) -> Accounting:
    """Check lines extent[0]..extent[1]: each non-blank one in exactly one turn or region span."""
    out = Accounting("lines")
    first, last = extent
    spans = sorted([(a, b, True) for a, b in turns] + [(a, b, False) for a, b in regions])
    loose: list[int] = []
    doubled: list[int] = []
    covered = first - 1  # every line up to here is covered (or outside the extent)
    for a, b, is_turn in spans:
        a, b = max(a, first), min(b, last)
        if a > b:
            continue
        if a > covered + 1:
            loose.extend(index.non_blank(covered + 1, a - 1))
        elif a <= covered:
            doubled.extend(index.non_blank(a, min(b, covered)))
        fresh = index.non_blank(max(a, covered + 1), b) if b > covered else []
        if is_turn:
            out.in_turns += len(fresh)
        else:
            out.declared += len(fresh)
        covered = max(covered, b)
    if covered < last:
        loose.extend(index.non_blank(covered + 1, last))
    out.unaccounted, out.overlapping = len(loose), len(doubled)
    out.checked = out.in_turns + out.declared + out.unaccounted
    for where in _ranges(loose):
        out.note(where)
    for where in _ranges(sorted(set(doubled))):
        out.note(f"{where} (twice)")
    return out


def shaped_lines(index: LineIndex, extent: tuple[int, int], shape: regex.Pattern) -> list[int]:
    """The census: the 1-based numbers of the lines in ``extent`` that ``shape`` matches at their start,
    each line on its own (no fence, quote or state logic)."""
    first, last = max(extent[0], 1), min(extent[1], index.count)
    if first > last:
        return []
    text = index.span_text(first, last)
    if not shape.search(text):  # the usual case: one scan of the span settles it
        return []
    return [first + i for i, line in enumerate(text.split("\n")[: last - first + 1]) if shape.match(line)]


def undeclared_shapes(found: Iterable[int], starts: set[int], regions: Iterable[tuple[int, int]],
                      declared: set[int]) -> list[int]:
    """The census lines that are no turn start, in no declared region and not declared as text."""
    spans = sorted(regions)
    out = []
    for n in found:
        if n in starts or n in declared:
            continue
        at = bisect_left(spans, (n + 1,)) - 1
        if any(a <= n <= b for a, b in spans[max(at - 8, 0):at + 1]):
            continue
        out.append(n)
    return out
