"""ChatGPT exports: the current-branch decision, models, content types, times, streaming, detection."""

from __future__ import annotations

import io

import orjson
import pytest

from models.errors import ParseError
from models.records import ModelRef, SourceText
from models.settings import Settings
from parsers import registry
from parsers.grammars.chatgpt import current_branch, render_content
from tests.helpers import CONFORMANCE, GOLDEN, load_source

G = registry.get("chatgpt")


def _source(doc, name="conversations.json"):
    text = doc if isinstance(doc, str) else orjson.dumps(doc).decode()
    return SourceText(text, name, "0" * 64, len(text), "utf-8")


def _parse(doc, name="conversations.json"):
    return list(G.parse(_source(doc, name), Settings()))


def _node(nid, parent, children, role=None, text="", **message):
    msg = None if role is None else {"id": nid, "author": {"role": role}, "create_time": 1700000000,
                                     "content": {"content_type": "text", "parts": [text]}, **message}
    return {"id": nid, "parent": parent, "children": children, "message": msg}


def _tree():
    """root -> u1 -> (a1 | a2 -> u2 -> a3); u1 edited as u1b -> a4."""
    return {
        "root": _node("root", None, ["u1", "u1b"]),
        "u1": _node("u1", "root", ["a1", "a2"], "user", "q"),
        "a1": _node("a1", "u1", [], "assistant", "first answer"),
        "a2": _node("a2", "u1", ["u2"], "assistant", "second answer"),
        "u2": _node("u2", "a2", ["a3"], "user", "follow-up"),
        "a3": _node("a3", "u2", [], "assistant", "done"),
        "u1b": _node("u1b", "root", ["a4"], "user", "edited q"),
        "a4": _node("a4", "u1b", [], "assistant", "edited answer"),
    }


def test_current_branch_is_the_path_from_current_node_to_the_root():
    (s,) = _parse([{"id": "c", "current_node": "a3", "mapping": _tree()}])
    assert [t.content for t in s.turns] == ["q", "second answer", "follow-up", "done"]
    assert [t.pointer for t in s.turns] == ["/0/mapping/u1", "/0/mapping/a2", "/0/mapping/u2", "/0/mapping/a3"]
    # the independent count sees every message, so the gate marks the session partial
    assert G.count_turns(s.raw) == 7
    assert s.meta["offBranchNodes"] == ["a1", "a4", "u1b"]
    assert s.coverage_reason.startswith("3 messages on 2 alternative branches (edits/regenerations)")


def test_without_current_node_the_last_child_is_followed_and_said():
    (s,) = _parse([{"id": "c", "mapping": _tree()}])
    assert [t.content for t in s.turns] == ["edited q", "edited answer"]
    assert any("current_node" in a for a in s.assumptions)


def test_a_linear_conversation_is_complete_and_needs_no_assumption_about_branches():
    mapping = {"r": _node("r", None, ["u"]), "u": _node("u", "r", ["a"], "user", "hi"),
               "a": _node("a", "u", [], "assistant", "hello")}
    (s,) = _parse([{"id": "c", "mapping": mapping}])
    assert s.coverage_reason is None and "offBranchNodes" not in s.meta
    assert G.count_turns(s.raw) == len(s.turns) == 2
    assert not any("current_node" in a for a in s.assumptions)


def test_a_parent_cycle_does_not_hang():
    mapping = {"x": _node("x", "y", ["y"], "user", "1"), "y": _node("y", "x", ["x"], "assistant", "2")}
    assert current_branch(mapping, "y") == ["x", "y"]
    assert current_branch(mapping, None) == []  # no root at all: nothing to follow


def test_models_explicit_slug_session_default_and_provider_only():
    mapping = {
        "u": _node("u", None, ["a"], "user", "q"),
        "a": _node("a", "u", ["b"], "assistant", "1", metadata={"model_slug": "gpt-4o"}),
        "b": _node("b", "a", [], "assistant", "2"),
    }
    (s,) = _parse([{"id": "c", "default_model_slug": "gpt-4", "mapping": mapping}])
    user, a, b = s.turns
    assert user.model is None
    assert (a.model, a.model_explicit) == (ModelRef("openai", "gpt-4o", None), True)
    assert (b.model, b.model_explicit) == (ModelRef("openai", "gpt-4", None), False)
    (s,) = _parse([{"id": "c", "mapping": {"a": _node("a", None, [], "assistant", "x")}}])
    assert s.turns[0].model == ModelRef("openai", None, None)
    assert any("openai" in a for a in s.assumptions)


