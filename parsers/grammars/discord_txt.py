"""DiscordChatExporter's plain-text export (``--format PlainText``: ``Guild - channel [id].txt``).

Shape (verified against the exporter's own writer)::

    ==============================================================   <- 62 '=': the preamble,
    Guild: Test Server                                                   a session_header region
    Channel: Text Channels / general                                     (Topic, After and Before
    Topic: Chat about anything                                           lines when the export has
    ==============================================================       them)

    [01-Jan-20 01:33 AM] Tyrrrz#5447                                 <- a message: [date] author,
    Hello world                                                          " (pinned)" when pinned;
                                                                         its content, a blank line,
    [01-Jan-20 01:35 AM] Ann (pinned)                                    then {Attachments} (URLs),
    {Attachments}                                                        {Embed}, {Stickers} and
    https://cdn.discordapp.com/attachments/1/2/image.png                {Reactions} blocks, each
                                                                         ended by a blank line
    {Reactions}
    👍 (2) 🎉

    ==============================================================   <- the postamble with the
    Exported 2 message(s)                                                exporter's own count
    ==============================================================

Decisions:
- One file is one channel, one session; the title is ``Guild / Channel``, the id is the channel id
  DiscordChatExporter puts in brackets in the file name (``Guild - channel [id].txt``). The parts of a
  ``--partition`` export (``<name>.txt``, ``<name> [part 2].txt``...) are grouped by ingest and read in
  part order as one session, every turn and region naming its part; each part keeps its own preamble
  and closing count.
- Every ``[date] author`` line starts one turn (B2); its content runs to the first section block
  (``{Attachments}``...) after a blank line. Attachments and stickers become ``[attachment: url]`` and
  ``[sticker: url]`` lines after the text, an embed an ``[embed: first line]`` line only when the message
  has nothing else (as the JSON export's grammar does); embeds, stickers, reactions and ``pinned`` go to
  ``extra`` (the lines stay in the turn's span). A line in a message that itself looks like
  ``[date] author`` starts a turn: the export gives no way to tell them apart.
- The exporter writes a system notification (a pin, a join, a call) as its fallback text under the
  user who caused it; the phrases it uses (``NOTICES``, data) make the turn a System turn with that
  user as ``actor``.
- Dates: the exporter's old default ``01-Jan-20 01:33 AM``, ISO 8601, and numeric dates with a 12 h
  or 24 h clock (``1/2/2020 1:33 PM``, ``02.01.2020 13:33``), their day/month order decided from the
  whole file as for WhatsApp (the evidence is recorded); local time without a zone (``source_tz``).
- The independent count is the postamble's ``Exported N message(s)``, else the header lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import split_blocks
from parsers.grammars._chatjson import compact, iso_time
from parsers.grammars._lines import date_order, file_session, unreadable_times
from parsers.grammars.csv_chat import dce_channel_id, dce_time
from parsers.registry import register
from parsers.timeparse import clock_24h, from_parts

RULE = "=" * 62
HEADER = regex.compile(r"^\[(?P<stamp>[^\[\]\n]*\d:\d\d[^\[\]\n]*)\] (?P<author>[^\n]+?)(?P<pinned> \(pinned\))?$",
                       regex.MULTILINE)
POSTAMBLE = regex.compile(r"(?:^|\n)" + RULE + r"\nExported (?P<n>[\d,.\u00a0\u202f ]+) message\(s\)\n" + RULE
                          + r"\n?\Z")
SECTIONS = {"{Attachments}": "attachments", "{Embed}": "embeds", "{Stickers}": "stickers", "{Reactions}": "reactions"}
NOTICES = regex.compile(
    r"(?:Added .+ to the group\.|Removed .+ from the group\.|Left the group\.|Started a call(?: that lasted .+)?\.|"
    r"Changed the channel name: .+|Changed the channel icon\.|Pinned a message\.|Joined the server\.|"
    r"Boosted the server!?|Started a thread\.?.*|Created a thread\.?.*)")
_NUMERIC = regex.compile(r"(?P<a>\d{1,4})[./-](?P<b>\d{1,2})[./-](?P<c>\d{1,4})[, ]+(?P<h>\d{1,2}):(?P<mi>\d\d)"
                         r"(?::(?P<s>\d\d))?\s*(?P<ampm>[AaPp]\.?[Mm]\.?)?")


def _body_end(text: str) -> int:
    """Where the messages of one file end: at the postamble, or at the end."""
    post = POSTAMBLE.search(text)
    if post is None:
        return len(text)
    return post.start() + (1 if text[post.start()] == "\n" else 0)


def _content(lines: list[str]) -> tuple[str, dict[str, Any]]:
    """A message body's text and its section blocks (module docstring)."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    cut = next((i for i, ln in enumerate(lines) if ln in SECTIONS and (i == 0 or not lines[i - 1].strip())), None)
    if cut is None:
        return "\n".join(lines), {}
    text = "\n".join(lines[:max(cut - 1, 0)])
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for ln in lines[cut:]:
        if ln in SECTIONS:
            current = sections.setdefault(SECTIONS[ln], [])
            if ln == "{Embed}":
                current.append("")
        elif current is not None and ln.strip():
            if current is sections.get("embeds"):  # an embed's lines are one entry
                current[-1] = f"{current[-1]}\n{ln}".lstrip("\n")
            else:
                current.append(ln)
    return text, sections


