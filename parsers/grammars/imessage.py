"""Apple Messages (iMessage and SMS) from the macOS database ``~/Library/Messages/chat.db``.

The database is read as its tables (parsers/sqlite.py renders it as JSON, pointers such as
``/tables/message/41``); the tables this grammar reads, verified against public descriptions of the
schema and public loaders of it:

- ``message``: ``ROWID``, ``guid``, ``text`` (often empty on newer macOS, where the text is in the
  ``attributedBody`` archive: its string is read out by the rendering), ``handle_id``, ``is_from_me``,
  ``date`` (since 2001-01-01 UTC: seconds in old databases, nanoseconds since macOS 10.13),
  ``service``, ``item_type`` and ``group_title``/``group_action_type`` (group events),
  ``associated_message_type``/``associated_message_guid`` (tapbacks), ``cache_has_attachments``,
  ``date_edited``, ``date_retracted``, ``thread_originator_guid``;
- ``handle``: ``ROWID`` -> ``id`` (a phone number or an e-mail address);
- ``chat`` and ``chat_message_join``: which chat each message is in; ``chat.guid`` is the chat's id,
  ``display_name`` a group's name, ``chat_identifier`` the other side of a one-to-one chat;
- ``attachment`` and ``message_attachment_join``: the files a message carries (names only).

Decisions:
- One session per chat (``chat`` order), session_id = ``chat.guid``, title = the group's name or the
  chat identifier. A message in no chat is still a turn: such messages form one more session without
  an id, with a warning. A database without ``chat_message_join`` (a trimmed copy) has one session per
  handle.
- Every message row is one turn (B1), oldest first by ``date`` (then ``ROWID``). The sender is the
  handle's ``id``; a message ``is_from_me`` is ``Me`` (the database does not name its owner; the
  account it was sent from is kept in ``extra``). A handle that is not in the ``handle`` table keeps
  its number (``handle 7``), never a guess.
- The text is ``text``, else the archived ``attributedBody`` string; a file attachment adds an
  ``[attachment: name]`` marker line; a message with neither is kept with empty content.
- Tapbacks (``associated_message_type`` 2000-2007, removals 3000-3007) are turns of kind ``reaction``
  with the message they react to in ``extra``; group events (``item_type`` not 0: members added or
  removed, the name changed, a member left) are System turns of kind ``action``.
- An edited or unsent message (``date_edited``, ``date_retracted``) says so in ``extra``; the database
  keeps the last text only.
- A write-ahead log beside the database (``chat.db-wal``) holds the newest messages until SQLite
  copies them in; it is not read, and a warning says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from models.errors import ParseError, Reason
from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers import sqlite
from parsers.base import Grammar
from parsers.grammars._aiexport import plural
from parsers.grammars._chatjson import compact
from parsers.jsonload import load_json
from parsers.registry import register

APPLE_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)
NANOS = 10**11
"""A ``date`` above this is in nanoseconds (seconds since 2001 stay below it until the year 5170)."""
ME = "Me"
TAPBACKS = {0: "loved", 1: "liked", 2: "disliked", 3: "laughed at", 4: "emphasized", 5: "questioned",
            6: "reacted with an emoji to", 7: "reacted with a sticker to"}
GROUP_EVENTS = {1: "changed the members", 2: "renamed the chat", 3: "left or changed the group photo"}
NEEDED = ("message", "handle")


def apple_time(value: Any) -> datetime | None:
    """A ``date`` column: seconds or nanoseconds since 2001-01-01 UTC; None for 0 or nothing."""
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        return None
    seconds = value / 1e9 if value > NANOS else value
    try:
        return (APPLE_EPOCH + timedelta(seconds=int(seconds))).replace(microsecond=0)
    except OverflowError:
        return None


def _text(row: dict[str, Any]) -> str:
    text = row.get("text")
    if isinstance(text, str) and text:
        return text
    body = row.get("attributedBody")
    return body["text"] if isinstance(body, dict) and isinstance(body.get("text"), str) else ""


def _when(row: Any) -> tuple[datetime, int]:
    """A message's place in its chat: its date, then its ROWID (a row that is not an object: first)."""
    if not isinstance(row, dict):
        return APPLE_EPOCH, 0
    return apple_time(row.get("date")) or APPLE_EPOCH, row.get("ROWID") or 0


