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


LOG = GOLDEN / "gemini-cli" / "session-2026-05-22T09-14-4f2a9c1e.jsonl"


def test_the_append_only_layout_is_replayed_rewrites_rewinds_and_batches():
    [session] = GRAMMAR.parse(decode(LOG.read_bytes(), LOG.name), Settings())
    assert session.session_id == "4f2a9c1e-8b3d-4e5f-a6b7-c8d9e0f1a2b3" and session.meta["layout"] == "jsonl"
    assert session.title == "Add a --format option to report"  # from a later $set
    kinds = {r.pointer: r.kind.value for r in session.regions}
    assert kinds["/3"] == "duplicate"  # the streamed first write of a reply, rewritten at /4
    assert kinds["/6"] == kinds["/7"] == "off_branch"  # the rewind takes the message it names and what follows
    assert next(r for r in session.regions if r.pointer == "/7").content == "Sure, I'll add a --format option."
    assert session.turns[0].role == "system" and session.turns[0].extra["injected"] == "session_context"
    assert [t.content for t in session.turns if t.role == "user"] == [
        "Add a --json flag to the report command", "Use --format with text and json, default text"]
    assert session.turns[-1].kind == "message" and session.turns[-1].pointer == "/11/$set/messages/1"
    assert session.meta["tokenUsage"]["total"] == 8199 + 8860  # rewritten and rewound replies count once or not
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean


def test_the_append_only_layout_gives_patches_that_apply():
    [doc] = documents("gemini-cli", decode(LOG.read_bytes(), LOG.name))
    [change] = doc["artifacts"]["ByggLogg"]["sessionRecord"]["fileChanges"]
    assert change["operation"] == "write" and "patch" in change
    assert '"--format", "fmt"' in replay_patches(doc)["/home/noor/src/report-cli/cli.py"]


def test_a_metadata_line_alone_is_an_empty_session_and_a_bad_line_is_kept():
    text = ('{"sessionId":"s5","projectHash":"h5","kind":"main"}\n'
            '{"id":"u1","timestamp":"2026-06-01T00:00:01Z","type":"user","content":[{"text":"hi"}]}\n'
            'not json\n{"$rewindTo":"nope"}\n')
    [session] = GRAMMAR.parse(decode(text.encode(), "session-x.jsonl"), Settings())
    assert [t.kind for t in session.turns] == ["message", "notice"]
    assert GRAMMAR.count_turns(session.raw) == 2 and account(session, None).clean
    [empty] = GRAMMAR.parse(decode(b'{"sessionId":"s6","projectHash":"h6","kind":"main"}\n', "s.jsonl"), Settings())
    assert empty.turns == [] and GRAMMAR.count_turns(empty.raw) == 0
