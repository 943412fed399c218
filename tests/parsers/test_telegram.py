"""Telegram Desktop exports: entity text joining, full exports, service turns, media, times, detection."""

from __future__ import annotations

import orjson
import pytest

from models.records import SourceText
from models.settings import Settings
from parsers import registry
from tests.helpers import CONFORMANCE, GOLDEN, load_source

G = registry.get("telegram")


def _parse(doc, name="result.json"):
    text = orjson.dumps(doc).decode()
    return list(G.parse(SourceText(text, name, "0" * 64, len(text), "utf-8"), Settings()))


def _chat(*messages, **chat):
    return {"name": "Chat", "type": "personal_chat", "id": 5, **chat, "messages": list(messages)}


def test_entity_parts_are_joined_as_written():
    (s,) = _parse(_chat({"id": 1, "type": "message", "date_unixtime": "1700000000", "from": "Ann",
                         "text": ["see ", {"type": "link", "text": "https://x.org"}, " now"]}))
    assert s.turns[0].content == "see https://x.org now"


@pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="../shared/conformance is absent")
def test_conformance_fixture_entities_without_a_separator_string():
    # chat-miner's target reads "Link: https://telegram.org/" because it joins parts with a space;
    # Telegram's parts partition the text, so the file (no " " string between the parts) reads:
    source = load_source(CONFORMANCE / "fixtures" / "chatminer_telegram_single.json")
    (s,) = G.parse(source, Settings())
    assert [t.content for t in s.turns] == ["Minimal Message", "Link:https://telegram.org/"]
    assert [t.speaker for t in s.turns] == ["Author 1", "Author 2"]
    assert s.session_id is None and s.id_source == "none"
    assert s.turns[0].time.isoformat() == "2018-12-05T10:39:10+00:00"


def test_full_export_gives_one_session_per_chat_including_left_chats():
    doc = {"about": "Here is the data you requested.",
           "chats": {"about": "...", "list": [_chat({"type": "message", "from": "A", "text": "1"}, id=1),
                                              _chat({"type": "message", "from": "B", "text": "2"},
                                                    {"type": "message", "from": "C", "text": "3"}, id=2)]},
           "left_chats": {"list": [_chat({"type": "message", "from": "D", "text": "4"}, id=3)]}}
    sessions = _parse(doc)
    assert [(s.session_id, s.pointer, len(s.turns)) for s in sessions] == [
        ("1", "/chats/list/0", 1), ("2", "/chats/list/1", 2), ("3", "/left_chats/list/0", 1)]
    assert sessions[1].turns[1].pointer == "/chats/list/1/messages/1"
    assert all(G.count_turns(s.raw) == len(s.turns) for s in sessions)


def test_service_message_is_system_with_actor():
    (s,) = _parse(_chat({"id": 9, "type": "service", "date": "2024-01-01T10:00:00", "actor": "Ann",
                         "actor_id": "user1", "action": "invite_members", "members": ["Bo"], "text": ""}))
    t = s.turns[0]
    assert (t.speaker, t.role, t.kind) == ("System", "system", "join")
    assert t.extra["actor"] == "Ann" and t.extra["action"] == "invite_members"
    assert "Bo" in t.content


def test_times_unix_is_aware_date_alone_is_naive_and_bad_times_are_one_warning():
    (s,) = _parse(_chat({"type": "message", "from": "A", "text": "x", "date": "2024-01-01T10:00:00",
                         "date_unixtime": "1704103200"},
                        {"type": "message", "from": "A", "text": "y", "date": "2024-01-01T10:00:00"},
                        {"type": "message", "from": "A", "text": "z", "date": "2024-02-31T10:00:00"},
                        {"type": "message", "from": "A", "text": "w", "date_unixtime": "99999999999999999999"}))
    times = [t.time for t in s.turns]
    assert times[0].tzinfo is not None and times[1].tzinfo is None
    assert times[2] is None and times[3] is None
    assert [t.time_raw for t in s.turns][2:] == ["2024-02-31T10:00:00", "99999999999999999999"]
    assert len(s.warnings) == 1 and s.warnings[0].startswith("2 messages have a time that could not be read")


def test_media_is_kind_media_with_marker_and_caption():
    (s,) = _parse(_chat({"type": "message", "from": "A", "photo": "photos/p.jpg", "text": "look"},
                        {"type": "message", "from": "A", "file": "stickers/s.webp", "media_type": "sticker",
                         "sticker_emoji": "😀", "text": ""}))
    assert [(t.kind, t.content) for t in s.turns] == [
        ("media", "[photo: photos/p.jpg]\nlook"), ("media", "[sticker 😀: stickers/s.webp]")]


def test_deleted_account_and_non_object_entries_are_still_turns():
    (s,) = _parse(_chat({"type": "message", "from": None, "from_id": "user77", "text": "hi"}, 42))
    assert [t.speaker for t in s.turns] == ["user77", "System"]
    assert s.turns[1].kind == "notice" and s.turns[1].content == "42"
    assert G.count_turns(s.raw) == 2
    assert any("not objects" in w for w in s.warnings)


def test_extra_keys_follow_the_raw_time_convention():
    for path in (GOLDEN / "telegram").glob("*.expected.json"):
        for session in orjson.loads(path.read_bytes()):
            for turn in session["turns"]:
                for key in turn["extra"] or {}:
                    assert key not in ("date", "timestamp") and not key.endswith(("At", "Date", "Timestamp"))


@pytest.mark.parametrize(("sample", "score"), [
    ('{"name": "x", "id": 1, "messages": [{"id": 1, "type": "message", "date_unixtime": "1", "from": "A"}]}', 1.0),
    ('{"about": "Here is the data you requested.", "personal_information": {"user_id": 1}', 0.9),
    ('{"name": "x", "messages": [{"id": 1, "type": "message", "date": "2019-01-01T00:00:00", "from": "A"}]}', 1.0),
    ('{"messages": [{"type": "message", "date": "2019", "text": "a"}, {"user": "B", "ts": "1", "text": "b"}]}', 0.5),
    ('{"participants": [], "messages": [{"sender_name": "A", "timestamp_ms": 1, "type": "Generic"}]}', 0.0),
    ('{"guild": {}, "channel": {}, "messages": [{"type": "Default", "timestamp": "x"}]}', 0.0),
    ('[{"type": "message", "user": "U1", "ts": "1.2", "text": "x"}]', 0.0),
    ('{"model": "claude", "messages": [{"role": "user", "content": "hi"}], "type": "message"}', 0.0),
])
def test_detection_scores(sample, score):
    assert G.detect(sample, "result.json") == score


def test_unknown_keys_types_actions_and_entities_are_counted_as_drift():
    (s,) = _parse(_chat({"id": 1, "type": "message", "from": "A", "text": ["x", {"type": "sparkles", "text": "y"}],
                         "glow": 1},
                        {"id": 2, "type": "story", "from": "A", "text": "seen"},
                        {"id": 3, "type": "service", "actor": "A", "action": "launch_rocket", "text": ""}))
    assert [t.content for t in s.turns][:2] == ["xy", "seen"]
    assert s.meta["formatDrift"] == {
        "action:launch_rocket": {"count": 1, "first": "/messages/2"},
        "contentType:sparkles": {"count": 1, "first": "/messages/0"},
        "key:glow": {"count": 1, "first": "/messages/0"},
        "messageType:story": {"count": 1, "first": "/messages/1"},
    }
