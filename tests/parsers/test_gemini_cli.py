"""Gemini CLI session files: thoughts, calls and results as interactions, notices, tokens, and the
build log's commands (exit code) and file changes (patches apply)."""

from __future__ import annotations

import orjson

from models.settings import Settings
from parsers import registry
from parsers.text import decode
from tests.helpers import GOLDEN
from tests.parsers.test_claude_code import documents, replay_patches
from validators.accounting import account

GRAMMAR = registry.get("gemini-cli")
SESSION = GOLDEN / "gemini-cli" / "session-2025-11-03T10-15-c7e2a9b1.json"


def test_messages_thoughts_calls_and_results():
    [session] = GRAMMAR.parse(decode(SESSION.read_bytes(), SESSION.name), Settings())
    assert session.session_id == "c7e2a9b1-4d3f-4a6e-9b8c-1f2e3d4c5b6a"
    kinds = [t.kind for t in session.turns[:4]]
    assert kinds == ["message", "thinking", "tool_call", "tool_result"]
    assert session.turns[2].model.provider == "google" and session.turns[2].model.name == "gemini-2.5-pro"
    assert session.turns[7].role == "system" and session.meta["tokenUsage"]["total"] == 44326
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean


def test_an_empty_reply_is_declared_and_unknown_types_are_drift():
    doc = {"sessionId": "s1", "projectHash": "x", "messages": [
        {"type": "user", "content": "hi", "timestamp": "2025-11-03T10:00:00Z"},
        {"type": "gemini", "content": "", "timestamp": "2025-11-03T10:00:01Z"},
        {"type": "compression", "content": "History compressed", "timestamp": "2025-11-03T10:00:02Z"}]}
    [session] = GRAMMAR.parse(decode(orjson.dumps(doc), "session.json"), Settings())
    assert [r.pointer for r in session.regions] == ["/messages/1"]
    assert session.turns[-1].role == "other" and "messageType:compression" in session.meta["formatDrift"]
    assert GRAMMAR.count_turns(session.raw) == 2 and account(session, None).clean


def test_commands_and_file_changes_with_patches_that_apply():
    [doc] = documents("gemini-cli", decode(SESSION.read_bytes(), SESSION.name))
    record = doc["artifacts"]["ByggLogg"]["sessionRecord"]
    assert [(c["command"], c["exitCode"]) for c in record["commands"]] == [("go test ./...", 1)]
    assert [(c["operation"], "patch" in c) for c in record["fileChanges"]] == [("create", True), ("edit", True)]
    assert "got := client.Timeout" in replay_patches(doc)["/home/sara/go/linkcheck/checker_test.go"]
