"""Chat logs as CSV or TSV: a header row naming the columns, then one message per record.

Layouts are data (``LAYOUTS``): a layout names the columns of author, time and text (and the ones
kept as facts), matched against the header by name, case and spacing aside. First the exact header of
known exporters, then a generic layout that accepts the usual names:

- DiscordChatExporter's CSV (``AuthorID,Author,Date,Content,Attachments,Reactions``; attachments
  are URLs separated by commas, reactions ``emoji (count)``), dates in ISO 8601 (newer releases) or
  its old default ``01-Jan-20 01:33 AM``;
- KakaoTalk's CSV (``Date,User,Message``, the Mac app's export; local times ``2024-03-01 12:34:56``
  with no zone), its attachment placeholders (``사진``, ``Photo``, ``파일: a.pdf``) turns of kind
  ``media`` (``_kakaotalk_data``, shared with the text grammar ``kakaotalk``);
- any CSV whose header has a time column (``timestamp``, ``date``, ``datetime``, ``time``,
  ``created_at``, ``sent_at``, ``message date``), an author column (``author``, ``sender``,
  ``sender name``, ``from``, ``user``, ``username``, ``name``, ``speaker``, ``role``) and a text column
  (``message``, ``text``, ``content``, ``body``); the delimiter is a comma, a semicolon or a tab, the one
  that makes the header a layout's.

Decisions:
- One file is one session (its id from the file name where it carries one, as every text export),
  every record one turn (B1, B2), in file order (an exporter writes them in its order; nothing is
  sorted by guess). A multi-line message is one quoted field over several lines: its turn spans them.
- The header row is a ``session_header`` region; a record with fewer or more fields than the header
  is still a turn, kept as its raw line with ``malformedRecord`` in ``extra``.
- Times: ISO 8601 (with or without a zone: without one the source zone applies) and DiscordChatExporter's
  old ``dd-MMM-yy hh:mm tt``; any other shape is kept raw and left empty with one warning (a day-first
  or month-first date is never guessed).
- A role column (``user``, ``assistant``, ``system``) gives the turn's role; otherwise every author is a
  user. Attachments become ``[attachment: url]`` lines after the text; other columns go to ``extra``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import regex

from models.errors import ParseError, Reason
from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars import _kakaotalk_data as kakaotalk_data
from parsers.grammars._chatjson import compact, iso_time
from parsers.grammars._lines import file_session, unreadable_times
from parsers.registry import register
from parsers.timeparse import clock_24h, from_parts

DELIMITERS = (",", ";", "\t")
ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "bot": "assistant",
         "model": "assistant", "system": "system", "tool": "tool"}
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                       "nov", "dec"), 1)}
_DCE_OLD = regex.compile(r"(?P<d>\d{1,2})-(?P<mon>[A-Za-z]{3})-(?P<y>\d{2}) "
                         r"(?P<h>\d{1,2}):(?P<mi>\d{2}) (?P<ampm>[AP]M)")


_SEPARATORS = regex.compile(r"[\s_\-]+")


def _norm(name: str) -> str:
    return _SEPARATORS.sub(" ", name.strip().lstrip("\ufeff")).lower()


_APART = "\x00"
"""Joins a header's names for ``norms``: no separator run crosses it, and ``lower`` reads it as a name's end."""


def norms(header: list[str]) -> list[str]:
    """``_norm`` of every name, in one substitution over the names joined by ``_APART``; one by one when a
    name holds it."""
    names = _SEPARATORS.sub(" ", _APART.join([h.strip().lstrip("\ufeff") for h in header])).lower().split(_APART)
    return names if len(names) == len(header) else [_norm(h) for h in header]


@dataclass(frozen=True, slots=True)
class Layout:
    """Which columns hold the author, the time and the text (each: the names it may have)."""

    name: str
    author: tuple[str, ...]
    time: tuple[str, ...]
    text: tuple[str, ...]
    attachments: tuple[str, ...] = ()
    exact: tuple[str, ...] | None = None
    """The whole header, when the layout is one exporter's."""
    media: str | None = None
    """The exporter's attachment placeholders as one pattern: a message that is one of them in full is
    a turn of kind ``media``."""

    def columns(self, names: list[str]) -> dict[str, int] | None:
        """The columns of a header whose names are ``names`` (``norms``), or None when it is not this layout's."""
        if self.exact is not None and names != norms(list(self.exact)):
            return None
        present = set(names)
        found = {}
        for field in ("author", "time", "text", "attachments"):
            hits = [names.index(n) for n in getattr(self, field) if n in present]
            if hits:
                found[field] = min(hits)
        return found if {"author", "time", "text"} <= found.keys() else None


