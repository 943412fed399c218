"""Apple Messages chat.db: the database rendered as its tables, and the iMessage grammar over them."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime

import orjson
import pytest

from models.errors import IngestError, Reason
from models.settings import Settings
from parsers import registry, sqlite
from parsers.grammars.imessage import IMessage, apple_time
from parsers.text import decode
from tests.renderers.imessage import database, nanos
from validators.accounting import account

GRAMMAR = IMessage()


def _archive(text: str) -> bytes:
    data = text.encode()
    size = bytes([len(data)]) if len(data) < 0x80 else b"\x81" + len(data).to_bytes(2, "little")
    return (b"\x04\x0bstreamtyped\x81\xe8\x03\x84\x01@\x84\x84\x84\x12NSAttributedString\x00\x84\x84\x08NSObject"
            b"\x00\x85\x92\x84\x84\x84\x08NSString\x01\x94\x84\x01+" + size + data + b"\x86\x84\x02iI\x01")


def _sessions(tables, siblings=()):
    source = replace(decode(database(tables), "chat.db"), siblings=siblings)
    return list(GRAMMAR.parse(source, Settings()))


def _message(rowid, text, when, **more):
    return {"ROWID": rowid, "guid": f"G{rowid}", "text": text, "service": "iMessage", "date": when, **more}


def test_archived_text_short_and_long():
    assert sqlite.streamtyped_text(_archive("hi")) == "hi"
    long = "x" * 300 + " é"
    assert sqlite.streamtyped_text(_archive(long)) == long  # the 0x81 two-byte length
    assert sqlite.streamtyped_text(b"\x04\x0bstreamtyped no string here") is None


def test_dates_in_seconds_and_in_nanoseconds_are_the_same_instant():
    when = datetime(2024, 5, 2, 8, 1, 5, tzinfo=UTC)
    seconds = int((when - datetime(2001, 1, 1, tzinfo=UTC)).total_seconds())
    assert apple_time(seconds) == apple_time(seconds * 1_000_000_000) == when
    assert apple_time(0) is None and apple_time(None) is None  # no time: none invented


def test_the_rendering_is_deterministic_and_keeps_no_blob_bytes():
    tables = {"message": [_message(1, None, nanos(datetime(2024, 1, 1)), attributedBody=_archive("secret-free"),
                                   message_summary_info=b"\x00\x01binary")]}
    data = database(tables)
    text = decode(data, "chat.db").text
    assert text == decode(data, "chat.db").text
    row = orjson.loads(text)["tables"]["message"][0]
    assert row["attributedBody"]["text"] == "secret-free" and row["attributedBody"]["blob"] > 0
    assert set(row["message_summary_info"]) == {"blob", "sha256"}


def test_a_table_without_rowids_is_rendered_in_key_order():
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID")
    db.executemany("INSERT INTO t VALUES (?, ?)", [("b", 2), ("a", 1)])
    db.commit()
    rows = orjson.loads(sqlite.render(db.serialize()))["tables"]["t"]
    assert rows == [{"k": "a", "v": 1}, {"k": "b", "v": 2}]


def test_a_damaged_database_is_refused_with_a_reason():
    data = database({"message": [_message(1, "hi", 1)]})
    with pytest.raises(IngestError) as err:
        decode(data[:4096] + b"\x00" * 100 + data[4196:8192], "chat.db")
    assert err.value.reason is Reason.UNDECODABLE


def test_a_database_without_chats_is_read_per_handle_and_a_wal_beside_it_is_named():
    tables = {"handle": [{"ROWID": 1, "id": "+15550100", "service": "SMS"}],
              "message": [_message(2, "b", nanos(datetime(2024, 1, 2)), handle_id=1),
                          _message(1, "a", nanos(datetime(2024, 1, 1)), handle_id=1)]}
    with sqlite3.connect(":memory:") as db:  # a trimmed copy: no chat_message_join table at all
        db.executescript("CREATE TABLE handle (ROWID INTEGER PRIMARY KEY, id TEXT, service TEXT);"
                         "CREATE TABLE message (ROWID INTEGER PRIMARY KEY, guid TEXT, text TEXT, service TEXT, "
                         "date INTEGER, handle_id INTEGER, is_from_me INTEGER DEFAULT 0);")
        for table, rows in tables.items():
            for row in rows:
                db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                           list(row.values()))
        data = db.serialize()
    source = decode(data, "chat.db")
    assert registry.detect(source.text[:65536], "chat.db", threshold=0.5).grammar == "imessage"
    (session,) = GRAMMAR.parse(replace(source, siblings=("chat.db-wal",)), Settings())
    assert [t.content for t in session.turns] == ["a", "b"]  # oldest first, whatever the row order
    assert any("no chat_message_join" in a for a in session.assumptions)
    assert any("write-ahead log" in w for w in session.warnings)
    assert account(session, None).clean and GRAMMAR.count_turns(session.raw) == 2


def test_reactions_group_events_and_a_lost_message_is_found():
    t = nanos(datetime(2024, 5, 3, 12))
    sessions = _sessions({
        "handle": [{"ROWID": 1, "id": "bo@example.org", "service": "iMessage"}],
        "chat": [{"ROWID": 1, "guid": "iMessage;+;chat1", "display_name": "Crew"}],
        "message": [_message(1, None, t, is_from_me=1, item_type=2, group_title="Crew"),
                    _message(2, "ship it", t + 10**9, handle_id=1),
                    _message(3, "Liked “ship it”", t + 2 * 10**9, is_from_me=1, associated_message_type=2001,
                             associated_message_guid="p:0/G2")],
        "chat_message_join": [{"chat_id": 1, "message_id": i} for i in (1, 2, 3)]})
    (session,) = sessions
    assert session.session_id == "iMessage;+;chat1" and session.title == "Crew"
    assert [(t.speaker, t.role, t.kind) for t in session.turns] == [
        ("System", "system", "action"), ("bo@example.org", "user", "message"), ("Me", "user", "reaction")]
    assert session.turns[0].content == "Me renamed the chat: Crew"
    assert session.turns[2].extra["reactsTo"] == "p:0/G2"
    session.turns.pop(1)
    assert account(session, None).listed == ["/tables/message/1"]
