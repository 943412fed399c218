"""JSON Lines message logs: grouping, bad lines, the fine-tuning shape, models, times, detection."""

from __future__ import annotations

import orjson
import pytest

from models.records import ModelRef, SourceText
from models.settings import Settings
from parsers import registry
from parsers.text import decode
from validators.accounting import account

G = registry.get("jsonl")


def _text(*rows):
    return "\n".join(r if isinstance(r, str) else orjson.dumps(r).decode() for r in rows) + "\n"


def _parse(*rows, name="chat.jsonl"):
    text = _text(*rows)
    return list(G.parse(SourceText(text, name, "0" * 64, len(text), "utf-8"), Settings()))


def test_one_session_per_file_located_by_pointers_in_the_list_of_lines():
    sessions = _parse({"role": "user", "content": "a"}, "", "   ", {"role": "assistant", "content": "b"})
    (s,) = sessions
    assert [t.content for t in s.turns] == ["a", "b"]
    assert [t.lines for t in s.turns] == [(1, 1), (4, 4)]
    assert [t.pointer for t in s.turns] == ["/0", "/3"]
    assert (s.session_id, s.id_source, s.lines, s.pointer) == (None, "none", None, "")
    assert s.raw == {"0": {"role": "user", "content": "a"}, "3": {"role": "assistant", "content": "b"}}
    assert G.count_turns(s.raw) == 2
    assert account(s, None).clean


def test_a_line_that_is_not_json_is_named_and_seen_by_the_count():
    (s,) = _parse({"role": "user", "content": "a"}, "{oops", {"role": "assistant", "content": "b"}, "42")
    assert len(s.turns) == 2
    assert G.count_turns(s.raw) == 4
    assert s.coverage_reason == "2 lines are not JSON message objects (lines 2, 4)"


def test_grouped_by_session_field_in_order_of_first_appearance():
    sessions = _parse(
        {"conversation_id": "b", "role": "user", "content": "b1"},
        {"conversation_id": "a", "role": "user", "content": "a1"},
        {"role": "assistant", "content": "a2 (no field: the session of the line before)"},
        "not json",
        {"conversation_id": "b", "role": "assistant", "content": "b2"},
    )
    assert [(s.session_id, s.id_source) for s in sessions] == [("b", "source:conversation_id"),
                                                                ("a", "source:conversation_id")]
    b, a = sessions
    assert [t.content for t in b.turns] == ["b1", "b2"] and b.coverage_reason is None
    assert G.count_turns(b.raw) == 2
    assert len(a.turns) == 2 and G.count_turns(a.raw) == 3 and "lines 4" in a.coverage_reason


def test_fine_tuning_lines_are_one_session_each_in_file_order():
    sessions = _parse(
        {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]},
        {"thread_id": "t9", "messages": [{"role": "assistant", "content": "x"}, "odd"]},
    )
    first, second = sessions
    assert [t.kind for t in first.turns] == ["system", "message"] and first.pointer == "/0"
    assert [t.pointer for t in first.turns] == ["/0/messages/0", "/0/messages/1"]
    assert second.raw["thread_id"] == "t9" and account(second, None).clean
    assert (second.session_id, second.id_source) == ("t9", "source:thread_id")
    assert second.turns[1].speaker == "System" and second.turns[1].extra == {"malformedEntry": True}
    assert [G.count_turns(s.raw) for s in sessions] == [2, 2]