class _Clock:
    """The turns' times: one day/month order for the whole file, decided from its numeric dates."""

    def __init__(self, stamps: list[str]) -> None:
        found = ((i, _NUMERIC.fullmatch(s.strip())) for i, s in enumerate(stamps))
        runs = [(f"{m['a']}/{m['b']}/{m['c']}", i) for i, m in found if m]
        self.order = date_order(runs) if runs else None

    def read(self, stamp: str) -> datetime | None:
        stamp = stamp.strip()
        if stamp[:4].isdigit() and stamp[4:5] == "-" and "T" in stamp:
            return iso_time(stamp)
        m = _NUMERIC.fullmatch(stamp)
        if m is None:
            return dce_time(stamp)
        a, b, c = int(m["a"]), int(m["b"]), int(m["c"])
        order = "ymd" if a > 31 else self.order.order if self.order else "dmy"
        y, mo, d = (a, b, c) if order == "ymd" else (c, b, a) if order == "dmy" else (c, a, b)
        hour = clock_24h(int(m["h"]), m["ampm"])
        if hour is None:
            return None
        return from_parts(y + 2000 if y < 100 else y, mo, d, hour, int(m["mi"]), int(m["s"] or 0))


def _turn(h: regex.Match, body: str, span: tuple[int, int], clock: _Clock) -> Turn:
    text, sections = _content(body.split("\n")[1:] if body.startswith("\n") else body.split("\n"))
    marks = [*(f"[attachment: {u}]" for u in sections.pop("attachments", [])),
             *(f"[sticker: {u}]" for u in sections.get("stickers", []))]
    if not text and not marks:  # a bot's embed-only post: a marker, as the JSON export's grammar writes
        marks = [f"[embed: {e.split(chr(10))[0]}]" for e in sections.get("embeds", [])]
    content = "\n".join(x for x in (text, *marks) if x)
    reactions = " ".join(sections.get("reactions", [])).strip()
    extra = compact({"pinned": bool(h["pinned"]), "embeds": sections.get("embeds"),
                     "stickers": sections.get("stickers"), "reactions": reactions})
    author, stamp = h["author"], h["stamp"]
    if NOTICES.fullmatch(text):
        return Turn("System", "system", content, clock.read(stamp), stamp, None, "notice", lines=span,
                    extra={**(extra or {}), "actor": author})
    return Turn(author, "user", content, clock.read(stamp), stamp, None, "message", lines=span, extra=extra)


def explained_share(sample: str) -> float:
    """1.0 for a text that opens with the exporter's preamble and has a message line; else 0: a
    ``[time] name`` line alone is too common to claim."""
    head = sample.lstrip("\ufeff")
    if not head.startswith(RULE + "\nGuild: ") or HEADER.search(head) is None:
        return 0.0
    return 1.0


