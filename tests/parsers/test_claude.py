"""Claude.ai exports: senders, content blocks, attachments, models, odd entries, streaming, detection."""

from __future__ import annotations

import orjson
import pytest

from models.errors import ParseError
from models.records import ModelRef, RegionKind, SourceText
from models.settings import Settings
from parsers import registry
from parsers.grammars.claude import render_blocks
from tests.helpers import GOLDEN, load_source, streamed_sessions
from validators.accounting import account

G = registry.get("claude")


def _source(doc, name="conversations.json"):
    text = doc if isinstance(doc, str) else orjson.dumps(doc).decode()
    return SourceText(text, name, "0" * 64, len(text), "utf-8")


def _parse(doc, name="conversations.json"):
    return list(G.parse(_source(doc, name), Settings()))


def _conv(*messages, **fields):
    return {"uuid": "c-1", "name": "Chat", "created_at": "2024-05-01T10:00:00Z", **fields,
            "chat_messages": list(messages)}


def test_senders_map_to_human_and_claude_and_others_are_kept():
    (s,) = _parse([_conv({"sender": "human", "text": "hi"}, {"sender": "assistant", "text": "hello"},
                         {"sender": "Alice", "text": "me too"}, {"text": "no sender"})])
    assert [(t.speaker, t.role) for t in s.turns] == [
        ("Human", "user"), ("Claude", "assistant"), ("Alice", "other"), ("unknown", "other")]
    assert G.count_turns(s.raw) == 4


def test_provider_from_the_format_and_a_model_only_when_named():
    (s,) = _parse([_conv({"sender": "human", "text": "q"}, {"sender": "assistant", "text": "a"})])
    assert s.turns[0].model is None
    assert s.turns[1].model == ModelRef("anthropic", None, None)
    assert any("anthropic" in a for a in s.assumptions)
    (s,) = _parse([_conv({"sender": "assistant", "text": "a"},
                         {"sender": "assistant", "text": "b", "model": "claude-3-haiku-20240307"},
                         model="claude-3-5-sonnet-20241022")])
    assert [t.model.name for t in s.turns] == ["claude-3-5-sonnet-20241022", "claude-3-haiku-20240307"]
    (s,) = _parse([_conv({"sender": "human", "text": "only me"})])
    assert s.assumptions == []


def test_blocks_render_in_order_with_markers():
    message = {"text": "ignored when blocks exist", "content": [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "name": "search", "input": {"q": "x", "a": [1]}},
        {"type": "tool_result", "name": "search", "content": [{"type": "text", "text": "found"}]},
        {"type": "tool_result", "is_error": True, "content": "bad"},
        {"type": "token_budget"},
    ]}
    assert render_blocks(message) == (
        "[thinking]\nhmm\nLet me check.\n[tool_use: search]\n{\"a\":[1],\"q\":\"x\"}\n"
        "[tool_result: search]\nfound\n[tool_result (error)]\nbad\n[token_budget]")
    assert render_blocks({"text": "plain", "content": []}) == "plain"
    assert render_blocks({}) == ""


def test_tool_kinds():
    (s,) = _parse([_conv(
        {"sender": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "tool_use", "name": "t"}]},
        {"sender": "human", "content": [{"type": "tool_result", "content": "r"}]},
        {"sender": "human", "content": [{"type": "tool_result", "content": "r"}, {"type": "text", "text": "and"}]},
    )])
    assert [t.kind for t in s.turns] == ["tool_call", "tool_result", "message"]


def test_attachments_and_files_are_marked_and_listed():
    (s,) = _parse([_conv({"sender": "human", "text": "see", "attachments": [
        {"file_name": "a.csv", "file_type": "text/csv", "file_size": 10, "extracted_content": "x,y"}],
        "files": [{"file_name": "b.png"}]})])
    t = s.turns[0]
    assert t.content == "see\n[attachment: a.csv]\nx,y\n[file: b.png]"
    assert t.extra["attachments"] == [{"file_name": "a.csv", "file_type": "text/csv", "file_size": 10}]
    assert t.extra["files"] == ["b.png"]