LAYOUTS = (
    Layout("discordchatexporter", ("author",), ("date",), ("content",), ("attachments",),
           exact=("AuthorID", "Author", "Date", "Content", "Attachments", "Reactions")),
    # KakaoTalk's CSV (the Mac app's export): 2024-03-01 12:34:56,"name","text", local time with no zone
    Layout("kakaotalk", ("user",), ("date",), ("message",), exact=("Date", "User", "Message"),
           media=kakaotalk_data.MEDIA_PATTERN),
    Layout("generic", ("author", "sender", "sender name", "from", "user", "username", "user name", "name",
                       "speaker", "role"),
           ("timestamp", "date", "datetime", "date time", "time", "created at", "sent at", "message date"),
           ("message", "text", "content", "body", "message text"), ("attachments", "attachment")),
)


def _header(text: str) -> tuple[str, Layout, dict[str, int], list[str]] | None:
    """(delimiter, layout, its columns, the header's names) of a text whose first line is a known header."""
    first = text.split("\n", 1)[0]
    for delimiter in DELIMITERS:
        if delimiter not in first:
            continue
        try:
            header = next(csv.reader([first], delimiter=delimiter), [])
        except csv.Error:  # a stray carriage return or NUL in a raw sample: no header of ours
            continue
        names = norms(header)
        for layout in LAYOUTS:
            cols = layout.columns(names)
            if cols is not None:
                return delimiter, layout, cols, header
    return None


def dce_time(raw: str) -> datetime | None:
    """DiscordChatExporter's old default ``01-Jan-20 01:33 AM`` (local time, no zone)."""
    m = _DCE_OLD.fullmatch(raw.strip())
    month = _MONTHS.get(m["mon"].lower()) if m else None
    hour = clock_24h(int(m["h"]), m["ampm"]) if month else None
    return from_parts(2000 + int(m["y"]), month, int(m["d"]), hour, int(m["mi"])) if hour is not None else None


_DCE_NAME = regex.compile(r"\[(?P<id>\d{15,21})\](?: \[part \d+\])?\.[A-Za-z]+$")


def dce_channel_id(name: str) -> str | None:
    """The channel id DiscordChatExporter puts in its file names (``Guild - channel [id].csv``)."""
    m = _DCE_NAME.search(name)
    return m["id"] if m else None


def _time(raw: str) -> datetime | None:
    raw = raw.strip()
    if not raw:
        return None
    return iso_time(raw) if raw[:4].isdigit() and raw[4:5] == "-" else dce_time(raw)


