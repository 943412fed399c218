"""Render a generated chat as an Apple Messages database (chat.db): one chat, a handle per speaker.

``database`` builds a chat.db of the real schema's shape (the columns the grammar reads, and some it
does not) from rows; the golden database was made with it. The first speaker's messages are the
owner's (``is_from_me``: the database names them ``Me``)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from tests import strategies

EPOCH = datetime(2001, 1, 1)
# chat.db's ``date`` is seconds (old databases) or nanoseconds since EPOCH, told apart by size: the first
# 100 seconds of 2001 in nanoseconds read as seconds. iMessage began in 2011; chats start after that.
STRATEGY = strategies.sessions(since=datetime(2011, 1, 1))
SCHEMA = """
CREATE TABLE _SqliteDatabaseProperties (key TEXT, value TEXT, UNIQUE(key));
CREATE TABLE handle (ROWID INTEGER PRIMARY KEY AUTOINCREMENT UNIQUE, id TEXT NOT NULL, country TEXT,
    service TEXT NOT NULL, uncanonicalized_id TEXT, person_centric_id TEXT, UNIQUE (id, service));
CREATE TABLE chat (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL, style INTEGER,
    state INTEGER, account_id TEXT, properties BLOB, chat_identifier TEXT, service_name TEXT, room_name TEXT,
    account_login TEXT, is_archived INTEGER DEFAULT 0, last_addressed_handle TEXT, display_name TEXT,
    group_id TEXT, is_filtered INTEGER DEFAULT 0, successful_query INTEGER);
CREATE TABLE message (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL, text TEXT,
    replace INTEGER DEFAULT 0, service_center TEXT, handle_id INTEGER DEFAULT 0, subject TEXT, country TEXT,
    attributedBody BLOB, version INTEGER DEFAULT 0, type INTEGER DEFAULT 0, service TEXT, account TEXT,
    account_guid TEXT, error INTEGER DEFAULT 0, date INTEGER, date_read INTEGER, date_delivered INTEGER,
    is_delivered INTEGER DEFAULT 0, is_finished INTEGER DEFAULT 0, is_from_me INTEGER DEFAULT 0,
    is_read INTEGER DEFAULT 0, cache_has_attachments INTEGER DEFAULT 0, item_type INTEGER DEFAULT 0,
    other_handle INTEGER DEFAULT 0, group_title TEXT, group_action_type INTEGER DEFAULT 0,
    associated_message_guid TEXT, associated_message_type INTEGER DEFAULT 0, message_summary_info BLOB,
    thread_originator_guid TEXT, date_edited INTEGER DEFAULT 0, date_retracted INTEGER DEFAULT 0,
    destination_caller_id TEXT);
CREATE TABLE chat_handle_join (chat_id INTEGER, handle_id INTEGER, UNIQUE(chat_id, handle_id));
CREATE TABLE chat_message_join (chat_id INTEGER, message_id INTEGER, message_date INTEGER DEFAULT 0,
    PRIMARY KEY (chat_id, message_id));
CREATE TABLE attachment (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
    created_date INTEGER DEFAULT 0, filename TEXT, mime_type TEXT, transfer_name TEXT, total_bytes INTEGER);
CREATE TABLE message_attachment_join (message_id INTEGER, attachment_id INTEGER, UNIQUE(message_id, attachment_id));
"""


def nanos(when: datetime) -> int:
    """A time as chat.db's ``date``: nanoseconds since 2001-01-01 UTC (naive times are UTC)."""
    return int((when.replace(tzinfo=None) - EPOCH).total_seconds()) * 1_000_000_000


def database(tables: dict[str, list[dict]]) -> bytes:
    """The bytes of a chat.db holding these rows (table -> rows as column -> value)."""
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    db.execute("INSERT INTO _SqliteDatabaseProperties VALUES ('_ClientVersion', '17002')")
    for table, rows in tables.items():
        for row in rows:
            names = ", ".join(row)
            db.execute(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    db.commit()
    data = db.serialize()
    db.close()
    return data


def render(session):
    speakers = sorted({t.speaker for t in session.turns})
    me = session.turns[0].speaker
    handles = [{"ROWID": i + 1, "id": s, "service": "iMessage"} for i, s in enumerate(speakers)]
    ids = {s: i + 1 for i, s in enumerate(speakers)}
    messages = [{"ROWID": n + 1, "guid": f"M-{n}", "text": t.content, "service": "iMessage", "date": nanos(t.time),
                 "handle_id": 0 if t.speaker == me else ids[t.speaker], "is_from_me": int(t.speaker == me)}
                for n, t in enumerate(session.turns)]
    tables = {"handle": handles, "chat": [{"ROWID": 1, "guid": "iMessage;+;chat1", "chat_identifier": "chat1",
                                            "service_name": "iMessage", "style": 43}],
              "message": messages,
              "chat_message_join": [{"chat_id": 1, "message_id": m["ROWID"]} for m in messages]}
    return "chat.db", database(tables)


def expected(session):
    me = session.turns[0].speaker
    return [("Me" if t.speaker == me else t.speaker, t.content, None if t.time == EPOCH else t.time)
            for t in session.turns]

