"""WhatsApp for Android's message database ``msgstore.db`` (decrypted): one session per chat.

The database is read as its tables (parsers/sqlite.py renders it as JSON, pointers such as
``/tables/message/41``). Two layouts, as data in ``_whatsapp_db_data.py``:

- recent versions: ``message`` (``_id``, ``chat_row_id``, ``from_me``, ``key_id``, ``sender_jid_row_id``,
  ``timestamp`` in epoch milliseconds, ``message_type``, ``text_data``), ``chat`` (``_id``,
  ``jid_row_id``, ``subject``: a group's name) and ``jid`` (``_id``, ``user``, ``server``,
  ``raw_string``: ``4915123456789@s.whatsapp.net``, a group's ``…@g.us``); beside them, read when
  present: ``message_media`` (``file_path``, ``media_name``, ``media_caption``), ``message_location``,
  ``message_system`` (``action_type``), ``message_revoked``, ``message_edit_info``, ``message_quoted``;
- older versions: ``messages`` (``key_remote_jid``: the chat's jid, ``key_from_me``, ``key_id``,
  ``data``, ``timestamp``, ``media_wa_type``, ``media_name``, ``media_caption``, ``latitude``,
  ``longitude``, ``remote_resource``: a group message's sender, ``status``) with ``chat_list``
  (``key_remote_jid``, ``subject``).

Decisions:
- One session per chat (``chat`` / ``chat_list`` order, then chats only the messages name), its id
  the chat's jid, its title the group's subject or the other side's number. A message whose chat
  the chat table lacks is still a turn: its chat is a session without a title.
- Every message row is one turn (B1), oldest first by ``timestamp`` (then ``_id``). A message the
  owner sent is ``Me`` (msgstore.db stores neither the owner's name nor number); another is its
  sender's number (the jid's user; in a one-to-one chat, the chat's), the jid in ``extra.jid``. Names
  live in the contacts database ``wa.db``, which is not read.
- Attachments (``message_type`` image, audio, video, contact, document, gif, sticker) are turns of kind
  ``media``: their caption, then a ``[image: name]`` line; a location is ``[location: lat, long name]``.
  System messages (type 7; in the old layout ``status`` 6) are System turns of kind ``action`` with
  the action code in ``extra.actionType`` (the database holds a code, not words: none are invented).
  A deleted message is kept with empty content and ``extra.deleted``; an edited one says so.
- The app's placeholder row (chat -1, no text: the first row of the table) is no message: a declared
  ``empty_record`` region of the first session.
- Times are epoch milliseconds, UTC. A write-ahead log beside the database (``msgstore.db-wal``) may
  hold the newest messages; it is not read, and a warning says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from models.errors import ParseError, Reason
from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers import sqlite
from parsers.base import Grammar
from parsers.grammars import _whatsapp_db_data as data
from parsers.grammars._aiexport import plural
from parsers.grammars._chatjson import compact
from parsers.jsonload import load_json
from parsers.registry import register
from parsers.timeparse import from_epoch


def _layout(schema: dict[str, Any]) -> data.Layout | None:
    for layout in data.LAYOUTS:
        if all(column in (schema.get(table) or ()) for table, column in (n.split(".") for n in layout.needs)):
            return layout
    return None


def _user(jid: Any) -> str | None:
    """The number (or id) of a jid: ``4915123456789@s.whatsapp.net`` -> ``4915123456789``."""
    return str(jid).split("@", 1)[0] if jid else None


class _Database:
    """The tables of a rendered msgstore.db, indexed once."""

    def __init__(self, doc: dict[str, Any], layout: data.Layout) -> None:
        tables = doc.get("tables")
        self.tables: dict[str, Any] = tables if isinstance(tables, dict) else {}
        self.layout = layout
        self.jids = {r.get("_id"): r.get("raw_string") or (f"{r.get('user')}@{r.get('server')}" if r.get("user")
                                                           else None) for r in self.rows("jid")}
        by_message = {t: {r.get("message_row_id"): r for r in self.rows(t)} for t in (
            "message_media", "message_location", "message_system", "message_revoked", "message_edit_info",
            "message_quoted")}
        self.media, self.location = by_message["message_media"], by_message["message_location"]
        self.system, self.revoked = by_message["message_system"], by_message["message_revoked"]
        self.edited, self.quoted = by_message["message_edit_info"], by_message["message_quoted"]

    def rows(self, table: str) -> list[dict[str, Any]]:
        rows = self.tables.get(table)
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def chats(self) -> list[tuple[Any, str | None, str | None]]:
        """(chat key in the message rows, the chat's jid, its subject) of each chat the chat table lists."""
        if self.layout is data.RECENT:
            return [(r.get("_id"), self.jids.get(r.get("jid_row_id")), r.get("subject")) for r in self.rows("chat")]
        return [(r.get("key_remote_jid"), r.get("key_remote_jid"), r.get("subject")) for r in self.rows("chat_list")]

    def sender(self, row: dict[str, Any], chat_jid: str | None) -> tuple[str, str | None]:
        """(speaker, jid) of a message row."""
        if row.get(self.layout.from_me):
            return data.ME, None
        sender = row.get(self.layout.sender)
        jid = (self.jids.get(sender) if self.layout is data.RECENT else sender) if sender else None
        jid = jid or chat_jid  # a one-to-one chat's messages name no sender: the other side wrote them
        return (_user(jid) or f"jid {sender}"), jid


def _attachment(row: dict[str, Any], db: _Database, code: int) -> tuple[str | None, str]:
    """(caption, marker line) of an attachment message."""
    if db.layout is data.RECENT:
        media = db.media.get(row.get("_id")) or {}
        name = media.get("media_name") or PurePosixPath(str(media.get("file_path") or "")).name
        caption = media.get("media_caption")
    else:
        name, caption = row.get("media_name"), row.get("media_caption")
    label = data.TYPES.get(code, f"type {code}")
    return caption, f"[{label}: {name}]" if name else f"[{label}]"


def _location(row: dict[str, Any], db: _Database) -> str:
    place = (db.location.get(row.get("_id")) or row) if db.layout is data.RECENT else row
    name = place.get("place_name") or place.get("media_name") or ""
    return f"[location: {place.get('latitude')}, {place.get('longitude')}{' ' + name if name else ''}]"


def _body(row: dict[str, Any], db: _Database, code: int) -> tuple[str, str]:
    """(kind, content) of a message row that is not a system message."""
    text = row.get(db.layout.text)
    text = text if isinstance(text, str) else ""
    if code in data.MEDIA:
        caption, marker = _attachment(row, db, code)
        return "media", "\n".join(x for x in ((text or caption or ""), marker) if x)
    if code in data.LOCATION:
        return "media", "\n".join(x for x in (text, _location(row, db)) if x)
    return "message", text


def _code(value: Any) -> int:
    """A message type code: an integer, or digits as the old layout's TEXT column holds them; else 0."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else 0


def _turn(index: int, row: dict[str, Any], db: _Database, chat_jid: str | None) -> Turn:
    layout = db.layout
    code = _code(row.get(layout.kind))
    when = from_epoch(row.get(layout.time), millis=True) if row.get(layout.time) else None
    speaker, jid = db.sender(row, chat_jid)
    mid = row.get("_id")
    deleted = code in data.DELETED or mid in db.revoked
    extra = {"keyId": row.get(layout.key), "jid": jid, "type": data.TYPES.get(code, code) if code else None,
             "deleted": deleted, "edited": mid in db.edited,
             "replyTo": (db.quoted.get(mid) or {}).get("key_id")}
    system = code in data.SYSTEM or (layout is data.OLD and row.get("status") == data.OLD_SYSTEM_STATUS)
    pointer, raw = f"/tables/{layout.messages}/{index}", str(row.get(layout.time)) if when else None
    if system:
        action = (db.system.get(mid) or {}).get("action_type") if layout is data.RECENT else None
        text = row.get(layout.text) if isinstance(row.get(layout.text), str) else ""
        content = text or (f"[system message, action type {action}]" if action is not None else "[system message]")
        extra = compact({**extra, "actionType": action, "actor": speaker, "type": None})
        return Turn("System", "system", content, when, raw, None, "action", pointer=pointer, extra=extra)
    kind, content = ("message", "") if deleted else _body(row, db, code)
    return Turn(speaker, "user", content, when, raw, None, kind, pointer=pointer, extra=compact(extra))


def _when(row: Any, layout: data.Layout) -> tuple[int, int]:
    if not isinstance(row, dict):
        return 0, 0
    time, mid = row.get(layout.time), row.get("_id")
    return (time if isinstance(time, int) else 0), (mid if isinstance(mid, int) else 0)


PLACEHOLDER = "the app's placeholder row of the message table (chat -1, no text): no message"


def _placeholder(row: Any, layout: data.Layout) -> bool:
    """The app's placeholder row: in chat -1, with no text (the first row of the message table)."""
    return isinstance(row, dict) and row.get(layout.chat) in (-1, "-1") and not row.get(layout.text)


def _groups(db: _Database, messages: list) -> list[tuple[Any, str | None, str | None, list[int]]]:
    """(chat key, jid, subject, message indexes) of each chat with messages, listed chats first."""
    members: dict[Any, list[int]] = {}
    for i, row in enumerate(messages):
        if not _placeholder(row, db.layout):
            members.setdefault(row.get(db.layout.chat) if isinstance(row, dict) else None, []).append(i)
    listed = db.chats()
    known = {key for key, _, _ in listed}
    out = [(key, jid, subject, members[key]) for key, jid, subject in listed if key in members]
    for key in sorted((k for k in members if k not in known), key=str):
        jid = key if db.layout is data.OLD else None
        out.append((key, jid if isinstance(jid, str) else None, None, members[key]))
    return out


@register
class WhatsAppDb(Grammar):
    name = "whatsapp-db"
    detect_needs = ('"sqlite3"',)  # only a rendered database
    version = "1"
    structured = True
    description = ("WhatsApp for Android message database msgstore.db (decrypted; the message/chat/jid tables "
                   "of recent versions, the messages table of older ones): one session per chat")
    example = "msgstore.db (SQLite): message, chat, jid tables (or messages, chat_list)"

    def detect(self, sample: str, name: str) -> float:
        if f'"format": "{sqlite.ENCODING}"' not in sample[:200]:
            return 0.0
        head = sample[:sample.find('"tables"')] if '"tables"' in sample else sample
        for layout in data.LAYOUTS:
            tables = {n.split(".")[0] for n in layout.needs}
            columns = {n.split(".")[1] for n in layout.needs}
            if all(f'"{t}": [' in head for t in tables) and all(f'"{c}"' in head for c in columns):
                return 1.0
        return 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        doc = load_json(source.text, source.name, self.name)
        layout = _layout(doc.get("schema") or {}) if isinstance(doc, dict) else None
        if layout is None:
            raise ParseError(Reason.PARSE_ERROR, "expected msgstore.db's message/chat/jid tables or its messages "
                             "table", path=source.name, grammar=self.name)
        db = _Database(doc, layout)
        messages = db.tables.get(layout.messages)
        messages = messages if isinstance(messages, list) else []
        wal = f"{source.name.rsplit('/', 1)[-1]}-wal" in source.siblings
        placeholders = [i for i, row in enumerate(messages) if _placeholder(row, layout)]
        for n, (key, jid, subject, rows) in enumerate(_groups(db, messages)):
            session = self._session(jid, subject, rows, messages, db)
            if n == 0:  # declared once, in the first session
                table = f"/tables/{layout.messages}"
                session.regions.extend(Region(RegionKind.EMPTY_RECORD, PLACEHOLDER, pointer=f"{table}/{i}")
                                       for i in placeholders)
            if not any(k == key for k, _, _ in db.chats()):
                session.warnings.append(f"{plural(len(rows), 'message')} of a chat ({key}) the chat table does not "
                                        "list: read as a session of their own")
            if wal:
                session.warnings.append("a write-ahead log (-wal) lies beside the database: the newest messages "
                                        "may be in it and were not read")
            yield session

    @staticmethod
    def _session(jid: str | None, subject: Any, rows: list[int], messages: list, db: _Database) -> ParsedSession:
        session = ParsedSession(jid, "source:chat jid" if jid else "none", [],
                                raw={str(i): messages[i] for i in rows}, pointer=f"/tables/{db.layout.messages}")
        title = subject or _user(jid)
        session.title = str(title) if title else None
        session.meta["layout"] = db.layout.name
        for i in sorted(rows, key=lambda i: _when(messages[i], db.layout)):
            row = messages[i]
            session.turns.append(_turn(i, row, db, jid) if isinstance(row, dict) else
                                 Turn("System", "system", str(row), kind="notice",
                                      pointer=f"/tables/{db.layout.messages}/{i}"))
        if len(rows) > 1:
            session.assumptions.append("messages emitted oldest first by timestamp, then by _id")
        return session

    def count_turns(self, raw: Any) -> int:
        return len(raw) if isinstance(raw, dict) else 0
