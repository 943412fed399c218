"""ChatGPT exports: the current-branch decision, models, content types, times, streaming, detection."""

from __future__ import annotations

import orjson
import pytest

from models.errors import NotStreamable, ParseError
from models.records import ModelRef, RegionKind, SourceText
from models.settings import Settings
from parsers import registry
from parsers.grammars.chatgpt import current_branch, render_content
from tests.helpers import CONFORMANCE, GOLDEN, load_source, streamed_sessions
from validators.accounting import account

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


def test_current_branch_is_the_path_from_current_node_and_the_rest_are_declared_alternatives():
    (s,) = _parse([{"id": "c", "current_node": "a3", "mapping": _tree()}])
    assert [t.content for t in s.turns] == ["q", "second answer", "follow-up", "done"]
    assert [t.pointer for t in s.turns] == ["/0/mapping/u1", "/0/mapping/a2", "/0/mapping/u2", "/0/mapping/a3"]
    # the independent count follows the current branch too: the session is complete
    assert G.count_turns(s.raw) == 4 and s.coverage_reason is None
    assert [(r.kind, r.pointer, r.content, r.reason) for r in s.regions] == [
        (RegionKind.OFF_BRANCH, "/0/mapping/a1", "first answer",
         "not on the current branch: a regenerated answer branching at node 'u1'"),
        (RegionKind.OFF_BRANCH, "/0/mapping/u1b", "edited q",
         "not on the current branch: an edited message branching at node 'root'"),
        (RegionKind.OFF_BRANCH, "/0/mapping/a4", "edited answer",
         "not on the current branch: an edited message branching at node 'root'"),
    ]
    assert account(s, None).clean


def test_without_current_node_the_latest_leaf_is_followed_and_said():
    mapping = _tree()
    mapping["a4"]["message"]["create_time"] = 1700000900  # the edit was written last
    (s,) = _parse([{"id": "c", "mapping": mapping}])
    assert [t.content for t in s.turns] == ["edited q", "edited answer"]
    assert G.count_turns(s.raw) == 2
    assert any("no current_node" in a and "'a4'" in a and "latest of 3 leaves" in a for a in s.assumptions)
    assert account(s, None).clean


def test_equal_times_go_to_the_deeper_leaf_then_the_later_one():
    (s,) = _parse([{"id": "c", "current_node": "gone", "mapping": _tree()}])
    assert [t.content for t in s.turns] == ["q", "second answer", "follow-up", "done"]
    assert "current_node 'gone' is not in the mapping" in s.assumptions[0]
    mapping = {"r": _node("r", None, ["x", "y"]), "x": _node("x", "r", [], "assistant", "x"),
               "y": _node("y", "r", [], "assistant", "y")}
    (s,) = _parse([{"id": "c", "mapping": mapping}])
    assert [t.content for t in s.turns] == ["y"] and G.count_turns(s.raw) == 1


def test_a_current_node_that_is_not_a_leaf_goes_on_to_the_latest_leaf_below_it():
    for current, want in (("root", ["q", "second answer", "follow-up", "done"]), ("u1", ["q", "second answer",
                                                                                       "follow-up", "done"])):
        (s,) = _parse([{"id": "c", "current_node": current, "mapping": _tree()}])
        assert [t.content for t in s.turns] == want and G.count_turns(s.raw) == 4
        assert s.assumptions[0].startswith(f"current_node {current!r} is not a leaf")
        assert account(s, None).clean


def test_fifteen_messages_without_tree_links_are_fifteen_turns():
    mapping = {f"m{i}": {"id": f"m{i}", "message": {"id": f"m{i}", "author": {"role": ("user", "assistant")[i % 2]},
                                                     "create_time": 1700000000 + i,
                                                     "content": {"content_type": "text", "parts": [f"turn {i}"]}}}
               for i in range(15)}
    (s,) = _parse([{"id": "flat", "title": "no links", "mapping": mapping}])
    assert [t.content for t in s.turns] == [f"turn {i}" for i in range(15)]
    assert G.count_turns(s.raw) == 15 and not s.regions
    assert "no parent/children links" in s.assumptions[0]


def test_children_lists_stand_in_for_missing_parent_fields():
    mapping = {"r": {"id": "r", "children": ["u"], "message": None},
               "u": {"id": "u", "children": ["a"], "message": _node("u", None, [], "user", "hi")["message"]},
               "a": {"id": "a", "children": [], "message": _node("a", None, [], "assistant", "yo")["message"]}}
    (s,) = _parse([{"id": "c", "mapping": mapping}])
    assert [t.content for t in s.turns] == ["hi", "yo"] and not s.assumptions[:-1]


def test_nodes_with_their_own_times_and_no_message_are_declared_empty_on_and_off_the_branch():
    mapping = _tree()
    mapping["root"]["create_time"] = 1700000000
    mapping["x"] = {"id": "x", "parent": "u1", "children": [], "create_time": 1700000000, "message": None}
    mapping["u1"]["children"].append("x")
    (s,) = _parse([{"id": "c", "current_node": "a3", "mapping": mapping}])
    assert [r.pointer for r in s.regions if r.kind is RegionKind.EMPTY_RECORD] == ["/0/mapping/root", "/0/mapping/x"]
    assert account(s, None).clean and G.count_turns(s.raw) == 4