def test_an_entry_that_is_not_an_object_is_still_a_turn():
    (s,) = _parse([_conv({"sender": "human", "text": "a"}, None, 7)])
    assert [(t.speaker, t.role, t.kind, t.content) for t in s.turns[1:]] == [
        ("System", "system", "notice", "null"), ("System", "system", "notice", "7")]
    assert G.count_turns(s.raw) == len(s.turns) == 3
    assert s.warnings == ["2 of the chat_messages entries are not objects: kept verbatim as System notices"]


def test_times_aware_with_fractions_and_unreadable_ones_warned_once():
    (s,) = _parse([_conv({"sender": "human", "text": "a", "created_at": "2024-05-01T10:00:01.123456Z"},
                         {"sender": "human", "text": "b", "created_at": "2024-02-30T10:00:00Z"},
                         {"sender": "human", "text": "c", "created_at": "soon"})])
    assert s.created.isoformat() == "2024-05-01T10:00:00+00:00"
    assert s.turns[0].time.isoformat() == "2024-05-01T10:00:01+00:00"
    assert [t.time_raw for t in s.turns[1:]] == ["2024-02-30T10:00:00Z", "soon"]
    assert [t.time for t in s.turns[1:]] == [None, None]
    assert s.warnings == ["2 times could not be read (first '2024-02-30T10:00:00Z' at /0/chat_messages/1): "
                          "no time set there"]


def test_a_single_conversation_object_and_an_empty_title():
    (s,) = _parse(_conv({"sender": "human", "text": "hi"}, name=""))
    assert s.session_id == "c-1" and s.id_source == "source:uuid" and s.title is None
    assert (s.pointer, s.turns[0].pointer) == ("", "/chat_messages/0")
    assert account(s, None).clean


def test_a_wrapper_object_streams_one_conversation_at_a_time():
    doc = {"account": {"uuid": "u-1"}, "conversations": [_conv({"sender": "human", "text": "a"}),
                                                         {**_conv({"sender": "human", "text": "b"}), "uuid": "c-2"}]}
    whole = _parse(doc)
    streamed = streamed_sessions(G, orjson.dumps(doc), _source(doc))
    for got in (whole, streamed):
        assert [(s.session_id, s.pointer, s.turns[0].pointer) for s in got] == [
            ("c-1", "/conversations/0", "/conversations/0/chat_messages/0"),
            ("c-2", "/conversations/1", "/conversations/1/chat_messages/0")]
        assert all(account(s, None).clean for s in got)


def test_conversations_with_no_messages_are_sessions_with_no_interactions():
    sessions = _parse([_conv(), {"uuid": "c-2", "name": "draft", "chat_messages": None}, {"uuid": "c-3"}])
    assert [(s.session_id, len(s.turns), G.count_turns(s.raw)) for s in sessions] == [
        ("c-1", 0, 0), ("c-2", 0, 0), ("c-3", 0, 0)]
    assert all(s.warnings == ["the conversation has no messages in the export: a session with no interactions"]
               for s in sessions)


def test_messages_with_only_attachments_or_only_tool_blocks_are_turns():
    (s,) = _parse([_conv(
        {"sender": "human", "text": "", "content": [{"type": "text", "text": ""}],
         "files": [{"file_name": "scan.png"}]},
        {"sender": "human", "text": "", "attachments": [{"file_name": "notes.txt", "extracted_content": "x"}]},
        {"sender": "assistant", "text": "", "content": [{"type": "tool_use", "name": "web_search",
                                                          "input": {"query": "tides"}}]},
        {"sender": "assistant", "text": "", "content": [{"type": "tool_result", "name": "web_search",
                                                          "content": [{"type": "text", "text": "High at 6"}]}]},
        {"sender": "assistant", "text": "", "content": [{"type": "text", "text": ""}]},
    )])
    assert [(t.kind, t.content) for t in s.turns] == [
        ("message", "[file: scan.png]"), ("message", "[attachment: notes.txt]\nx"),
        ("tool_call", '[tool_use: web_search]\n{"query":"tides"}'),
        ("tool_result", "[tool_result: web_search]\nHigh at 6")]
    assert [(r.kind, r.pointer) for r in s.regions] == [(RegionKind.EMPTY_RECORD, "/0/chat_messages/4")]
    assert G.count_turns(s.raw) == 4 and account(s, None).clean


