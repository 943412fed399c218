"""The Open WebUI grammar: which branch is the session, and what is declared rather than read."""

import orjson

from models.records import RegionKind
from models.settings import Settings
from parsers.grammars.open_webui import OpenWebUI
from parsers.text import decode

GRAMMAR = OpenWebUI()


def _node(i, parent, children, role, content, ts, **more):
    return {"id": i, "parentId": parent, "childrenIds": children, "role": role, "content": content,
            "timestamp": ts, **more}


def _parse(value):
    return list(GRAMMAR.parse(decode(orjson.dumps(value), "chat.json"), Settings()))


def _tree(current):
    nodes = {"q": _node("q", None, ["a", "b"], "user", "question", 100),
             "a": _node("a", "q", [], "assistant", "first answer", 110, model="openai/gpt-4o"),
             "b": _node("b", "q", [], "assistant", "regenerated", 120, model="llama3:8b")}
    return {"title": "t", "history": {"messages": nodes, "currentId": current}, "messages": [], "timestamp": 1}


def test_the_current_branch_is_the_session_and_the_other_answer_is_declared():
    (s,) = _parse(_tree("a"))
    assert [t.content for t in s.turns] == ["question", "first answer"]
    assert (s.turns[1].model.provider, s.turns[1].model.name) == ("openai", "gpt-4o")
    assert [(r.kind, r.pointer, r.content) for r in s.regions] == [
        (RegionKind.OFF_BRANCH, "/history/messages/b", "regenerated")]
    assert GRAMMAR.count_turns(s.raw) == 2


def test_without_a_current_leaf_the_latest_leaf_is_taken_and_said():
    (s,) = _parse(_tree(None))
    assert [t.content for t in s.turns] == ["question", "regenerated"]
    assert s.turns[1].model.provider is None and s.turns[1].model.name == "llama3:8b"
    assert any("latest of 2 leaves" in a for a in s.assumptions)


def test_a_row_list_and_a_chat_without_a_tree():
    chat = {"title": "flat", "messages": [{"role": "user", "content": "hi", "timestamp": 5}, "odd"]}
    rows = [{"id": "r1", "user_id": "u", "title": "flat", "chat": chat, "created_at": 5}]
    (s,) = _parse(rows)
    assert (s.session_id, s.pointer) == ("r1", "/0/chat/messages")
    assert [t.role for t in s.turns] == ["user", "system"]  # a non-object entry is still a turn (B1)
    assert GRAMMAR.count_turns(s.raw) == 2