class _Database:
    """The tables of a rendered chat.db, indexed once."""

    def __init__(self, data: dict[str, Any]) -> None:
        tables = data.get("tables") if isinstance(data, dict) else None
        self.tables: dict[str, list] = tables if isinstance(tables, dict) else {}
        self.handles = {r.get("ROWID"): r.get("id") for r in self.rows("handle")}
        self.files: dict[Any, list[str]] = {}
        names = {r.get("ROWID"): r.get("transfer_name") or r.get("filename") for r in self.rows("attachment")}
        for r in self.rows("message_attachment_join"):
            self.files.setdefault(r.get("message_id"), []).append(names.get(r.get("attachment_id")) or "file")

    def rows(self, table: str) -> list[dict[str, Any]]:
        rows = self.tables.get(table)
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def speaker(self, row: dict[str, Any]) -> str:
        if row.get("is_from_me"):
            return ME
        handle = self.handles.get(row.get("handle_id"))
        return str(handle) if handle else f"handle {row.get('handle_id')}"


def _kind(row: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(role, kind, extra facts) of a message row."""
    tapback = row.get("associated_message_type") or 0
    if isinstance(tapback, int) and 2000 <= tapback < 4000:
        verb = TAPBACKS.get(tapback % 1000, "reacted to")
        return "user", "reaction", {"reaction": verb if tapback < 3000 else f"removed: {verb}",
                                    "reactsTo": row.get("associated_message_guid")}
    item = row.get("item_type") or 0
    if item:
        return "system", "action", {"event": GROUP_EVENTS.get(item, f"item type {item}"), "groupTitle":
                                    row.get("group_title"), "groupAction": row.get("group_action_type") or None}
    return "user", "message", {}


def _turn(index: int, row: dict[str, Any], db: _Database) -> Turn:
    role, kind, facts = _kind(row)
    files = db.files.get(row.get("ROWID"), [])
    content = "\n".join(x for x in (_text(row), *(f"[attachment: {f}]" for f in files)) if x)
    when = apple_time(row.get("date"))
    extra = compact({**facts, "guid": row.get("guid"), "service": row.get("service"),
                     "account": row.get("account") if row.get("is_from_me") else None,
                     "edited": bool(apple_time(row.get("date_edited"))),
                     "unsent": bool(apple_time(row.get("date_retracted"))),
                     "threadOriginator": row.get("thread_originator_guid"),
                     "textFrom": "attributedBody" if content and not row.get("text") and not files else None})
    if role == "system":  # a group event: who did what, in words, when the row has no text of its own
        actor = db.speaker(row)
        extra = {**(extra or {}), "actor": actor}
        title = f": {facts['groupTitle']}" if facts.get("groupTitle") else ""
        content = content or f"{actor} {facts['event']}{title}"
    return Turn("System" if role == "system" else db.speaker(row), role, content, when,
                str(row.get("date")) if when else None, None, kind, pointer=f"/tables/message/{index}", extra=extra)


def _chats(db: _Database) -> tuple[list[tuple[dict[str, Any] | None, list[int]]], int]:
    """Each chat (None: the messages in no chat) with the indexes of its message rows, and how many
    messages are in more than one chat (each is read in the first)."""
    messages = db.tables.get("message") if isinstance(db.tables.get("message"), list) else []
    index = {r.get("ROWID"): i for i, r in enumerate(messages) if isinstance(r, dict)}
    chats = {r.get("ROWID"): r for r in db.rows("chat")}
    members: dict[Any, list[int]] = {cid: [] for cid in chats}
    placed: set[int] = set()
    doubled = 0
    for join in sorted(db.rows("chat_message_join"), key=lambda r: (r.get("chat_id") or 0, r.get("message_id") or 0)):
        i = index.get(join.get("message_id"))
        if i is None:
            continue
        if i in placed:
            doubled += 1
            continue
        placed.add(i)
        members.setdefault(join.get("chat_id"), []).append(i)
    loose = [i for i in range(len(messages)) if i not in placed]
    # a join to a chat the chat table lacks is still its own chat (without an id or a name)
    out = [(chats.get(cid) or {"ROWID": cid}, rows) for cid, rows in sorted(members.items(), key=lambda kv: kv[0] or 0)
           if rows]
    return out + ([(None, loose)] if loose else []), doubled


def _by_handle(db: _Database) -> list[tuple[dict[str, Any] | None, list[int]]]:
    messages = db.tables.get("message") if isinstance(db.tables.get("message"), list) else []
    groups: dict[Any, list[int]] = {}
    for i, r in enumerate(messages):
        groups.setdefault(r.get("handle_id") if isinstance(r, dict) else None, []).append(i)
    return [({"guid": f"handle:{db.handles.get(h) or h}", "chat_identifier": db.handles.get(h)}, rows)
            for h, rows in sorted(groups.items(), key=lambda kv: str(kv[0]))]


@register
class IMessage(Grammar):
    name = "imessage"
    detect_needs = ('"sqlite3"',)  # only a rendered database
    version = "1"
    structured = True
    description = "Apple Messages (iMessage, SMS) database chat.db from macOS: one session per chat"
    example = "chat.db (SQLite): message, handle, chat, chat_message_join tables"

    def detect(self, sample: str, name: str) -> float:
        if f'"format": "{sqlite.ENCODING}"' not in sample[:200]:
            return 0.0
        head = sample[:sample.find('"tables"')] if '"tables"' in sample else sample
        return 1.0 if all(f'"{t}": [' in head for t in NEEDED) and '"is_from_me"' in head else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        db = _Database(data)
        messages = db.tables.get("message")
        if not isinstance(messages, list):
            raise ParseError(Reason.PARSE_ERROR, "expected a database with a message table", path=source.name,
                             grammar=self.name)
        joined = "chat_message_join" in db.tables
        chats, doubled = _chats(db) if joined else (_by_handle(db), 0)
        wal = f"{source.name.rsplit('/', 1)[-1]}-wal" in source.siblings
        for chat, rows in chats:
            session = self._session(chat, rows, messages, db)
            if not joined:
                session.assumptions.append("the database has no chat_message_join table: one session per handle")
            if doubled:
                session.warnings.append(f"{plural(doubled, 'message')} in more than one chat: each read in the first")
            if wal:
                session.warnings.append("a write-ahead log (-wal) lies beside the database: the newest messages "
                                        "may be in it and were not read (quit Messages or copy the database "
                                        "after a checkpoint)")
            yield session

    @staticmethod
    def _session(chat: dict[str, Any] | None, rows: list[int], messages: list, db: _Database) -> ParsedSession:
        guid = chat.get("guid") if chat else None
        session = ParsedSession(str(guid) if guid else None, "source:chat.guid" if guid else "none", [],
                                raw={str(i): messages[i] for i in rows}, pointer="/tables/message")
        if chat:
            title = chat.get("display_name") or chat.get("chat_identifier")
            session.title = str(title) if title else None
        else:
            session.warnings.append(f"{plural(len(rows), 'message')} in no chat: read as one session of their own")
        order = sorted(rows, key=lambda i: _when(messages[i]))
        for i in order:
            row = messages[i]
            session.turns.append(_turn(i, row, db) if isinstance(row, dict) else
                                 Turn("System", "system", str(row), kind="notice", pointer=f"/tables/message/{i}"))
        if len(rows) > 1:
            session.assumptions.append("messages emitted oldest first by date, then by ROWID")
        return session

    def count_turns(self, raw: Any) -> int:
        return len(raw) if isinstance(raw, dict) else 0
