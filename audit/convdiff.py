"""A readable diff of two revisions of a session document: their interactions, compared as ``diff -u``
compares lines (an interaction is its speaker, time and content), in hunks with three interactions of
context. ``reconstruct diff`` prints it as text or JSON; the byte-level patch is validators/diffjson.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

import orjson

from models.errors import Reason, ReconstructError

CONTEXT = 3  # interactions of context around a change, as diff -u's three lines


class ConversationDiffError(ReconstructError):
    """A revision that is not a session document with interactions."""


@dataclass(frozen=True, slots=True)
class Turn:
    ordinal: int | None
    speaker: str
    date: str | None
    content: str

    def same(self) -> tuple[str, str | None, str]:
        """What makes two interactions equal (their ordinals shift when one is inserted before them)."""
        return self.speaker, self.date, self.content


@dataclass(frozen=True, slots=True)
class Line:
    op: str  # " " unchanged (context), "-" only in the base revision, "+" only in the result
    turn: Turn


@dataclass(frozen=True, slots=True)
class Hunk:
    a_start: int  # 1-based position of the first interaction in the base revision (0 when a_count is 0)
    a_count: int
    b_start: int
    b_count: int
    lines: list[Line]


@dataclass(frozen=True, slots=True)
class ConversationDiff:
    document: str
    rev_a: str
    rev_b: str
    hunks: list[Hunk]


def turns(data: bytes, where: str) -> list[Turn]:
    """The interactions of a session document's bytes."""
    try:
        items = orjson.loads(data)["artifacts"]["Chatthistorik"]["interactions"]
        return [Turn(i.get("ordinal"), i["speaker"], i.get("date"), i["content"]) for i in items]
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ConversationDiffError(Reason.SCHEMA, f"not a session document with interactions ({exc!r})",
                                    path=where) from None


def compare(document: str, rev_a: str, a: list[Turn], rev_b: str, b: list[Turn]) -> ConversationDiff:
    """The hunks that turn the interactions ``a`` into ``b``."""
    matcher = SequenceMatcher(None, [t.same() for t in a], [t.same() for t in b], autojunk=False)
    return ConversationDiff(document, rev_a, rev_b, [_hunk(group, a, b) for group in
                                                     matcher.get_grouped_opcodes(CONTEXT)])


def _hunk(group: list[tuple[str, int, int, int, int]], a: list[Turn], b: list[Turn]) -> Hunk:
    lines: list[Line] = []
    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            lines += [Line(" ", t) for t in b[j1:j2]]
            continue
        lines += [Line("-", t) for t in a[i1:i2]] + [Line("+", t) for t in b[j1:j2]]
    first, last = group[0], group[-1]
    a_count, b_count = last[2] - first[1], last[4] - first[3]
    return Hunk(first[1] + 1 if a_count else first[1], a_count, first[3] + 1 if b_count else first[3], b_count,
                lines)


def unified(diff: ConversationDiff) -> str:
    """The diff as ``diff -u`` text: a header line per interaction (ordinal, time, speaker), then its
    content indented; empty when the revisions have the same interactions."""
    if not diff.hunks:
        return ""
    out = [f"--- {diff.document} {diff.rev_a}", f"+++ {diff.document} {diff.rev_b}"]
    for h in diff.hunks:
        out.append(f"@@ -{h.a_start},{h.a_count} +{h.b_start},{h.b_count} @@")
        for line in h.lines:
            out += _render(line)
    return "\n".join(out) + "\n"


def _render(line: Line) -> list[str]:
    t = line.turn
    head = f"{line.op}#{t.ordinal if t.ordinal is not None else '?'} {t.date or '-'} {t.speaker}"
    return [head, *(f"{line.op}    {text}" for text in t.content.split("\n"))]

