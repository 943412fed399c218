"""Facebook Messenger exports: mojibake repair, newest-first order, ties, System events."""

from __future__ import annotations

import orjson
import pytest

from models.records import SourceText
from models.settings import Settings
from parsers import registry
from parsers.grammars.messenger import repair
from tests.helpers import CONFORMANCE, load_source
from validators.accounting import account

G = registry.get("messenger")


def _parse(messages, name="inbox/x_1/message_1.json", **doc):
    body = {"participants": [{"name": "A"}], "messages": messages, "title": "T", "thread_path": "inbox/x_1", **doc}
    text = orjson.dumps(body).decode()
    (s,) = G.parse(SourceText(text, name, "0" * 64, len(text), "utf-8"), Settings())
    return s


def _m(content, ms, sender="A", mtype="Generic", **kw):
    return {"sender_name": sender, "timestamp_ms": ms, "content": content, "type": mtype, **kw}


def test_repair_undoes_latin1_mojibake_and_keeps_what_does_not_round_trip():
    assert repair("Bj\u00c3\u00b6rn") == "Björn"
    assert repair("\u00f0\u009f\u0091\u008d") == "👍"
    assert repair("café") == "café"  # a real é is not UTF-8 bytes: kept
    assert repair({"a": ["Ã¥"]}) == {"a": ["å"]}


def test_newest_first_file_is_emitted_oldest_first_and_ties_keep_reverse_file_order():
    s = _parse([_m("c", 3000), _m("b2", 2000), _m("b1", 2000), _m("a", 1000)])
    assert [t.content for t in s.turns] == ["a", "b1", "b2", "c"]
    assert [t.pointer for t in s.turns] == ["/messages/3", "/messages/2", "/messages/1", "/messages/0"]
    assert "reverse of their file order" in s.assumptions[0]


def test_an_oldest_first_file_keeps_file_order_for_ties():
    s = _parse([_m("a", 1000), _m("b1", 2000), _m("b2", 2000), _m("c", 3000)])
    assert [t.content for t in s.turns] == ["a", "b1", "b2", "c"]
    assert "keep their file order" in s.assumptions[0]


def test_a_message_without_a_time_stays_beside_its_neighbours():
    s = _parse([_m("c", 3000), {"sender_name": "A", "content": "no time", "type": "Generic"}, _m("a", 1000)])
    assert [t.content for t in s.turns] == ["a", "no time", "c"]
    assert s.turns[1].time is None and s.warnings == ["1 messages carry no time: no date set"]


@pytest.mark.parametrize(("mtype", "kind"), [("Subscribe", "join"), ("Unsubscribe", "part"), ("Call", "system")])
def test_membership_and_call_events_are_system(mtype, kind):
    s = _parse([_m("Ann added Bo to the group.", 1000, "Ann", mtype)])
    t = s.turns[0]
    assert (t.speaker, t.role, t.kind, t.extra["actor"]) == ("System", "system", kind, "Ann")


def test_time_is_aware_utc_from_milliseconds_raw_kept():
    s = _parse([_m("a", 1668628203612)])
    assert s.turns[0].time.isoformat() == "2022-11-16T19:50:03+00:00" and s.turns[0].time_raw == "1668628203612"
    assert (s.session_id, s.id_source, s.meta["filePart"]) == ("inbox/x_1", "source:thread_path", 1)


@pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="../shared/conformance is absent")
def test_conformance_fixture_same_millisecond():
    (s,) = G.parse(load_source(CONFORMANCE / "fixtures" / "chatminer_fb_messenger.json"), Settings())
    # Both at 1668628203612: the file is newest first, so the second entry is the older one.
    assert [t.speaker for t in s.turns] == ["John Doe", "Allan Smith"]
    assert s.session_id is None and s.id_source == "none"


def test_unknown_keys_and_types_are_counted_as_drift():
    s = _parse([_m("b", 2, mtype="Poll", poll_options=["x"]), _m("a", 1)])
    assert [t.content for t in s.turns] == ["a", "b"]
    assert s.meta["formatDrift"] == {"key:poll_options": {"count": 1, "first": "/messages/0"},
                                     "messageType:Poll": {"count": 1, "first": "/messages/0"}}


def test_detection_is_the_share_of_messenger_records():
    two = '{"participants": [], "messages": [{"sender_name": "A", "timestamp_ms": 1, "content": "x"}, '
    assert G.detect(two + '{"from": "B", "date": "2020", "text": "y"}]}', "message_1.json") == 0.5
    assert G.detect(two[:-2] + "]}", "message_1.json") == 1.0
    assert G.detect('{"sender_name": "A", "timestamp_ms": 1, "content": "x"}\n', "chat.jsonl") == 0.0


def test_an_end_to_end_encrypted_chat_export_is_read_as_the_same_messages():
    doc = {"participants": ["Ana", "Jo\u00e3o"], "threadName": "Jo\u00e3o", "messages": [
        {"isUnsent": False, "media": [], "reactions": [], "senderName": "Jo\u00e3o", "text": "Chegaste bem?",
         "timestamp": 1718000060000, "type": "text"},
        {"isUnsent": True, "media": [{"uri": "./media/p_1.jpg"}], "reactions": [{"actor": "Ana", "reaction": "x"}],
         "senderName": "Ana", "text": "", "timestamp": 1718000000000, "type": "media"}]}
    text = orjson.dumps(doc).decode()
    assert G.detect(text, "jo\u00e3o_1.json") == 1.0
    (s,) = G.parse(SourceText(text, "jo\u00e3o_1.json", "0" * 64, len(text), "utf-8"), Settings())
    assert (s.title, s.meta["participants"], s.session_id) == ("Jo\u00e3o", ["Ana", "Jo\u00e3o"], None)
    got = [(t.speaker, t.kind, t.content, t.pointer, t.time.isoformat()) for t in s.turns]
    assert got == [("Ana", "media", "[media: p_1.jpg]", "/messages/1", "2024-06-10T06:13:20+00:00"),
                   ("Jo\u00e3o", "message", "Chegaste bem?", "/messages/0", "2024-06-10T06:14:20+00:00")]
    assert s.turns[0].extra["unsent"] is True and "key:senderName" not in s.meta.get("formatDrift", {})


def test_a_thread_split_over_files_is_one_session_read_in_part_order():
    def part(n, *messages):
        body = {"participants": [{"name": "A"}], "messages": list(messages), "title": "T", "thread_path": "inbox/x_1"}
        text = orjson.dumps(body).decode() if messages else "{broken"
        return SourceText(text, f"inbox/x_1/message_{n}.json", str(n) * 64, len(text), "utf-8")

    parts = (part(1, _m("d", 4), _m("c", 3)), part(10), part(2, _m("b", 2), _m("a", 1)))
    group = SourceText("", "inbox/x_1", "f" * 64, 0, "utf-8", parts=parts)
    (s,) = G.parse(group, Settings())
    assert [t.content for t in s.turns] == ["a", "b", "c", "d"]
    assert s.turns[0].pointer == "/message_2.json/messages/1" and s.session_id == "inbox/x_1"
    assert [f["name"] for f in s.meta["files"]] == ["message_1.json", "message_2.json", "message_10.json"]
    assert s.coverage_reason == "1 files of the thread are not readable message lists: message_10.json"
    assert G.count_turns(s.raw) == 4 and account(s, None).clean
