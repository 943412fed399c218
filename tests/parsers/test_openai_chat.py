"""OpenAI chat messages: a bare list, the list under "messages" with metadata, and one per JSON line."""

from __future__ import annotations

import orjson
import pytest

from models.records import SourceText
from models.settings import Settings
from parsers import registry
from validators.accounting import account

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "-3 C"},
    {"role": "assistant", "name": "helper", "content": "It is -3 C."},
]
WANT = [("system", "system"), ("user", "message"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "message")]


def _source(data: bytes, name: str) -> SourceText:
    text = data.decode()
    return SourceText(text, name, "0" * 64, len(data), "utf-8")


@pytest.mark.parametrize("document", [MESSAGES, {"model": "gpt-4o", "id": "x", "messages": MESSAGES}],
                         ids=["bare-list", "messages-with-metadata"])
def test_a_json_document_of_role_messages_is_read_turn_by_turn(document):
    source = _source(orjson.dumps(document, option=orjson.OPT_INDENT_2), "chat.json")
    found = registry.detect(source.text, source.name, threshold=0.5)
    assert found.grammar == "openai-chat"
    g = registry.get("openai-chat")
    (session,) = g.parse(source, Settings())
    assert [(t.role, t.kind) for t in session.turns] == WANT
    assert session.turns[1].content == "Weather in Oslo?"
    assert session.turns[3].extra["toolCallId"] == "c1" and session.turns[4].speaker == "helper"
    assert g.count_turns(session.raw) == 5 and account(session, None).clean


def test_one_conversation_per_json_line_bare_lists_included():
    data = b"\n".join([orjson.dumps({"messages": MESSAGES}), orjson.dumps(MESSAGES[:2]), orjson.dumps(MESSAGES)])
    source = _source(data + b"\n", "sets.jsonl")
    assert registry.detect(source.text, source.name, threshold=0.5).grammar == "jsonl"
    g = registry.get("jsonl")
    sessions = list(g.parse(source, Settings()))
    assert [len(s.turns) for s in sessions] == [5, 2, 5]
    assert [(t.role, t.kind) for t in sessions[2].turns] == WANT
    assert sessions[1].turns[0].pointer == "/1/0"
    assert all(g.count_turns(s.raw) == len(s.turns) and account(s, None).clean for s in sessions)


def test_a_document_of_other_records_is_not_claimed():
    source = _source(orjson.dumps({"messages": [{"sender": "ann", "text": "hi", "ts": 1}]}), "other.json")
    assert registry.get("openai-chat").detect(source.text, source.name) == 0.0