def test_speaker_role_and_kinds():
    (s,) = _parse(
        {"role": "user", "name": "Dana", "content": "hi"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        {"role": "developer", "content": "be nice"},
        {"role": "narrator", "content": "meanwhile"},
    )
    assert [(t.speaker, t.role, t.kind) for t in s.turns] == [
        ("Dana", "user", "message"), ("assistant", "assistant", "tool_call"), ("tool", "tool", "tool_result"),
        ("developer", "system", "system"), ("narrator", "other", "message")]
    assert s.turns[1].content == "[tool_calls: f]"
    assert s.turns[2].extra == {"toolCallId": "c1"}


@pytest.mark.parametrize(("row", "model"), [
    ({"model": "gpt-4o"}, ModelRef(None, "gpt-4o", None)),
    ({"model": "openai/gpt-4o"}, ModelRef("openai", "gpt-4o", None)),
    ({"model": "claude-3-opus", "provider": "anthropic"}, ModelRef("anthropic", "claude-3-opus", None)),
    ({"model": ""}, None),
    ({}, None),
])
def test_model_only_as_given(row, model):
    (s,) = _parse({"role": "assistant", "content": "x", **row})
    assert s.turns[0].model == model


def test_times_iso_epoch_seconds_and_milliseconds():
    (s,) = _parse(
        {"role": "user", "content": "a", "timestamp": "2025-01-01T10:00:00"},
        {"role": "user", "content": "b", "created": 1735725600},
        {"role": "user", "content": "c", "created_at": 1735725600000},
        {"role": "user", "content": "d", "timestamp": "2025-01-01T10:00:00+01:00"},
        {"role": "user", "content": "e", "timestamp": "last tuesday"},
        {"role": "user", "content": "f"},
    )
    times = [t.time.isoformat() if t.time else None for t in s.turns]
    assert times == ["2025-01-01T10:00:00", "2025-01-01T10:00:00+00:00", "2025-01-01T10:00:00+00:00",
                     "2025-01-01T10:00:00+01:00", None, None]
    assert [t.time_raw for t in s.turns] == ["2025-01-01T10:00:00", "1735725600", "1735725600000",
                                             "2025-01-01T10:00:00+01:00", "last tuesday", None]
    assert s.warnings == ["1 time could not be read (first 'last tuesday' at line 5): no time set there"]


def test_session_id_from_the_file_name_only_for_a_single_session_without_a_field():
    (s,) = _parse({"role": "user", "content": "a"}, name="logs/session-42.jsonl")
    assert (s.session_id, s.id_source) == ("42", "file-name")
    sessions = _parse({"role": "user", "content": "a"}, {"messages": []}, name="session-42.jsonl")
    assert sessions[0].session_id is None


def test_detection_is_the_share_of_records():
    text = _text({"role": "user", "content": "a"}, {"role": "assistant", "content": "b"})
    assert G.detect(text, "x.jsonl") == 1.0
    assert registry.detect(text, "x.jsonl", threshold=0.5).grammar == "jsonl"
    assert G.detect('[{"role": "user", "content": "a"}]', "x.json") == 0.0  # a JSON array is not JSON Lines
    assert G.detect(_text({"user": "a", "text": "b"}, {"kind": "x"}, "oops", {"user": "c"}), "x.jsonl") == 0.25
    assert G.detect("[10:00] <alice> hi\n", "x.log") == 0.0
    # a 64 KiB sample may end inside a line: that line is not held against the file
    long = _text(*[{"role": "user", "content": "x" * 100}] * 700)
    assert G.detect(long[:65536], "chat.jsonl") == 1.0
    # a one-line JSON export with a messages list of another shape is not a fine-tuning line
    assert G.detect(orjson.dumps({"name": "c", "messages": [{"from": "a", "text": "b"}]}).decode(), "r.json") == 0.0


@pytest.mark.parametrize(("row", "speaker", "content", "time"), [
    ({"sender_name": "Ana Lima", "timestamp_ms": 1700000000123, "content": "oi"}, "Ana Lima", "oi",
     "2023-11-14T22:13:20+00:00"),
    ({"sender_name": "Ana Lima", "timestamp_ms": 1700000000123,
      "photos": [{"uri": "photos/1.jpg", "creation_timestamp": 1700000000}]}, "Ana Lima", "[photos: photos/1.jpg]",
     "2023-11-14T22:13:20+00:00"),
    ({"id": 7, "type": "message", "date": "2023-01-05T10:00:00", "from": "Ivan", "from_id": "user1",
      "text": ["see ", {"type": "link", "text": "https://x.org"}]}, "Ivan", "see https://x.org",
     "2023-01-05T10:00:00"),
    ({"author": "Kim", "message": "hello", "time": "2024-02-01 08:00:00"}, "Kim", "hello", "2024-02-01T08:00:00"),
    ({"author": {"id": "1", "name": "kim#0001"}, "content": "yo", "timestamp": "2024-02-01T08:00:00+00:00"},
     "kim#0001", "yo", "2024-02-01T08:00:00+00:00"),
    ({"type": "message", "user": "U024BE7LH", "text": "deploy done", "ts": "1700000000.000200"}, "U024BE7LH",
     "deploy done", "2023-11-14T22:13:20+00:00"),
    ({"user_name": "sam", "user": "U1", "text": "x", "ts": "1700000000.000200"}, "sam", "x",
     "2023-11-14T22:13:20+00:00"),
    ({"speaker": "Interviewer", "text": "Tell me more.", "timestamp": "2024-03-01T09:00:00Z"}, "Interviewer",
     "Tell me more.", "2024-03-01T09:00:00+00:00"),
])
def test_chat_record_layouts(row, speaker, content, time):
    (s,) = _parse(row)
    (t,) = s.turns
    assert (t.speaker, t.content, t.time.isoformat(), t.pointer) == (speaker, content, time, "/0")
    assert G.detect(_text(row), "x.jsonl") == 1.0
    assert G.count_turns(s.raw) == 1 and account(s, None).clean


def test_unknown_keys_are_drift_and_objects_without_message_fields_are_metadata():
    (s,) = _parse({"title": "Export of #general", "exported": "2024-01-01"},
                  {"sender_name": "Bo", "timestamp_ms": 1, "content": "a", "reactions": [], "mood": "happy"},
                  {"sender_name": "Bo", "timestamp_ms": 2, "content": "b", "mood": "calm"})
    assert [t.content for t in s.turns] == ["a", "b"]
    assert s.meta["formatDrift"] == {"key:mood": {"count": 2, "first": "/1"},
                                     "record:no message fields": {"count": 1, "first": "/0"}}
    (region,) = s.regions
    assert (region.kind, region.pointer) == ("metadata", "/0") and "Export of #general" in region.content
    assert G.count_turns(s.raw) == 2 and s.coverage_reason is None


def test_a_turn_taken_away_is_found_by_the_accounting():
    sessions = _parse({"conversation_id": "b", "from": "x", "text": "1"}, {"conversation_id": "a", "from": "y",
                                                                           "text": "2"},
                      {"conversation_id": "b", "from": "x", "text": "3"})
    b = sessions[0]
    assert account(b, None).clean
    b.turns.pop()
    assert account(b, None).listed == ["/2"]


def test_unknown_content_blocks_and_conversation_keys_are_drift_and_keep_their_text():
    (s,) = _parse({"messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                                                                  {"type": "text", "text": "ok"}],
                                 "weight": 0}], "split": "train"})
    assert s.turns[0].content == "[thinking]\nhm\nok"
    assert s.meta["formatDrift"] == {"contentType:thinking": {"count": 1, "first": "/0/messages/0/content/0"},
                                     "key:split": {"count": 1, "first": "/0"},
                                     "key:weight": {"count": 1, "first": "/0/messages/0"}}