def _records(text: str, delimiter: str) -> Iterator[tuple[list[str], tuple[int, int], str]]:
    """(fields, 1-based line span, raw text) of every record after the header."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    feed = iter(enumerate(lines[1:], start=2))
    current = {"line": 1}

    def source():
        for number, line in feed:
            current["line"] = number
            yield line + "\n"  # the reader needs the line end to keep it inside a quoted field

    reader = csv.reader(source(), delimiter=delimiter, strict=False)
    start = 2
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error:  # a quote never closed: the rest of the file is one damaged record
            fields = []
            current["line"] = len(lines)
        end = current["line"]
        if (not fields or any(f.strip() for f in fields)) and end >= start:
            yield fields, (start, end), "\n".join(lines[start - 1:end])
        start = end + 1
        if not fields and end == len(lines):
            return


def _kind(layout: Layout, text: str) -> str:
    return "media" if layout.media and regex.fullmatch(layout.media, text.strip()) else "message"


def _turn(fields: list[str], span: tuple[int, int], raw: str, cols: dict[str, int], header: list[str],
          layout: Layout) -> Turn:
    if len(fields) != len(header):
        return Turn("System", "system", raw, None, None, None, "notice", lines=span,
                    extra={"malformedRecord": f"{len(fields)} fields, the header has {len(header)}"})
    author = fields[cols["author"]].strip()
    role = ROLES.get(author.lower(), "user") if _norm(header[cols["author"]]) == "role" else "user"
    text = fields[cols["text"]]
    files = [u for u in fields[cols["attachments"]].split(",") if u.strip()] if "attachments" in cols else []
    content = "\n".join(x for x in (text, *(f"[attachment: {u.strip()}]" for u in files)) if x)
    raw_time = fields[cols["time"]].strip()
    used = {cols[k] for k in cols}
    extra = compact({header[i].strip().lstrip("\ufeff"): v for i, v in enumerate(fields)
                     if i not in used and v.strip()})
    return Turn(author or "unknown", role, content, _time(raw_time), raw_time or None, None, _kind(layout, text),
                lines=span, extra=extra)


def explained_share(sample: str) -> float:
    """The share of the sample's non-blank lines in the header and in records with the header's field
    count; 0 when the first line is no layout's header."""
    found = _header(sample)
    if found is None:
        return 0.0
    delimiter, _, _, header = found
    records = list(_records(sample, delimiter))  # a record the sample cuts short mostly has fewer fields
    lines = sum(1 for ln in sample.split("\n") if ln.strip())
    good = 1 + sum(sum(1 for ln in raw.split("\n") if ln.strip()) for f, _, raw in records if len(f) == len(header))
    return min(1.0, good / max(lines, 1)) if records else 0.0


@register
class CsvChat(Grammar):
    name = "csv-chat"
    version = "1"
    description = ("Chat logs as CSV/TSV with a header row (DiscordChatExporter's CSV, KakaoTalk's Date,User,Message "
                   "CSV; any author, time and text columns by their usual names): one session per file, one turn "
                   "per record")
    no_turn_shape = "its records are CSV rows (quoted fields span lines): a row is a turn by the CSV reader"
    example = 'AuthorID,Author,Date,Content,Attachments,Reactions\n"1","ann","2024-01-15T10:30:00+00:00","hi","",""'

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        session = file_session(source)
        found = _header(source.text)
        if found is None:
            raise ParseError(Reason.PARSE_ERROR, "the first line is not a chat CSV header (an author, a time and a "
                             "text column)", path=source.name, grammar=self.name)
        delimiter, layout, cols, header = found
        session.meta["csvLayout"] = layout.name
        channel = dce_channel_id(source.name) if layout.exact else None
        if channel and session.session_id is None:
            session.session_id, session.id_source = channel, "source:channel id in the exporter's file name"
        session.regions.append(Region(RegionKind.SESSION_HEADER, "the CSV header row (column names)", lines=(1, 1)))
        unread = 0
        for fields, span, raw in _records(source.text, delimiter):
            turn = _turn(fields, span, raw, cols, header, layout)
            unread += turn.time is None and turn.time_raw is not None
            session.turns.append(turn)
        if unread:
            why = "not ISO 8601 nor DiscordChatExporter's dd-MMM-yy hh:mm tt"
            session.warnings.append(unreadable_times(unread, why))
        yield session

    def count_turns(self, raw: Any) -> int:
        """Records counted by the csv module over the whole text, apart from the line spans."""
        found = _header(raw) if isinstance(raw, str) else None
        if found is None:
            return 0
        try:
            rows = list(csv.reader(io.StringIO(raw), delimiter=found[0], strict=False))
        except csv.Error:
            return sum(1 for _ in _records(raw, found[0]))
        return sum(1 for row in rows[1:] if any(f.strip() for f in row))
