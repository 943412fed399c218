"""Chat exports that are one JSON document holding a list of message records, one layout per platform.

Platforms (``_json_chat_data.LAYOUTS``, data, not code):

- Google Chat from Google Takeout (``Google Chat/Groups/<Space|DM id>/messages.json``:
  ``{"messages": [{"creator": {"name", "email", "user_type"}, "created_date", "text", ...}]}``), with
  ``group_info.json`` beside it as a companion (the space's name is the title). Times read like
  ``Tuesday, March 2, 2021 at 10:15:22 AM UTC``, with a space or the narrow no-break space newer
  Takeouts put before AM/PM.
- Matrix / Element "Export chat" JSON (``{"room_name", "messages": [{"type", "sender",
  "origin_server_ts", "content": {"body", "msgtype"}, "event_id"}]}``): state events (members,
  names, topics...) are System turns with the sender as ``actor``.
- Microsoft Teams messages from the Graph API (``{"value": [{"id", "messageType", "createdDateTime",
  "from": {"user": {"displayName"}}, "body": {"contentType", "content"}}], "@odata.nextLink"}``): an
  HTML body is read as plain text, ``systemEventMessage`` records are System turns, a file may hold
  one page or a JSON array of pages, and a reply nested under its message (``replies``) follows it.

Decisions:
- A file is one session. Every record is one turn (B1, B2): messages, system events, deleted
  messages (``extra.deleted``, their remaining text kept); an entry that is not an object is kept
  verbatim as a notice.
- Speakers are the names the source gives (Matrix: the sender's user id); an automated author
  (a Google Chat bot, a Teams application) has role ``other``.
- Turns are emitted oldest first. A file whose times run newest first (a Graph API page) is read
  backwards, so equal times keep their order in time; a record without a readable time stays beside
  its neighbour. Unreadable times are left empty with one warning, never guessed.
- Keys a layout does not know are counted as format drift, with their first pointer.
- session_id: the conversation id in the records (Matrix ``room_id``, Teams ``chatId``), else the
  Takeout folder of a ``messages.json`` (``Space AAAA...``), else none.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

import orjson
import regex

from models.errors import ParseError, Reason
from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.drift import Drift
from parsers.grammars._chatjson import (
    Record,
    TimeLog,
    chronological,
    compact,
    explained_share,
    iso_time,
    markers,
    note_odd,
    odd_entry,
    raw_text,
)
from parsers.grammars._json_chat_data import LAYOUTS, Layout
from parsers.jsonload import load_json
from parsers.registry import register
from parsers.timeparse import clock_24h, from_epoch, from_parts

_MONTHS = {m: i for i, m in enumerate(("January", "February", "March", "April", "May", "June", "July", "August",
                                       "September", "October", "November", "December"), 1)}
_GOOGLE = regex.compile(
    r"(?:\p{L}+,\s)?(?P<month>\p{L}+)\s(?P<d>\d{1,2}),\s(?P<y>\d{4})\sat\s(?P<h>\d{1,2}):(?P<mi>\d{2})"
    r"(?::(?P<s>\d{2}))?[\s\u202f\u00a0]*(?P<ampm>[AaPp]\.?[Mm]\.?)?\s*(?P<zone>UTC|GMT)?")
_TAG = regex.compile(r"<[^>]*>")
# Block elements start and end lines; HTML has no blank lines of its own, so runs of breaks are one.
_BREAK = regex.compile(r"(?:\s*<(?:br|/?p|/?div|/?li|/?ul|/?ol|/?h[1-6]|/?tr|/?table|/?thead|/?tbody|/?blockquote)"
                       r"\b[^>]*>\s*)+", regex.IGNORECASE)
_CELL = regex.compile(r"\s*</t[dh]>\s*(?=<t[dh]\b)", regex.IGNORECASE)  # cells of a row: a tab between them


def path(record: Any, dotted: str) -> Any:
    """The value at a dotted path (``from.user.displayName``); None when any step is missing."""
    for step in dotted.split("."):
        if not isinstance(record, dict):
            return None
        record = record.get(step)
    return record


def _first(record: dict, paths: tuple[str, ...]) -> Any:
    return _found(record, paths)[1]


def _found(record: dict, paths: tuple[str, ...]) -> tuple[str | None, Any]:
    """(path, value) of the first of ``paths`` with a value (not null, not empty)."""
    for dotted in paths:
        value = path(record, dotted)
        if value is not None and value != "":
            return dotted, value
    return None, None


def google_time(raw: str) -> datetime | None:
    """Takeout's ``Tuesday, March 2, 2021 at 10:15:22 AM UTC``; None for anything else (a zone
    other than UTC is not guessed)."""
    m = _GOOGLE.fullmatch(raw.strip())
    month = _MONTHS.get(m["month"]) if m else None
    hour = clock_24h(int(m["h"]), m["ampm"]) if month else None
    if hour is None or not m["zone"]:
        return None
    when = from_parts(int(m["y"]), month, int(m["d"]), hour, int(m["mi"]), int(m["s"] or 0))
    return when.replace(tzinfo=UTC) if when else None


def _time(layout: Layout, value: Any) -> datetime | None:
    if layout.clock == "ms":
        return from_epoch(value, millis=True) if isinstance(value, int | float) and not isinstance(value, bool) \
            else None
    if not isinstance(value, str):
        return None
    return google_time(value) if layout.clock == "google" else iso_time(value)


def html_text(value: str) -> str:
    """An HTML message body as plain text: line breaks kept, tags dropped, entities decoded."""
    text = _BREAK.sub("\n", _CELL.sub("\t", value))
    return html.unescape(_TAG.sub("", text)).replace("\u00a0", " ").strip()


def _layout_record(record: Record) -> bool:
    return any(record.container == layout.container and layout.marks <= record.keys for layout in LAYOUTS)


def _layout_of(page: Any) -> Layout | None:
    """The layout of a page: the first whose list holds a record with all its marks."""
    for layout in LAYOUTS:
        entries = page.get(layout.container) if isinstance(page, dict) else None
        if isinstance(entries, list) and any(isinstance(m, dict) and layout.marks <= m.keys() for m in entries):
            return layout
    return None


def _pages(data: Any) -> tuple[list[Any], bool]:
    """The pages of a document (a page, or a JSON array of pages) and whether it is a single page."""
    return ([data], True) if isinstance(data, dict) else (data if isinstance(data, list) else [], False)


def _entries(pages: list[Any], single: bool, layout: Layout) -> list[tuple[str, Any, list[tuple[str, Any]]]]:
    """(pointer, record, its nested replies as (pointer, record)) of every page's list, in file order."""
    out = []
    for p, page in enumerate(pages):
        items = page.get(layout.container) if isinstance(page, dict) else None
        base = f"/{layout.container}" if single else f"/{p}/{layout.container}"
        for i, m in enumerate(items if isinstance(items, list) else []):
            nested = m.get(layout.replies) if layout.replies and isinstance(m, dict) else None
            replies = [(f"{base}/{i}/{layout.replies}/{j}", r) for j, r in enumerate(nested)] \
                if isinstance(nested, list) else []
            out.append((f"{base}/{i}", m, replies))
    return out


