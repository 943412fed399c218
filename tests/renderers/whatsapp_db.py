"""Render a generated chat as WhatsApp for Android's msgstore.db: the recent layout (message, chat, jid)
for an odd number of turns, the older one (messages, chat_list) for an even number.

``database`` builds a msgstore.db of either layout's shape (the columns the grammar reads, and some it
does not) from rows; the golden databases and the sample were made with it. The first speaker's
messages are the owner's (``from_me``: the database names them ``Me``); the others' jids are their
names, so the speaker read back is the name."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

RECENT = """
CREATE TABLE props (_id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT UNIQUE, value TEXT);
CREATE TABLE jid (_id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, server TEXT NOT NULL, agent INTEGER,
    device INTEGER, type INTEGER, raw_string TEXT);
CREATE TABLE chat (_id INTEGER PRIMARY KEY AUTOINCREMENT, jid_row_id INTEGER UNIQUE, hidden INTEGER, subject TEXT,
    created_timestamp INTEGER, display_message_row_id INTEGER, last_message_row_id INTEGER, archived INTEGER,
    sort_timestamp INTEGER, group_type INTEGER NOT NULL DEFAULT 0);
CREATE TABLE message (_id INTEGER PRIMARY KEY AUTOINCREMENT, chat_row_id INTEGER NOT NULL, from_me INTEGER NOT NULL,
    key_id TEXT NOT NULL, sender_jid_row_id INTEGER, status INTEGER, broadcast INTEGER, recipient_count INTEGER,
    participant_hash TEXT, origination_flags INTEGER, origin INTEGER, timestamp INTEGER, received_timestamp INTEGER,
    receipt_server_timestamp INTEGER, message_type INTEGER, text_data TEXT, starred INTEGER, lookup_tables INTEGER,
    sort_id INTEGER NOT NULL DEFAULT 0, message_add_on_flags INTEGER, view_mode INTEGER);
CREATE TABLE message_media (message_row_id INTEGER PRIMARY KEY, chat_row_id INTEGER, file_path TEXT,
    file_size INTEGER, mime_type TEXT, media_name TEXT, media_caption TEXT, media_duration INTEGER);
CREATE TABLE message_location (message_row_id INTEGER PRIMARY KEY, chat_row_id INTEGER, latitude REAL,
    longitude REAL, place_name TEXT, place_address TEXT, url TEXT);
CREATE TABLE message_system (message_row_id INTEGER PRIMARY KEY, action_type INTEGER NOT NULL);
CREATE TABLE message_revoked (message_row_id INTEGER PRIMARY KEY, revoked_key_id TEXT NOT NULL,
    admin_jid_row_id INTEGER, revoke_timestamp INTEGER);
CREATE TABLE message_edit_info (message_row_id INTEGER PRIMARY KEY, original_key_id TEXT NOT NULL,
    edited_timestamp INTEGER NOT NULL, sender_timestamp INTEGER NOT NULL);
CREATE TABLE message_quoted (message_row_id INTEGER PRIMARY KEY AUTOINCREMENT, chat_row_id INTEGER NOT NULL,
    parent_message_chat_row_id INTEGER NOT NULL, from_me INTEGER NOT NULL, sender_jid_row_id INTEGER,
    key_id TEXT NOT NULL, timestamp INTEGER, message_type INTEGER, origin INTEGER, text_data TEXT);
"""
OLD = """
CREATE TABLE messages (_id INTEGER PRIMARY KEY AUTOINCREMENT, key_remote_jid TEXT NOT NULL, key_from_me INTEGER,
    key_id TEXT NOT NULL, status INTEGER, needs_push INTEGER, data TEXT, timestamp INTEGER, media_url TEXT,
    media_mime_type TEXT, media_wa_type TEXT, media_size INTEGER, media_name TEXT, media_caption TEXT,
    media_hash TEXT, media_duration INTEGER, origin INTEGER, latitude REAL, longitude REAL, thumb_image TEXT,
    remote_resource TEXT, received_timestamp INTEGER, send_timestamp INTEGER, receipt_server_timestamp INTEGER,
    receipt_device_timestamp INTEGER, raw_data BLOB, recipient_count INTEGER, quoted_row_id INTEGER);
CREATE TABLE chat_list (_id INTEGER PRIMARY KEY AUTOINCREMENT, key_remote_jid TEXT UNIQUE, message_table_id INTEGER,
    subject TEXT, creation INTEGER, last_read_message_table_id INTEGER, sort_timestamp INTEGER);
"""


def millis(when: datetime) -> int:
    """A time as msgstore.db's ``timestamp``: epoch milliseconds (naive times are UTC)."""
    return int(when.replace(tzinfo=UTC).timestamp()) * 1000


def database(tables: dict[str, list[dict]], schema: str = RECENT) -> bytes:
    """The bytes of a msgstore.db holding these rows (table -> rows as column -> value)."""
    db = sqlite3.connect(":memory:")
    db.executescript(schema)
    for table, rows in tables.items():
        for row in rows:
            db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                       list(row.values()))
    db.commit()
    data = db.serialize()
    db.close()
    return data


def _recent(session) -> bytes:
    me = session.turns[0].speaker
    others = sorted({t.speaker for t in session.turns} - {me})
    jids = [{"_id": 1, "user": "120363000000000001", "server": "g.us", "raw_string": "120363000000000001@g.us"}]
    jids += [{"_id": i + 2, "user": s, "server": "s.whatsapp.net", "raw_string": f"{s}@s.whatsapp.net"}
             for i, s in enumerate(others)]
    ids = {s: i + 2 for i, s in enumerate(others)}
    messages = [{"_id": n + 1, "chat_row_id": 1, "from_me": int(t.speaker == me), "key_id": f"K{n}",
                 "sender_jid_row_id": 0 if t.speaker == me else ids[t.speaker], "timestamp": millis(t.time),
                 "message_type": 0, "text_data": t.content} for n, t in enumerate(session.turns)]
    return database({"jid": jids, "chat": [{"_id": 1, "jid_row_id": 1, "subject": "Generated"}], "message": messages})


def _old(session) -> bytes:
    me = session.turns[0].speaker
    messages = [{"_id": n + 1, "key_remote_jid": "120363000000000001@g.us", "key_from_me": int(t.speaker == me),
                 "key_id": f"K{n}", "status": 0, "data": t.content, "timestamp": millis(t.time), "media_wa_type": "0",
                 "remote_resource": None if t.speaker == me else f"{t.speaker}@s.whatsapp.net"}
                for n, t in enumerate(session.turns)]
    return database({"chat_list": [{"key_remote_jid": "120363000000000001@g.us", "subject": "Generated"}],
                     "messages": messages}, OLD)


def render(session):
    return "msgstore.db", _recent(session) if len(session.turns) % 2 else _old(session)


def expected(session):
    me = session.turns[0].speaker
    return [("Me" if t.speaker == me else t.speaker, t.content, t.time) for t in session.turns]
