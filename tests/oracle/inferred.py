"""The inferred grammar's turn-by-turn parse (the line engine's blocks under the learnt header), kept as
the oracle of the product's table of lines (``Inferred.read``)."""

from collections import Counter
from collections.abc import Iterator

import regex

from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.engine import split_blocks
from parsers.grammars._inferred_columns import stamp_of as _stamp_of
from parsers.grammars.inferred import (
    _NOT_A_LOG,
    MIN_LINES,
    MIN_SHARE,
    SAMPLE_LINES,
    _conclude,
    _new_session,
    _preamble,
    shape,
)
from parsers.speakers import role_of


def infer(text: str) -> tuple[str, float, list[int]] | None:
    """The learnt header of a whole text as the grammar learnt it before its surveys: the dominant shape of
    its first ``SAMPLE_LINES`` lines, with its share and first line numbers."""
    if _NOT_A_LOG.match(text):
        return None
    numbered = [(i, ln) for i, ln in enumerate(text.split("\n", SAMPLE_LINES)[:SAMPLE_LINES], 1) if ln.strip()]
    shapes: Counter[str] = Counter()
    where: dict[str, list[int]] = {}
    for number, line in numbered:
        s = shape(line)
        if s:
            shapes[s] += 1
            where.setdefault(s, []).append(number)
    if not shapes:
        return None
    pattern, count = max(shapes.items(), key=lambda kv: (kv[1], kv[0]))
    share = count / len(numbered)
    if count < MIN_LINES or share < MIN_SHARE:
        return None
    return pattern, share, where[pattern][:5]


def parse(grammar, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
    """The sessions of one input, turn by turn (``grammar``: the product's grammar object)."""
    text = source.text
    found = infer(text)
    if found is None:
        return
    pattern = found[0]
    header = regex.compile(pattern, regex.MULTILINE)
    session = _new_session(pattern, text)
    clock_only = unreadable = 0
    for block in split_blocks(text, header):
        if block.header is None:
            _preamble(session, block.body, (block.line_start, block.line_end))
            continue
        h = block.header
        prefix = h.string[h.start():h.start("name")]
        speaker = h["name"].strip()
        raw, when, bad, clock = _stamp_of(prefix)
        unreadable += bad
        clock_only += clock
        extra = {"header": h.group(0).strip()} if raw is None and prefix.strip() else None
        session.turns.append(Turn(speaker, role_of(speaker), block.text, when, raw, None, "message",
                                  (block.line_start, block.line_end), extra=extra))
    _conclude(session, found, source.name, len(session.turns), clock_only, unreadable)
    yield session
