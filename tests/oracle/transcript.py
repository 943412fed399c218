"""The transcript grammar's turn-by-turn parse (the line engine's blocks, one ``Turn`` record each), kept as
the oracle of the product's table of lines (``Transcript.read``)."""

from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import regex

from models.records import ParsedSession, Region, RegionKind, ShapedLine, SourceText, Turn
from models.settings import Settings
from parsers.engine import Block, split_blocks, trim_blank_tail
from parsers.grammars import _transcript_columns as columns
from parsers.grammars.markdown import without_said
from parsers.grammars.transcript import (
    HEADER,
    _clock_only,
    _front,
    _header_shapes,
    _read_time,
    _shape,
    _speaker_label,
    _stamp,
    accepted_labels,
    sessions_of,
)
from parsers.sessions import segment_session
from parsers.speakers import role_of, split_speaker


def parse(grammar, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
    """The sessions of one input, turn by turn (``grammar``: the product's grammar object)."""
    text = source.text
    for seg in sessions_of(text, source.name):
        yield _session(text, seg)

def _session(text: str, seg) -> ParsedSession:
    zone, day, default_model = _front(seg.front)
    blocks = list(split_blocks(text, HEADER, start=seg.start, end=seg.end, first_line=seg.first_line))
    heads = [b.header for b in blocks if b.header is not None]
    ok = accepted_labels([(lb, bool(h["ts"] or h["iso"])) for h in heads if (lb := _speaker_label(h))])
    shapes = _header_shapes(heads)
    session = segment_session(text, seg, zone and zone.key)
    clock_only = 0
    for block in blocks:
        h = block.header
        label = _speaker_label(h) if h is not None else None
        starts = h is not None and (label in ok or (label is None and _shape(h) in shapes)
                                    or (label is not None and not session.turns))
        if starts:
            turn, had_clock_only = _turn(block, label, day, zone, default_model)
            clock_only += had_clock_only
            session.turns.append(turn)
        elif session.turns:
            _continue(session, block, label)
        elif block.body.strip() or h is not None:
            session.regions.append(Region(RegionKind.PREAMBLE, "text before the first turn",
                                          lines=(block.line_start, block.line_end),
                                          content=((h.group(0) if h else "") + block.body).strip("\n")))
    if clock_only:
        session.warnings.append(_clock_only(clock_only))
    for turn in session.turns:  # a turn's text ends at its last non-blank line (parsers.engine)
        turn.content = trim_blank_tail(turn.content)
    return session

def _continue(session: ParsedSession, block: Block, label: str | None) -> None:
    prev = session.turns[-1]
    prev.content += "\n" + block.header.group(0) + block.body
    prev.lines = (prev.lines[0], block.line_end)
    if label is not None:
        session.warnings.append(
            f"line {block.line_start}: {label!r}: looks like a header but the name appears once; "
            f"kept as text of turn {len(session.turns)}"
        )
        session.shaped.append(ShapedLine(block.line_start, columns.KEPT_AS_TEXT))

def _turn(block: Block, label: str | None, day: datetime | None, zone: ZoneInfo | None,
          default_model) -> tuple[Turn, int]:
    h = block.header
    if label is None:  # a timestamped notice
        speaker, model, role, kind = "System", None, "system", "notice"
    else:
        speaker, model = split_speaker(label)
        speaker = without_said(speaker)  # "ChatGPT said:" as copied from the ChatGPT page
        role = role_of(speaker)
        kind = {"system": "system", "tool": "tool_result"}.get(role, "message")
    if model is None and role == "assistant" and default_model is not None:
        model = default_model
    raw = _stamp(h)
    when, clock_only = _read_time(raw, day, zone) if raw else (None, 0)
    content = block.body
    if label is None:  # the notice's text starts right after its timestamp
        content = h.string[_stamp_end(h):h.end()] + content
    content = content.lstrip(" \t")
    if content.startswith("\n"):  # "Name:" alone on its line: the text starts on the next one
        content = content[1:]
    return Turn(speaker, role, content, when, raw, model, kind, (block.line_start, block.line_end)), clock_only


def _stamp_end(m: regex.Match) -> int:
    for group, close in (("ts", 1), ("nts", 1), ("iso", 0), ("niso", 0)):
        if m[group]:
            return m.end(group) + close
    return m.start()