@register
class DiscordTxt(Grammar):
    name = "discord-txt"
    detect_needs = ("Guild: ",)  # the preamble its detector requires
    version = "1"
    description = ("DiscordChatExporter plain-text export (Guild/Channel preamble, [date] author lines, "
                   "{Attachments}/{Embed}/{Reactions} blocks, Exported N message(s))")
    turn_shape = HEADER.pattern
    example = "[01-Jan-20 01:33 AM] Tyrrrz#5447\nHello world"
    group_files = r".+(?P<part> \[part \d+\])\.txt"

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        pages = [(p.text, PurePosixPath(p.name).name) for p in source.parts] or [(source.text, None)]
        session = file_session(source) if not source.parts else ParsedSession(None, "none", [],
                                                                               raw=[t for t, _ in pages])
        channel = dce_channel_id(PurePosixPath(source.parts[0].name).name if source.parts else source.name)
        if channel and session.session_id is None:
            session.session_id, session.id_source = channel, "source:channel id in the exporter's file name"
        clock = _Clock([m["stamp"] for text, _ in pages for m in HEADER.finditer(text, 0, _body_end(text))])
        if clock.order is not None and clock.order.basis not in ("year", "none"):
            session.assumptions.append(f"numeric dates read {clock.order.order}: {clock.order.evidence}")
        unread, unreadable = 0, [part for text, part in pages if not text]
        for text, part in pages:
            unread += self._page(session, text, part, clock)
        if source.parts:
            session.meta["files"] = [{"name": PurePosixPath(p.name).name, "sha256": p.sha256, "sizeBytes": p.size}
                                     for p in source.parts]
        if unreadable:
            session.coverage_reason = f"parts of the export could not be read: {', '.join(unreadable)}"
        if unread:
            session.warnings.append(unreadable_times(unread, "not a date shape the exporter writes"))
        yield session

    def _page(self, session: ParsedSession, text: str, part: str | None, clock: _Clock) -> int:
        """One file of the export (a part of a partitioned one): its turns and regions; the turns whose
        time could not be read."""
        end = _body_end(text)
        unread = 0
        for block in split_blocks(text, HEADER, end=end):
            span = (block.line_start, block.line_end)
            if block.header is None:
                self._preamble(session, block.body, span, part)
                continue
            turn = _turn(block.header, block.text, span, clock)
            turn.part = part
            unread += turn.time is None
            session.turns.append(turn)
        post = POSTAMBLE.search(text)
        if post:
            first = text.count("\n", 0, end) + 1
            session.regions.append(Region(RegionKind.BOILERPLATE, "the exporter's closing lines with its message "
                                          "count", lines=(first, first + 2), part=part))
            count = regex.sub(r"\D", "", post["n"])
            session.meta["exportedMessages"] = session.meta.get("exportedMessages", 0) + int(count or 0)
        return unread

    @staticmethod
    def _preamble(session: ParsedSession, body: str, span: tuple[int, int], part: str | None) -> None:
        fields = dict(ln.split(": ", 1) for ln in body.split("\n") if ": " in ln and not ln.startswith("="))
        guild, channel = fields.get("Guild"), fields.get("Channel")
        session.title = session.title or " / ".join(x for x in (guild, channel) if x) or None
        session.meta.update({k.lower(): v for k, v in fields.items() if k in ("Guild", "Channel", "Topic", "After",
                                                                              "Before")})
        session.regions.append(Region(RegionKind.SESSION_HEADER, "the exporter's preamble (guild, channel, topic, "
                                      "range)", lines=span, part=part))

    def count_turns(self, raw: Any) -> int:
        if isinstance(raw, list):  # the parts of a partitioned export
            return sum(self.count_turns(text) for text in raw)
        if not isinstance(raw, str):
            return 0
        post = POSTAMBLE.search(raw)
        if post:
            digits = regex.sub(r"\D", "", post["n"])
            if digits:
                return int(digits)
        return len(HEADER.findall(raw))
