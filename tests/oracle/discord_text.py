"""Discord text's turn-by-turn parse (the line engine's blocks, one ``Turn`` record each), kept as the oracle
of the product's table of lines (``DiscordText.read``)."""

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import regex

from models.records import ParsedSession, Region, RegionKind, ShapedLine, SourceText, Turn
from models.settings import Settings
from parsers.engine import split_blocks
from parsers.grammars import _discord_columns as columns
from parsers.grammars._discord_columns import WRAP
from parsers.grammars._lines import day_of, line_count
from parsers.grammars.discord_text import EDITED, HEADER, _clock, _note_order, _order, _time_notes, _under_reply
from parsers.sessions import file_name_id


def midnight_passed(previous: datetime, when: datetime) -> bool:
    """True when a continuation's clock, read on its author line's day, wrapped past midnight."""
    return previous - when > WRAP


def parse(grammar, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
    """The sessions of one input, turn by turn (``grammar``: the product's grammar object)."""
    text = source.text
    sid = file_name_id(source.name)
    session = ParsedSession(sid, "file-name" if sid else "none", [], raw=text)
    session.lines = (1, line_count(text))
    groups: list[tuple[Turn, regex.Match]] = []  # each turn with the author line it belongs to
    author: regex.Match | None = None
    reply: tuple[str, int] | None = None
    for block in split_blocks(text, HEADER):
        h, span = block.header, (block.line_start, block.line_end)
        if h is None:
            session.regions.append(Region(RegionKind.PREAMBLE, "text before the first author line (a channel"
                                          " title or a note)", lines=span))
        elif h["divider"]:
            session.regions.append(Region(RegionKind.BOILERPLATE, "the client's date divider", lines=span))
        elif h["reply"]:
            reply = (h["reply"].strip(), block.line_start)
        elif not h["name"] and author is not None and not block.body.strip():
            session.regions.append(Region(RegionKind.BOILERPLATE, columns.EMPTY_STAMP, lines=span))
        elif h["name"] or author is not None:
            author = h if h["name"] else author
            turn = _turn(author, h, block.text, span)
            if reply is not None:
                turn.extra = {**(turn.extra or {}), "reply": reply[0]}
                session.shaped.append(ShapedLine(turn.lines[0], _under_reply(reply[1])))
                turn.lines = (reply[1], turn.lines[1])
                reply = None
            session.turns.append(turn)
            groups.append((turn, author))
        else:  # a continuation stamp before any author line: nobody's message
            session.regions.append(Region(RegionKind.PREAMBLE, "a continuation stamp before the first author"
                                          " line", lines=span))
    _times(session, groups)
    _replies(session.turns)
    yield session


def _replies(turns: list[Turn]) -> None:
    """Split each reply context into the person replied to and the preview: the longest author name
    of the paste the context starts with, else its first word."""
    names = sorted({t.speaker for t in turns}, key=len, reverse=True)
    for turn in turns:
        context = (turn.extra or {}).pop("reply", None)
        if context is None:
            continue
        to = next((n for n in names if context == n or context.startswith(n + " ")), context.split(" ", 1)[0])
        turn.extra["replyTo"] = to
        turn.extra["replyPreview"] = context[len(to):].strip() or None


def _turn(author: regex.Match, h: regex.Match, body: str, span: tuple[int, int]) -> Turn:
    """One message: the author line's name, the stamp (its own, or the continuation's) as raw time."""
    if body.startswith("\n"):
        body = body[1:]  # the author line (or a stamp alone on its line) ends where the text starts
    extra: dict[str, Any] = {}
    stripped = body.rstrip()
    for marker in EDITED:
        if stripped.endswith(marker):
            body, extra["edited"] = stripped[: -len(marker)].rstrip(), True
            break
    name = author["name"].strip()
    role = "user"
    if author["tag"]:
        role, extra["bot"] = "other", author["tag"]
    raw = h["stamp"] if h["name"] else h["cstamp"]
    return Turn(name, role, body, None, raw, None, "message", span, extra=extra or None)


def _times(session: ParsedSession, groups: list[tuple[Turn, regex.Match]]) -> None:
    """Dates of every turn, once the whole file decided the day/month order."""
    runs: list[tuple[str, int]] = []
    for i, (_, author) in enumerate(groups):
        if author["date"] and (not runs or runs[-1][0] != author["date"]):
            runs.append((author["date"], i))
    order = _order(runs)
    _note_order(session, order, runs)
    relative = unreadable = 0
    previous: tuple[regex.Match, datetime] | None = None
    for turn, author in groups:
        if author["rel"]:
            relative += 1
            turn.extra = {**(turn.extra or {}), "relativeDay": author["rel"]}
            continue
        day = day_of(author["date"], order.order)
        delta = _clock(turn.time_raw if turn.time_raw != author["stamp"] else author["clock"])
        if day is None or delta is None:
            unreadable += 1
            continue
        when = day + delta
        if previous is not None and previous[0] is author and midnight_passed(previous[1], when):
            when += timedelta(days=1)  # midnight passed within one author's run of messages
        turn.time, previous = when, (author, when)
    _time_notes(session, relative, unreadable, any(t.time_raw != a["stamp"] for t, a in groups if not a["rel"]))