def _epoch(when: datetime | None) -> float | None:
    return when.timestamp() if when is not None else None


def _stamp(layout: Layout, m: Any) -> datetime | None:
    when = _time(layout, path(m, layout.time)) if isinstance(m, dict) else None
    return when if when is None or when.tzinfo is not None else when.replace(tzinfo=UTC)


class _Reader:
    """Turns of one file's records under one layout, with the session's time and drift notes."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.times = TimeLog()
        self.drift = Drift()

    def turn(self, m: Any, pointer: str) -> Turn:
        if not isinstance(m, dict):
            return odd_entry(m, pointer)
        layout = self.layout
        self.drift.unknown_keys(m, layout.known, pointer)
        value = path(m, layout.time)
        raw = raw_text(value)
        when = self.times.read(_time(layout, value), raw, pointer)
        kind = path(m, layout.kind) if layout.kind else None
        extra = {"messageId": path(m, layout.ident), "type": kind,
                 "deleted": True if any(path(m, p) not in (None, False) for p in layout.deleted) else None}
        text, files = self._text(m), self._files(m)
        if layout.kind and kind not in layout.messages:
            return self._event(m, str(kind), text, when, raw, pointer, extra)
        subtype = path(m, layout.subtype) if layout.subtype else None
        extra["subtype"] = subtype
        if subtype in layout.media:
            text, files = "", [f"[{str(subtype).removeprefix('m.')}: {text}]" if text else f"[{subtype}]", *files]
        speaker = _first(m, layout.actor)
        role = "other" if layout.bot and self._bot(m) else "user"
        content = markers(text, files) if files else text
        return Turn(str(speaker) if speaker is not None else "unknown", role, content, when, raw, None,
                    "media" if files and not text else "message", pointer=pointer, extra=compact(extra))

    def _bot(self, m: dict) -> bool:
        dotted, value = self.layout.bot
        found = path(m, dotted)
        return found is not None if value is None else found == value

    def _text(self, m: dict) -> str:
        text = _first(m, self.layout.text)
        if not isinstance(text, str):
            return "" if text is None else orjson.dumps(text, option=orjson.OPT_SORT_KEYS).decode()
        if self.layout.html and path(m, self.layout.html) == "html":
            return html_text(text)
        return text

    def _files(self, m: dict) -> list[str]:
        out = []
        for key, names in self.layout.files:
            items = m.get(key)
            for item in items if isinstance(items, list) else ():
                name = _first(item, names) if isinstance(item, dict) else None
                out.append(f"[file: {name}]" if name is not None else "[file]")
        return out

    def _event(self, m: dict, kind: str, text: str, when: datetime | None, raw: str | None, pointer: str,
               extra: dict[str, Any]) -> Turn:
        """A system event as a System turn: its text, else ``[type]`` and its details as compact JSON."""
        layout = self.layout
        detail = path(m, layout.event) if layout.event else None
        if not text or text == "<systemEventMessage/>":
            shown = orjson.dumps(detail, option=orjson.OPT_SORT_KEYS).decode() if detail else ""
            text = f"[{kind}] {shown}".rstrip()
        extra["actor"] = _first(m, layout.event_actor)
        return Turn("System", "system", text, when, raw, None, "system", pointer=pointer, extra=compact(extra))


@register
class JsonChat(Grammar):
    name = "json-chat"
    # a record is explained only with all of a layout's marks: the longest of each is needed
    detect_needs = tuple(f'"{max(layout.marks, key=lambda m: (len(m), m))}"' for layout in LAYOUTS)
    version = "1"
    structured = True
    companion_names = ("group_info.json",)
    description = ("JSON chat exports holding a list of message records: Google Chat (Takeout messages.json), "
                   "Matrix/Element export, Microsoft Teams (Graph API messages)")
    example = ('{"messages": [{"creator": {"name": "Ann Lee", "email": "ann@example.com", "user_type": "Human"}, '
               '"created_date": "Tuesday, March 2, 2021 at 10:15:22 AM UTC", "text": "hi", "message_id": "x/y"}]}')

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample, _layout_record) or 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        pages, single = _pages(data)
        layout = next((found for page in pages if (found := _layout_of(page)) is not None), None)
        if layout is None:
            raise ParseError(Reason.PARSE_ERROR, "no list of message records of a known layout", path=source.name,
                             grammar=self.name)
        session = self._session(layout, pages, data, source)
        reader = _Reader(layout)
        entries = _entries(pages, single, layout)
        for i in self._order(session, layout, [m for _, m, _ in entries]):
            pointer, m, replies = entries[i]
            session.turns.append(reader.turn(m, pointer))
            for j in self._order(session, layout, [r for _, r in replies]):
                session.turns.append(reader.turn(replies[j][1], replies[j][0]))
        note_odd(session, [m for _, m, _ in entries])
        reader.times.flush(session)
        self._notes(session, layout, pages, single, reader.drift)
        yield session

    @staticmethod
    def _order(session: ParsedSession, layout: Layout, records: list[Any]) -> list[int]:
        order, newest_first = chronological([_epoch(_stamp(layout, m)) for m in records], layout.newest_first)
        note = (f"{layout.container} run newest first: read backwards, then by time (equal times keep their order"
                " in time)" if newest_first else "messages emitted oldest first by time; equal times keep file order")
        if len(records) > 1 and note not in session.assumptions:
            session.assumptions.append(note)
        return order

    @staticmethod
    def _session(layout: Layout, pages: list[Any], data: Any, source: SourceText) -> ParsedSession:
        records = [m for page in pages if isinstance(page, dict) for m in page.get(layout.container) or ()
                   if isinstance(m, dict)]
        where, found = next((f for m in records if (f := _found(m, layout.session))[0] is not None), (None, None))
        folder = PurePosixPath(source.name).parent.name if PurePosixPath(source.name).name == "messages.json" \
            else ""
        if found is not None:
            session = ParsedSession(str(found), f"source:{where}", [], raw=data, pointer="")
        else:
            session = ParsedSession(folder or None, "file-name" if folder else "none", [], raw=data, pointer="")
        head = pages[0] if pages and isinstance(pages[0], dict) else {}
        title = _first(head, layout.title) if layout.title else None
        session.title = title if isinstance(title, str) else _group_name(source)
        session.meta["platform"] = layout.name
        return session

    @staticmethod
    def _notes(session: ParsedSession, layout: Layout, pages: list[Any], single: bool, drift: Drift) -> None:
        for p, page in enumerate(pages):
            if isinstance(page, dict):
                drift.unknown_keys(page, layout.head, "" if single else f"/{p}")
        if pages and isinstance(pages[-1], dict) and pages[-1].get("@odata.nextLink"):
            session.warnings.append("the last page has an @odata.nextLink: the conversation continues past this file")
        if not single:
            session.meta["pages"] = len(pages)
        if drift:
            session.meta["formatDrift"] = drift.as_meta()

    def count_turns(self, raw: Any) -> int:
        """Every entry of every page's message list (of any layout), and every nested reply."""
        pages, _ = _pages(raw)
        count = 0
        for page in pages:
            for key in _CONTAINERS:
                items = page.get(key) if isinstance(page, dict) else None
                for m in items if isinstance(items, list) else ():
                    nested = [m.get(r) for r in _REPLIES] if isinstance(m, dict) else []
                    count += 1 + sum(len(n) for n in nested if isinstance(n, list))
        return count


_CONTAINERS = sorted({layout.container for layout in LAYOUTS})
_REPLIES = sorted({layout.replies for layout in LAYOUTS if layout.replies})


def _group_name(source: SourceText) -> str | None:
    """The space's name from Takeout's ``group_info.json`` beside ``messages.json`` (DMs have none)."""
    text = source.companions.get("group_info.json")
    try:
        info = orjson.loads(text) if text else None
    except orjson.JSONDecodeError:
        return None
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) and name else None