def test_newer_layout_block_times_thinking_and_unknown_blocks():
    (s,) = _parse([_conv(
        {"uuid": "m1", "sender": "human", "text": "Why?", "content": [
            {"start_timestamp": "2025-06-01T10:00:00.100Z", "stop_timestamp": "2025-06-01T10:00:00.100Z",
             "type": "text", "text": "Why?", "citations": []}]},
        {"uuid": "m2", "sender": "assistant", "text": "", "created_at": "2025-06-01T10:00:05Z", "content": [
            {"type": "thinking", "thinking": "The user asks why.", "summaries": [{"summary": "Thinking"}],
             "cut_off": False},
            {"type": "voice_note", "title": "Answer", "text": "Because."},
            {"type": "knowledge_card", "title": "Why", "content": "A card."}]},
    )])
    assert s.turns[0].time.isoformat() == "2025-06-01T10:00:00+00:00"
    assert s.turns[1].content == ("[thinking]\nThe user asks why.\n[voice note: Answer]\nBecause.\n"
                                  "[knowledge_card]\nA card.")
    assert s.meta["formatDrift"] == {"blockType:knowledge_card": {"count": 1, "first": "/0/chat_messages/1/content/2"}}


def test_a_tree_with_a_current_leaf_keeps_that_branch_and_declares_the_others():
    root = "00000000-0000-4000-8000-000000000000"
    (s,) = _parse([_conv(
        {"uuid": "u1", "parent_message_uuid": root, "sender": "human", "text": "Name a colour"},
        {"uuid": "a1", "parent_message_uuid": "u1", "sender": "assistant", "text": "Red"},
        {"uuid": "a2", "parent_message_uuid": "u1", "sender": "assistant", "text": "Blue"},
        {"uuid": "u2", "parent_message_uuid": "a2", "sender": "human", "text": "Another"},
        {"uuid": "a3", "parent_message_uuid": "u2", "sender": "assistant", "text": "Green"},
        current_leaf_message_uuid="a3")])
    assert [t.content for t in s.turns] == ["Name a colour", "Blue", "Another", "Green"]
    assert [(r.kind, r.pointer, r.content, r.reason) for r in s.regions] == [
        (RegionKind.OFF_BRANCH, "/0/chat_messages/1", "Red",
         "not on the current branch: a retried answer branching after message 'u1'")]
    assert G.count_turns(s.raw) == 4 and account(s, None).clean


def test_streaming_gives_the_same_sessions_as_parse():
    path = GOLDEN / "claude" / "conversations.json"
    source = load_source(path)
    whole = list(G.parse(source, Settings()))
    streamed = streamed_sessions(G, path.read_bytes(), source)
    assert [(s.session_id, s.turns, s.assumptions) for s in streamed] == \
           [(s.session_id, s.turns, s.assumptions) for s in whole]


def test_entries_that_are_not_conversations_are_parse_errors():
    with pytest.raises(ParseError):
        _parse([{"name": "n"}])
    with pytest.raises(ParseError):
        _parse([{"uuid": "x", "chat_messages": "hi"}])
    with pytest.raises(ParseError):
        _parse('[{"uuid": "x", "chat_messages": [')


def test_detection_is_claude_and_not_chatgpt():
    text = (GOLDEN / "claude" / "conversations.json").read_text()
    assert registry.detect(text, "conversations.json", threshold=0.5).grammar == "claude"
    assert registry.detect(text[:400], "data-2024/conversations.json", threshold=0.5).grammar == "claude"
    chatgpt = (GOLDEN / "chatgpt" / "conversations.json").read_text()
    assert G.detect(chatgpt, "conversations.json") == 0.0
