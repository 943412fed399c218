"""IRC's turn-by-turn parse (the line engine's blocks, each line's shape matched in Python), kept as the
oracle of the product's table of lines (``Irc.read``)."""

import re
from collections.abc import Iterator
from datetime import datetime

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.engine import split_blocks
from parsers.grammars import _irc_columns as columns
from parsers.grammars._lines import line_count
from parsers.grammars.irc import (
    _CHANNEL,
    CLOCK_ONLY,
    DIALECTS,
    Facts,
    _conclude,
    _dialect,
    _new_session,
    event_of,
    file_day,
)
from parsers.timeparse import parse_iso

# irc's line shapes (``_irc_columns.SHAPES`` in Rust's syntax), tried in this order.
_NICK = r"[@+%~&!]?(?P<nick>[^\s>]+)"
_MESSAGE = re.compile(rf"^<[ ]?{_NICK}>[ \t]?(?P<text>.*)$", re.S)
_ACTION = re.compile(r"^\*[ \t]*(?P<nick>[^\s*]+)[ \t]?(?P<text>.*)$", re.S)  # "*nick waves" keeps its author
_NOTICE = re.compile(r"^-(?P<nick>[^\s-][^\s]*?)(?:\([^)]*\))?-(?:[ \t]|$)(?P<text>.*)$", re.S)
_EVENT = re.compile(r"^(?:\*\*\*|-!-|=!=|-->|<--|---|--)[ \t]+(?P<text>.*)$", re.S)


def parse(grammar, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
    """The sessions of one input, turn by turn (``grammar``: the product's grammar object)."""
    text = source.text
    dialect, _, _ = _dialect(text[:65536])
    dialect = dialect or "supybot"
    session = _new_session(dialect, text, line_count(text))
    day = file_day(source.name) if dialect in CLOCK_ONLY else None
    from_name = day is not None
    undated = unreadable = markers = named = 0
    turns = session.turns
    for block in split_blocks(text, DIALECTS[dialect]):
        h = block.header
        if h is None:
            session.meta["preamble"] = block.body
            session.regions.append(Region(RegionKind.PREAMBLE, "text before the first log line",
                                          lines=(block.line_start, block.line_end)))
            continue
        if h.groupdict().get("marker"):
            markers += 1
            session.regions.append(Region(RegionKind.BOILERPLATE, columns.marker_reason(dialect),
                                          lines=(block.line_start, block.line_end)))
            if dialect in CLOCK_ONLY and (sets := columns.day_setter(block.body)) is not columns.UNSET:
                day, from_name = sets, False
            continue
        if dialect in CLOCK_ONLY:
            raw = h["clock"]
            when = None
            if day is None:
                undated += 1
            else:
                g = h.groupdict()
                when = columns.clock_time(day, g.get("mon"), g.get("dd"), h["h"], h["mi"], h["s"])
                unreadable += when is None
                named += from_name
        else:
            raw = h["ts"]
            when = parse_iso(raw)
            unreadable += when is None
        turns.append(_turn(block.text, dialect, when, raw, (block.line_start, block.line_end)))
    channels = {c for t in turns if t.role == "system" for c in _CHANNEL.findall(t.content)}
    first_day = next((t.time.date() for t in turns if t.time is not None), None)
    _conclude(session, source.name, Facts(markers, undated, unreadable, channels, first_day, named=named))
    yield session


def _turn(body: str, dialect: str, when: datetime | None, raw: str, lines: tuple[int, int]) -> Turn:
    if dialect == "weechat":
        # weechat puts the nick (or an event prefix) in a column of its own: rewrite it as the
        # other dialects write it so one set of line shapes serves all three.
        prefix, _, text = body.partition("\t")
        prefix = prefix.strip()
        if prefix in columns.WEECHAT_EVENTS:
            body = f"{prefix} {text}"
        elif prefix == "*":
            body = f"* {text}"
        elif not prefix:  # no prefix: a line of the buffer's own (server messages)
            body = f"-- {text}"
        elif len(prefix) > 2 and prefix[0] == "<" and prefix[-1] == ">":  # a nick already in brackets
            body = f"{prefix} {text}"
        else:
            body = f"<{prefix}> {text}"
    else:
        body = body.lstrip(" \t")
    if m := _MESSAGE.match(body):
        return Turn(m["nick"], "user", m["text"], when, raw, None, "message", lines)
    if m := _EVENT.match(body):
        kind, _, extra = event_of(m["text"])
        return Turn("System", "system", m["text"], when, raw, None, kind, lines, extra=extra or None)
    if m := _ACTION.match(body):
        return Turn(m["nick"], "user", m["text"], when, raw, None, "action", lines)
    if m := _NOTICE.match(body):
        return Turn(m["nick"], "user", m["text"], when, raw, None, "notice", lines)
    return Turn("System", "system", body, when, raw, None, "system", lines)
