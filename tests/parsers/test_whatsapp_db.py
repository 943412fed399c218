"""WhatsApp for Android's msgstore.db: both table layouts, one session per chat, every message row a
turn (attachments, locations, system rows, deleted and edited messages), the placeholder row declared.
Before this grammar a msgstore.db was no grammar's (quarantined ``no_grammar``)."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.text import decode
from tests.helpers import GOLDEN
from tests.renderers.whatsapp_db import OLD, database, millis

GRAMMAR = registry.get("whatsapp-db")
JIDS = [{"_id": 1, "user": "120363041234567890", "server": "g.us", "raw_string": "120363041234567890@g.us"},
        {"_id": 2, "user": "4915112345678", "server": "s.whatsapp.net", "raw_string": "4915112345678@s.whatsapp.net"}]


def _sessions(data: bytes):
    source = decode(data, "msgstore.db")
    assert registry.detect(source.text[:65536], "msgstore.db", threshold=0.5).grammar == "whatsapp-db"
    return list(GRAMMAR.parse(source, Settings()))


def _message(_id, chat, text, when, **more):
    return {"_id": _id, "chat_row_id": chat, "from_me": 0, "key_id": f"K{_id}", "timestamp": millis(when),
            "message_type": 0, "text_data": text, **more}


def test_the_recent_layout_is_one_session_per_chat_with_group_senders_and_me():
    t0 = datetime(2024, 3, 1, 8)
    data = database({"jid": JIDS, "chat": [{"_id": 1, "jid_row_id": 1, "subject": "Climbing"},
                                           {"_id": 2, "jid_row_id": 2}],
                     "message": [_message(1, 1, "who drives?", t0, sender_jid_row_id=2),
                                 _message(2, 2, "rope?", t0.replace(hour=9)),
                                 _message(3, 1, "I do", t0.replace(minute=5), from_me=1)]})
    group, direct = _sessions(data)
    assert (group.session_id, group.title) == ("120363041234567890@g.us", "Climbing")
    assert [(t.speaker, t.content, t.time) for t in group.turns] == [
        ("4915112345678", "who drives?", datetime(2024, 3, 1, 8, tzinfo=UTC)),
        ("Me", "I do", datetime(2024, 3, 1, 8, 5, tzinfo=UTC))]
    assert (direct.session_id, direct.title, direct.turns[0].speaker) == (
        "4915112345678@s.whatsapp.net", "4915112345678", "4915112345678")  # a 1:1 chat's messages: the other side
    assert GRAMMAR.count_turns(group.raw) == 2 and GRAMMAR.count_turns(direct.raw) == 1


def test_attachments_locations_system_rows_deleted_and_edited_messages():
    t0 = datetime(2024, 3, 2, 19)
    data = database({"jid": JIDS, "chat": [{"_id": 1, "jid_row_id": 2}],
                     "message": [_message(1, 1, None, t0, message_type=7, from_me=1),
                                 _message(2, 1, None, t0, message_type=1),
                                 _message(3, 1, None, t0, message_type=5),
                                 _message(4, 1, None, t0, message_type=15),
                                 _message(5, 1, "fixed", t0)],
                     "message_system": [{"message_row_id": 1, "action_type": 11}],
                     "message_media": [{"message_row_id": 2, "file_path": "Media/IMG-1.jpg",
                                        "media_caption": "topo"}],
                     "message_location": [{"message_row_id": 3, "latitude": 47.5, "longitude": 8.5,
                                           "place_name": "Hall"}],
                     "message_edit_info": [{"message_row_id": 5, "original_key_id": "K5", "edited_timestamp": 1,
                                            "sender_timestamp": 1}]})
    (s,) = _sessions(data)
    assert [(t.speaker, t.role, t.kind, t.content) for t in s.turns] == [
        ("System", "system", "action", "[system message, action type 11]"),
        ("4915112345678", "user", "media", "topo\n[image: IMG-1.jpg]"),
        ("4915112345678", "user", "media", "[location: 47.5, 8.5 Hall]"),
        ("4915112345678", "user", "message", ""), ("4915112345678", "user", "message", "fixed")]
    assert s.turns[0].extra["actionType"] == 11 and s.turns[3].extra["deleted"] and s.turns[4].extra["edited"]


def test_the_old_layout_and_its_placeholder_row():
    t0 = datetime(2014, 1, 7, 12)
    sender = "4917611@s.whatsapp.net"
    rows = [{"_id": 1, "key_remote_jid": "-1", "key_from_me": 0, "key_id": "-1", "status": -1, "timestamp": 0},
            {"_id": 2, "key_remote_jid": "123-456@g.us", "key_from_me": 1, "key_id": "A1", "status": 6,
             "timestamp": millis(t0)},
            {"_id": 3, "key_remote_jid": "123-456@g.us", "key_from_me": 0, "key_id": "A2", "data": "bins?",
             "timestamp": millis(t0.replace(minute=1)), "media_wa_type": "0", "remote_resource": sender},
            {"_id": 4, "key_remote_jid": "123-456@g.us", "key_from_me": 0, "key_id": "A3", "media_wa_type": "1",
             "media_caption": "this", "timestamp": millis(t0.replace(minute=2)), "remote_resource": sender}]
    (s,) = _sessions(database({"chat_list": [{"key_remote_jid": "123-456@g.us", "subject": "Flat"}], "messages": rows},
                              OLD))
    assert (s.session_id, s.title, s.meta["layout"]) == ("123-456@g.us", "Flat", "messages")
    assert [(t.speaker, t.kind, t.content) for t in s.turns] == [
        ("System", "action", "[system message]"), ("4917611", "message", "bins?"),
        ("4917611", "media", "this\n[image]")]
    assert [(r.kind, r.pointer) for r in s.regions] == [("empty_record", "/tables/messages/0")]


def test_a_message_of_an_unlisted_chat_is_kept_in_a_session_of_its_own():
    data = database({"jid": JIDS, "chat": [{"_id": 1, "jid_row_id": 2}],
                     "message": [_message(1, 1, "hi", datetime(2024, 1, 1)),
                                 _message(2, 9, "orphan", datetime(2024, 1, 2))]})
    _, orphan = _sessions(data)
    assert orphan.session_id is None and [t.content for t in orphan.turns] == ["orphan"]
    assert "the chat table does not list" in orphan.warnings[0]


def test_the_golden_databases_are_complete_documents():
    for path in (GOLDEN / "whatsapp-db" / "msgstore.db", GOLDEN / "whatsapp-db" / "old" / "msgstore.db"):
        got = process_bytes(path.read_bytes(), path.name, RunContext.from_settings(Settings()))
        docs = [orjson.loads(s.encoded) for s in got.sessions]
        assert docs and all(d["artifacts"]["Chatthistorik"].get("coverage") != "partial" for d in docs)
        assert {d["artifacts"]["ByggLogg"]["grammar"]["id"] for d in docs} == {"whatsapp-db"}