def test_sharegpt_conversation_lines():
    (s,) = _parse({"id": "sg-1", "conversations": [
        {"from": "system", "value": "Be brief."}, {"from": "human", "value": "7 * 8?"},
        {"from": "function_call", "value": '{"name": "calc"}'}, {"from": "observation", "value": "56"},
        {"from": "gpt", "value": "56."}]})
    assert [(t.speaker, t.role, t.kind, t.pointer) for t in s.turns] == [
        ("system", "system", "system", "/0/conversations/0"), ("human", "user", "message", "/0/conversations/1"),
        ("function_call", "assistant", "tool_call", "/0/conversations/2"),
        ("observation", "tool", "tool_result", "/0/conversations/3"),
        ("gpt", "assistant", "message", "/0/conversations/4")]
    assert G.count_turns(s.raw) == 5 and s.pointer == "/0"
    # a one-line platform export whose messages are not API-style is not a conversation line
    assert G.detect(orjson.dumps({"messages": [{"from": "a", "text": "b", "date": "x"}]}).decode(), "r.json") == 0.0


def _mattermost(lines):
    return _text(*lines), _parse(*lines, name="import.jsonl")


def test_a_mattermost_export_is_one_session_per_channel_with_replies_after_their_post():
    post = {"team": "t", "channel": "c", "user": "ann", "message": "q", "create_at": 1714723200000,
            "replies": [{"user": "bo", "message": "a", "create_at": 1714723260000}]}
    text, sessions = _mattermost([
        {"type": "version", "version": 1}, {"type": "user", "user": {"username": "ann"}},
        {"type": "post", "post": post},
        {"type": "direct_post", "direct_post": {"channel_members": ["bo", "ann"], "user": "bo", "message": "dm",
                                                "create_at": 1714723300000}},
        {"type": "post", "post": {**post, "replies": None, "message": "again"}},
    ])
    assert [(s.session_id, [t.content for t in s.turns]) for s in sessions] == [
        ("t/c", ["q", "a", "again"]), ("ann,bo", ["dm"])]
    assert sessions[0].turns[1].pointer == "/2/post/replies/0"
    assert [r.reason for r in sessions[0].regions] == ["the export's version record", "the export's user record"]
    assert [G.count_turns(s.raw) for s in sessions] == [3, 1]
    assert registry.detect(text, "import.jsonl", threshold=0.5).grammar == "jsonl"


def test_a_mattermost_system_post_is_a_system_turn_with_its_user_as_actor():
    _, (session,) = _mattermost([{"type": "post", "post": {
        "team": "t", "channel": "c", "user": "bo", "type": "system_join_channel", "message": "bo joined the channel.",
        "create_at": 1714723200000}}])
    turn = session.turns[0]
    assert (turn.speaker, turn.role, turn.kind, turn.extra) == ("System", "system", "system",
                                                                {"actor": "bo", "type": "system_join_channel"})


def test_signal_exports_data_json_is_its_own_layout():
    """signal-export's data.json: the exporter's two trailing spaces are not the text; the quote,
    reactions and flags that hold something are kept; a record with only some of its keys is not it."""
    from parsers.grammars.jsonl import layout_of

    line = ('{"date": "2024-03-01T09:16:40", "sender": "Me", "body": "Yes.\\nAt 10.  ", '
            '"quote": "\\n\\n> when?\\n\\n", "sticker": "", "reactions": [["Ann", "👍"]], '
            '"attachments": [], "deleted": false, "call": false, "missed": false}\n')
    source = decode((line * 2).encode(), "Ann/data.json")
    (session,) = registry.get("jsonl").parse(source, Settings())
    turn = session.turns[0]
    assert (turn.speaker, turn.content) == ("Me", "Yes.\nAt 10.")
    assert turn.extra == {"quote": "\n\n> when?\n\n", "reactions": [["Ann", "👍"]]}
    assert layout_of({"sender": "a", "body": "b", "date": "2024-01-01"}).name == "generic"