def test_hidden_system_and_tool_messages_are_turns():
    mapping = {
        "s": _node("s", None, ["u"], "system", "", metadata={"is_visually_hidden_from_conversation": True}),
        "u": _node("u", "s", ["c"], "user", "run it"),
        "c": _node("c", "u", ["t"], "assistant", "print(1)", recipient="python"),
        "t": {"id": "t", "parent": "c", "children": [], "message": {
            "id": "t", "author": {"role": "tool", "name": "python"}, "create_time": None,
            "content": {"content_type": "execution_output", "text": "1"}}},
    }
    (s,) = _parse([{"id": "c", "mapping": mapping}])
    assert [(t.speaker, t.role, t.kind) for t in s.turns] == [
        ("system", "system", "system"), ("user", "user", "message"),
        ("assistant", "assistant", "tool_call"), ("python", "tool", "tool_result")]
    assert s.turns[0].extra["hidden"] is True and s.turns[0].content == ""
    assert s.turns[2].extra["recipient"] == "python"
    assert s.turns[3].time is None and s.turns[3].time_raw is None and not s.warnings


def test_unreadable_times_are_kept_raw_with_one_warning():
    mapping = {"u": _node("u", None, ["v"], "user", "a", create_time=1e20),
               "v": _node("v", "u", [], "user", "b", create_time=-1e20)}
    (s,) = _parse([{"id": "c", "mapping": mapping}])
    assert [t.time for t in s.turns] == [None, None]
    assert [t.time_raw for t in s.turns] == ["1e+20", "-1e+20"]
    assert len(s.warnings) == 1 and s.warnings[0].startswith("2 times could not be read")


@pytest.mark.parametrize(("content", "text"), [
    ({"content_type": "text", "parts": ["a", "b"]}, "a\nb"),
    ({"content_type": "multimodal_text", "parts": [{"content_type": "image_asset_pointer",
                                                    "asset_pointer": "file-service://f1"}, "look"]},
     "[image: file-service://f1]\nlook"),
    ({"content_type": "code", "language": "python", "text": "x = 1"}, "[code: python]\nx = 1"),
    ({"content_type": "execution_output", "text": "1"}, "[execution output]\n1"),
    ({"content_type": "system_error", "name": "E", "text": "boom"}, "[error: E]\nboom"),
    ({"content_type": "user_editable_context", "user_profile": "P", "user_instructions": "I"},
     "[user profile]\nP\n[user instructions]\nI"),
    ({"content_type": "something_new", "b": 1, "a": "x"}, '[something_new]\n{"a":"x","b":1}'),
    (None, ""),
])
def test_content_types_render_as_readable_text_with_markers(content, text):
    assert render_content(content) == text


def test_streaming_gives_the_same_sessions_as_parse():
    path = GOLDEN / "chatgpt" / "conversations-000.json"
    source = load_source(path, "export.zip/conversations.json")
    whole = list(G.parse(source, Settings()))
    data = path.read_bytes()
    for blob in (data, b"\xef\xbb\xbf" + data):
        streamed = list(G.parse_stream(io.BytesIO(blob), source, Settings()))
        assert [(s.session_id, s.turns, s.warnings, s.coverage_reason) for s in streamed] == \
               [(s.session_id, s.turns, s.warnings, s.coverage_reason) for s in whole]


def test_a_single_conversation_object_streams_too():
    doc = {"id": "solo", "mapping": {"u": _node("u", None, [], "user", "hi")}}
    (s,) = G.parse_stream(io.BytesIO(orjson.dumps(doc)), _source(doc), Settings())
    assert s.session_id == "solo" and s.turns[0].content == "hi"


def test_broken_json_and_conversations_without_mapping_are_parse_errors():
    with pytest.raises(ParseError):
        _parse('[{"id": "c", "mapping": {')
    with pytest.raises(ParseError):
        _parse([{"id": "c", "title": "no mapping"}])
    with pytest.raises(ParseError):
        list(G.parse_stream(io.BytesIO(b'[{"id": "c", "mapping": {'), _source("[]"), Settings()))


@pytest.mark.parametrize("name", ["conversations.json", "conversations-000.json", "export.zip/conversations.json"])
def test_detection_wins_on_export_names(name):
    text = (GOLDEN / "chatgpt" / "conversations.json").read_text()
    assert registry.detect(text, name, threshold=0.5).grammar == "chatgpt"
    assert registry.detect(text[:300], name, threshold=0.5).grammar == "chatgpt"  # truncated sample


def test_does_not_claim_a_claude_export():
    text = (GOLDEN / "claude" / "conversations.json").read_text()
    assert G.detect(text, "conversations.json") == 0.0


@pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="../shared/conformance is absent")
def test_conformance_fixture():
    source = load_source(CONFORMANCE / "fixtures" / "chatgpt_tomaasz_conversations_pl.json")
    sessions = list(G.parse(source, Settings()))
    assert [s.session_id for s in sessions] == ["conv-test-001", "conv-test-002"]
    assert [[t.speaker for t in s.turns] for s in sessions] == [["user", "assistant"]] * 2
    assert sessions[0].turns[0].time.isoformat() == "2023-11-14T22:15:00+00:00"
    assert sessions[0].turns[0].time_raw == "1700000100.0"
    assert all(s.coverage_reason is None for s in sessions)