def test_a_linear_conversation_is_complete_and_needs_no_assumption_about_branches():
    mapping = {"r": _node("r", None, ["u"]), "u": _node("u", "r", ["a"], "user", "hi"),
               "a": _node("a", "u", [], "assistant", "hello")}
    (s,) = _parse([{"id": "c", "mapping": mapping}])
    assert s.coverage_reason is None and not s.regions
    assert G.count_turns(s.raw) == len(s.turns) == 2
    assert not any("current_node" in a for a in s.assumptions)


def test_a_parent_cycle_does_not_hang():
    mapping = {"x": _node("x", "y", ["y"], "user", "1"), "y": _node("y", "x", ["x"], "assistant", "2")}
    branch, _ = current_branch(mapping, "y")
    assert branch == ["x", "y"]
    (s,) = _parse([{"id": "c", "mapping": mapping}])
    assert len(s.turns) + len(s.regions) == 2 and G.count_turns(s.raw) == len(s.turns)


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


def test_tool_messages_are_turns_and_hidden_or_empty_context_is_declared():
    mapping = {
        "s": _node("s", None, ["ctx"], "system", "", metadata={"is_visually_hidden_from_conversation": True}),
        "ctx": {"id": "ctx", "parent": "s", "children": ["u"], "message": {
            "id": "ctx", "author": {"role": "user"}, "create_time": None,
            "metadata": {"is_visually_hidden_from_conversation": True},
            "content": {"content_type": "user_editable_context", "user_profile": "I teach maths.",
                        "user_instructions": "Be brief."}}},
        "u": _node("u", "ctx", ["c"], "user", "run it"),
        "c": {"id": "c", "parent": "u", "children": ["t"], "message": {
            "id": "c", "author": {"role": "assistant"}, "recipient": "python", "create_time": 1700000001,
            "content": {"content_type": "code", "language": "python", "text": "print(1)"}}},
        "t": {"id": "t", "parent": "c", "children": ["e"], "message": {
            "id": "t", "author": {"role": "tool", "name": "python"}, "create_time": None,
            "content": {"content_type": "execution_output", "text": "1"}}},
        "e": _node("e", "t", ["v"], "assistant", ""),
        "v": _node("v", "e", [], "system", "Visible system note"),
    }
    (s,) = _parse([{"id": "c", "current_node": "v", "mapping": mapping}])
    assert [(t.speaker, t.role, t.kind) for t in s.turns] == [
        ("user", "user", "message"), ("assistant", "assistant", "tool_call"), ("python", "tool", "tool_result"),
        ("system", "system", "system")]
    assert s.turns[1].extra["recipient"] == "python" and s.turns[1].content == "[code: python]\nprint(1)"
    assert s.turns[2].time is None and s.turns[2].time_raw is None and not s.warnings
    assert [(r.kind, r.pointer) for r in s.regions] == [
        (RegionKind.EMPTY_RECORD, "/0/mapping/s"), (RegionKind.HIDDEN, "/0/mapping/ctx"),
        (RegionKind.EMPTY_RECORD, "/0/mapping/e")]
    assert s.regions[1].content == "[user profile]\nI teach maths.\n[user instructions]\nBe brief."
    assert G.count_turns(s.raw) == 4
    assert account(s, None).clean


