"""DiscordChatExporter plain text's turn-by-turn parse (the line engine's blocks, one ``Turn`` record each), kept as
the oracle of the product's table of lines (``DiscordTxt.read``)."""

from collections.abc import Iterator
from pathlib import PurePosixPath

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.engine import split_blocks
from parsers.grammars._lines import date_order, file_session, unreadable_times
from parsers.grammars.csv_chat import dce_channel_id
from parsers.grammars.discord_txt import _NUMERIC, HEADER, POSTAMBLE, Clock, message


def _body_end(text: str) -> int:
    """Where the messages of one file end: at the postamble, or at the end."""
    post = POSTAMBLE.search(text)
    if post is None:
        return len(text)
    return post.start() + (1 if text[post.start()] == "\n" else 0)


def _clock(stamps: list[str]) -> Clock:
    """One day/month order for the whole export, decided from every numeric date of its stamps."""
    found = ((i, _NUMERIC.fullmatch(s.strip())) for i, s in enumerate(stamps))
    runs = [(f"{m['a']}/{m['b']}/{m['c']}", i) for i, m in found if m]
    return Clock(date_order(runs) if runs else None)


def turn(author: str, stamp: str, pinned: bool, body: str, span: tuple[int, int], clock: Clock) -> Turn:
    """One message as a turn record."""
    m = message(author, pinned, body)
    return Turn(m.speaker, m.role, m.content, clock.read(stamp), stamp, None, m.kind, lines=span, extra=m.extra)


def parse(grammar, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
    """The sessions of one input, turn by turn (``grammar``: the product's grammar object)."""
    pages = [(p.text, PurePosixPath(p.name).name) for p in source.parts] or [(source.text, None)]
    session = file_session(source) if not source.parts else ParsedSession(None, "none", [],
                                                                           raw=[t for t, _ in pages])
    channel = dce_channel_id(PurePosixPath(source.parts[0].name).name if source.parts else source.name)
    if channel and session.session_id is None:
        session.session_id, session.id_source = channel, "source:channel id in the exporter's file name"
    clock = _clock([m["stamp"] for text, _ in pages for m in HEADER.finditer(text, 0, _body_end(text))])
    if clock.order is not None and clock.order.basis not in ("year", "none"):
        session.assumptions.append(f"numeric dates read {clock.order.order}: {clock.order.evidence}")
    unread, unreadable = 0, [part for text, part in pages if not text]
    for text, part in pages:
        unread += _page(session, text, part, clock)
    if source.parts:
        session.meta["files"] = [{"name": PurePosixPath(p.name).name, "sha256": p.sha256, "sizeBytes": p.size}
                                 for p in source.parts]
    if unreadable:
        session.coverage_reason = f"parts of the export could not be read: {', '.join(unreadable)}"
    if unread:
        session.warnings.append(unreadable_times(unread, "not a date shape the exporter writes"))
    yield session


def _page(session: ParsedSession, text: str, part: str | None, clock: Clock) -> int:
    """One file of the export (a part of a partitioned one): its turns and regions; the turns whose
    time could not be read."""
    end = _body_end(text)
    unread = 0
    for block in split_blocks(text, HEADER, end=end):
        span = (block.line_start, block.line_end)
        if block.header is None:
            _preamble(session, block.body, span, part)
            continue
        h = block.header
        t = turn(h["author"], h["stamp"], bool(h["pinned"]), block.text, span, clock)
        t.part = part
        unread += t.time is None
        session.turns.append(t)
    post = POSTAMBLE.search(text)
    if post:
        first = text.count("\n", 0, end) + 1
        session.regions.append(Region(RegionKind.BOILERPLATE, "the exporter's closing lines with its message "
                                      "count", lines=(first, first + 2), part=part))
        count = regex.sub(r"\D", "", post["n"])
        session.meta["exportedMessages"] = session.meta.get("exportedMessages", 0) + int(count or 0)
    return unread


def _preamble(session: ParsedSession, body: str, span: tuple[int, int], part: str | None) -> None:
    fields = dict(ln.split(": ", 1) for ln in body.split("\n") if ": " in ln and not ln.startswith("="))
    guild, channel = fields.get("Guild"), fields.get("Channel")
    session.title = session.title or " / ".join(x for x in (guild, channel) if x) or None
    session.meta.update({k.lower(): v for k, v in fields.items() if k in ("Guild", "Channel", "Topic", "After",
                                                                          "Before")})
    session.regions.append(Region(RegionKind.SESSION_HEADER, "the exporter's preamble (guild, channel, topic, "
                                  "range)", lines=span, part=part))