def test_attachments_the_content_does_not_show_are_marked():
    mapping = {"u": _node("u", None, [], "user", "", metadata={"attachments": [
        {"id": "file-1", "name": "report.pdf", "mime_type": "application/pdf"}, {"id": "file-2", "name": "x.png"}]},
        content={"content_type": "multimodal_text", "parts": [
            {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-2"}, ""]})}
    (s,) = _parse([{"id": "c", "mapping": mapping}])
    assert s.turns[0].content == "[image: file-service://file-2]\n\n[attachment: report.pdf]"
    assert len(s.turns[0].extra["attachments"]) == 2


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
    ({"content_type": "tether_browsing_display", "result": "# Page\nbody", "summary": None},
     "[browsing]\n# Page\nbody"),
    ({"content_type": "tether_quote", "url": "https://e.org", "title": "E", "text": "q"},
     "[quote: E https://e.org]\nq"),
    ({"content_type": "thoughts", "thoughts": [{"summary": "Plan", "content": "Check the units."}]},
     "[thoughts]\nPlan\nCheck the units."),
    ({"content_type": "reasoning_recap", "content": "Thought for 12s"}, "[reasoning recap] Thought for 12s"),
    ({"content_type": "model_editable_context", "model_set_context": "Likes tea.", "repository": None},
     "[model memory]\nLikes tea."),
    ({"content_type": "sonic_webpage", "url": "https://e.org/a", "title": "A", "text": "Body", "snippet": "B"},
     "[webpage: A https://e.org/a]\nBody"),
    ({"content_type": "computer_output", "computer_id": "1", "screenshot": {
        "content_type": "image_asset_pointer", "asset_pointer": "sediment://f1"},
      "state": {"type": "browser_state", "url": "https://e.org", "title": "E"}},
     "[computer output: E https://e.org]\n[screenshot: sediment://f1]"),
    ({"content_type": "citable_code_output", "output_str": "{}"}, "[code output]\n{}"),
    ({"content_type": "app_pairing_content", "workspaces": [{"app_name": "Terminal", "title": "zsh"}],
      "context_parts": [{"text": "$ ls"}]}, "[app: Terminal zsh]\n$ ls"),
    ({"content_type": "multimodal_text", "parts": [
        {"content_type": "audio_transcription", "text": "hello there", "direction": "in"},
        {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://a1", "format": "wav"},
        {"content_type": "real_time_user_audio_video_asset_pointer",
         "audio_asset_pointer": {"asset_pointer": "sediment://a2"}},
        {"content_type": "image_asset_pointer", "asset_pointer": "sediment://i1",
         "metadata": {"dalle": {"prompt": "a red fox"}}}]},
     "hello there\n[audio: sediment://a1]\n[audio/video: sediment://a2]\n[image: sediment://i1]\na red fox"),
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
        streamed = streamed_sessions(G, blob, source)
        assert [(s.session_id, s.turns, s.warnings, s.coverage_reason) for s in streamed] == \
               [(s.session_id, s.turns, s.warnings, s.coverage_reason) for s in whole]


def test_a_single_conversation_object_is_not_streamed():
    doc = {"id": "solo", "mapping": {"u": _node("u", None, [], "user", "hi")}}
    with pytest.raises(NotStreamable, match="the key 'mapping': it is one conversation"):
        streamed_sessions(G, orjson.dumps(doc), _source(doc))


def test_broken_json_and_entries_that_are_not_conversations_are_parse_errors():
    with pytest.raises(ParseError):
        _parse('[{"id": "c", "mapping": {')
    with pytest.raises(ParseError):
        _parse([{"id": "c", "mapping": ["not", "a", "tree"]}])
    with pytest.raises(ParseError):
        _parse(["just text"])
    with pytest.raises(ParseError):
        streamed_sessions(G, b'[{"id": "c", "mapping": {', _source("[]"))


def test_a_conversation_without_messages_is_an_empty_session_with_a_warning():
    sessions = _parse([{"id": "e1", "title": "New chat", "mapping": None},
                       {"id": "e2", "mapping": {"r": _node("r", None, [])}}])
    assert [(s.session_id, s.turns, s.warnings) for s in sessions] == [
        ("e1", [], ["the conversation has no messages in the export"]),
        ("e2", [], ["the conversation has no messages in the export"])]
    assert [G.count_turns(s.raw) for s in sessions] == [0, 0]


def test_single_objects_and_wrappers_carry_absolute_pointers():
    conv = {"id": "solo", "mapping": {"u": _node("u", None, [], "user", "hi")}}
    (s,) = _parse(conv)
    assert (s.pointer, s.turns[0].pointer, s.raw is not None) == ("", "/mapping/u", True)
    wrapped = {"exported_at": "2024-01-01", "conversations": [conv, {**conv, "id": "two"}]}
    whole = _parse(wrapped)
    streamed = streamed_sessions(G, orjson.dumps(wrapped), _source(wrapped))
    for got in (whole, streamed):
        assert [(s.session_id, s.pointer, s.turns[0].pointer) for s in got] == [
            ("solo", "/conversations/0", "/conversations/0/mapping/u"),
            ("two", "/conversations/1", "/conversations/1/mapping/u")]
        assert all(account(s, None).clean for s in got)
    assert registry.detect(orjson.dumps(wrapped).decode(), "export.json", threshold=0.5).grammar == "chatgpt"


def test_unknown_content_part_role_and_keys_are_drift_and_keep_their_text():
    mapping = {
        "u": _node("u", None, ["a"], "user", "hi"),
        "a": {"id": "a", "parent": "u", "children": ["b"], "flag": 1, "message": {
            "id": "a", "author": {"role": "critic"}, "create_time": 1700000001, "sparkle": True,
            "content": {"content_type": "hologram", "text": "beam me up"}}},
        "b": _node("b", "a", [], "assistant", "", content={"content_type": "multimodal_text", "parts": [
            "see", {"content_type": "smell_pointer", "asset_pointer": "x://1"}]}),
    }
    (s,) = _parse([{"id": "c", "mapping": mapping, "brand_new_field": 1}])
    assert [(t.role, t.content) for t in s.turns[1:]] == [
        ("other", "[hologram]\nbeam me up"), ("assistant", 'see\n[smell_pointer]\n{"asset_pointer":"x://1"}')]
    assert s.meta["formatDrift"] == {
        "contentType:hologram": {"count": 1, "first": "/0/mapping/a/message/content"},
        "key:brand_new_field": {"count": 1, "first": "/0"},
        "key:flag": {"count": 1, "first": "/0/mapping/a"},
        "key:sparkle": {"count": 1, "first": "/0/mapping/a/message"},
        "partType:smell_pointer": {"count": 1, "first": "/0/mapping/b/message/content"},
        "role:critic": {"count": 1, "first": "/0/mapping/a/message/author"},
    }


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
