"""GitHub Copilot Chat sessions from VS Code: requests and response parts as interactions, tool
invocations with their arguments and outcomes, edit groups, models, and the build log's commands and
file changes (patches apply)."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.records import RegionKind
from models.settings import Settings
from normalizers.facts import _apply_ranges
from parsers import registry
from parsers.grammars.copilot_chat import copilot_model
from parsers.text import decode
from tests.helpers import GOLDEN
from tests.parsers.test_claude_code import documents, replay_patches
from validators.accounting import account

GRAMMAR = registry.get("copilot-chat")
EXPORT = GOLDEN / "copilot-chat" / "chat.json"
STORED = GOLDEN / "copilot-chat" / "5b1e7c3d-9a2f-4e6b-8d0c-1f2a3b4c5d6e.json"
SUBAGENT = GOLDEN / "copilot-chat" / "agent-subagent.json"


def _parse(doc: dict, name: str = "chat.json"):
    return list(GRAMMAR.parse(decode(orjson.dumps(doc), name), Settings()))


@pytest.mark.parametrize(("model_id", "want"), [
    ("copilot/gpt-4.1", ("github-copilot", "gpt-4.1", None)),
    ("github.copilot-chat/claude-sonnet-4", ("github-copilot", "claude-sonnet-4", None)),
    ("copilot/gpt-4o-2024-11-20", ("github-copilot", "gpt-4o", "2024-11-20")),
    ("azure/my-gpt4o-deployment", ("azure", "my-gpt4o-deployment", None)),
    ("claude-3.5-sonnet", ("github-copilot", "claude-3.5-sonnet", None)),
])
def test_model_ids_split_into_vendor_name_and_version(model_id, want):
    ref = copilot_model(model_id)
    assert (ref.provider, ref.name, ref.version) == want


def test_auto_names_the_model_that_served_it():
    assert copilot_model("copilot/auto", "gpt-5-mini").name == "gpt-5-mini"
    assert copilot_model("copilot/auto").name == "auto" and copilot_model("") is None


def test_an_agent_request_becomes_message_thinking_calls_results_and_edits():
    [session] = GRAMMAR.parse(decode(EXPORT.read_bytes(), EXPORT.name), Settings())
    kinds = [t.kind for t in session.turns]
    assert kinds[:4] == ["message", "thinking", "tool_call", "tool_result"]
    assert kinds.count("tool_call") == 4 and kinds.count("file_edit") == 1
    reply = session.turns[4]
    assert reply.content.startswith("The function only lowercases. I'll rewrite `slug.ts` to strip")
    continued = [r for r in session.regions if r.kind is RegionKind.CONTINUATION]
    assert [r.pointer for r in continued] == ["/requests/0/response/5", "/requests/0/response/6"]
    run = next(t for t in session.turns if t.extra and t.extra.get("tool") == "run_in_terminal")
    assert orjson.loads(run.content)["command"] == "npx jest test/slug.test.ts"
    edit = next(t for t in session.turns if t.kind == "file_edit")
    assert edit.extra["byTool"] == "toolu_vrtx_02IjKlMnOp"  # the replace call made it: counted once
    assert session.session_id == "d3e4f5a6-0000-4000-8000-00000000000c"  # an export keeps it only in results
    assert session.id_source == "source:result.metadata.sessionId" and session.turns[0].speaker == "lena-k"
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean


def test_commands_and_file_changes_with_patches_that_apply():
    [doc] = documents("copilot-chat", decode(EXPORT.read_bytes(), EXPORT.name))
    record = doc["artifacts"]["ByggLogg"]["sessionRecord"]
    assert [(c["command"], c["exitCode"]) for c in record["commands"]] == [("npx jest test/slug.test.ts", 0)]
    changes = [(c["path"].rsplit("/", 1)[-1], c["operation"], "patch" in c) for c in record["fileChanges"]]
    assert changes == [("slug.ts", "edit", True), ("slug.test.ts", "create", True)]
    texts = replay_patches(doc)
    assert '.normalize("NFKD")' in texts["/home/lena/src/invoice-api/src/slug.ts"]


def test_stored_session_title_id_drift_warning_confirmation_and_error():
    [session] = GRAMMAR.parse(decode(STORED.read_bytes(), STORED.name), Settings())
    assert session.session_id == "5b1e7c3d-9a2f-4e6b-8d0c-1f2a3b4c5d6e" and session.title == "Retry on HTTP 429"
    assert session.created is not None and "contentType:usedModelQuota" in session.meta["formatDrift"]
    assert {"warning", "confirmation", "error"} <= {t.kind for t in session.turns}
    assert session.turns[0].extra["slashCommand"] == "fix"
    assert any(r.kind is RegionKind.EMPTY_RECORD and r.pointer == "/requests/3/message" for r in session.regions)
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean


def test_an_editor_edit_applies_to_the_file_text_it_was_made_on():
    created = {"kind": "toolInvocationSerialized", "toolId": "copilot_createFile", "toolCallId": "c1",
               "isComplete": True, "pastTenseMessage": {"value": "Created a.py"}}
    edit = {"kind": "textEditGroup", "uri": {"path": "/w/a.py", "scheme": "file"}, "done": True,
            "edits": [[{"text": "y = 2\n", "range": {"startLineNumber": 2, "startColumn": 1, "endLineNumber": 3,
                                                      "endColumn": 1}}]]}
    args = orjson.dumps({"filePath": "/w/a.py", "content": "x = 1\ny = 1\n"}).decode()
    rounds = [{"toolCalls": [{"id": "c1", "name": "create_file", "arguments": args}]}]
    doc = {"requests": [{"requestId": "r0", "message": {"text": "make a.py"}, "timestamp": 1752575400000,
                         "response": [created], "result": {"metadata": {"toolCallRounds": rounds}}},
                        {"requestId": "r1", "message": {"text": "set y to 2"}, "timestamp": 1752575460000,
                         "response": [edit]}]}
    [built] = documents("copilot-chat", decode(orjson.dumps(doc), "chat.json"))
    changes = built["artifacts"]["ByggLogg"]["sessionRecord"]["fileChanges"]
    assert [(c["operation"], c["via"]) for c in changes] == [("create", "tool:create_file"),
                                                             ("edit", "edit:textEditGroup")]
    assert replay_patches(built)["/w/a.py"] == "x = 1\ny = 2\n"


@given(st.lists(st.text(alphabet="ab\n", max_size=12), min_size=1, max_size=6), st.data())
def test_range_edits_match_the_text_they_replace(lines, data):
    base = "\n".join(lines)
    starts = [0]
    for line in base.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    a = data.draw(st.integers(0, len(base)))
    b = data.draw(st.integers(a, len(base)))

    def position(offset):
        line = max(i for i, s in enumerate(starts[:-1]) if s <= offset)
        return line + 1, offset - starts[line] + 1

    (sl, sc), (el, ec) = position(a), position(b)
    assert _apply_ranges(base, [{"range": [sl, sc, el, ec], "text": "X"}]) == base[:a] + "X" + base[b:]


def test_unknown_parts_are_drift_and_text_parts_with_nothing_are_declared():
    doc = {"requests": [{"message": {"text": "hi"}, "timestamp": 1752575400000,
                         "response": [{"value": "  "}, {"kind": "newThing", "content": {"value": "shown"}},
                                      {"kind": "otherThing"}, 7]}]}
    [session] = _parse(doc)
    assert [t.kind for t in session.turns] == ["message", "newThing", "?"]
    assert "contentType:newThing" in session.meta["formatDrift"]
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean


@pytest.mark.parametrize("rival", ["chatgpt", "claude", "jsonl"])
def test_detected_with_a_clear_margin_over_other_json_chat_formats(rival):
    for path in sorted((GOLDEN / "copilot-chat").glob("*.json")):
        if path.name.endswith(".expected.json"):
            continue
        sample = decode(path.read_bytes(), path.name).text[:65536]
        scores = registry.detect(sample, path.name, threshold=0.5).scores
        assert scores["copilot-chat"] - scores.get(rival, 0.0) >= 0.3, (path.name, scores)


def test_markdown_content_parts_read_from_content_or_value():
    doc = {"requests": [{"message": "hi", "timestamp": 1752575400000, "response": [
        {"kind": "markdownContent", "content": {"value": "one, "}},
        {"kind": "markdownContent", "value": "two", "supportHtml": False},
        {"kind": "toolInvocationSerialized", "toolId": "run_in_terminal", "isConfirmed": True,
         "invocationMessage": "Using \"Run In Terminal\"", "isComplete": True}]}]}
    [session] = _parse(doc)
    assert [(t.kind, t.content) for t in session.turns] == [
        ("message", "hi"), ("message", "one, two"), ("tool_call", 'Using "Run In Terminal"')]
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean


def test_a_subagent_its_calls_and_the_model_auto_mode_chose():
    [session] = GRAMMAR.parse(decode(SUBAGENT.read_bytes(), SUBAGENT.name), Settings())
    calls = [t for t in session.turns if t.kind == "tool_call"]
    sub = calls[0]
    assert sub.extra["tool"] == "runSubagent" and orjson.loads(sub.content)["agentName"] == "reviewer"
    assert all(c.extra.get("startedBy") == sub.extra["callId"] for c in calls[1:3])
    assert "startedBy" not in calls[3].extra  # the main agent's own call
    assert {t.model.name for t in session.turns if t.model} == {"claude-sonnet-4.6"}  # copilot/auto, resolved
    search = next(t for t in session.turns if t.kind == "tool_result" and t.speaker == "copilot_findTextInFiles")
    assert search.content.startswith("2 matches\n")  # the text of a stored prompt element tree
    run = next(t for t in calls if t.extra["tool"] == "run_in_terminal")
    assert orjson.loads(run.content) == {"command": "npx vitest run src/ledger.test.ts"}  # as the user edited it
    fences = [r.pointer for r in session.regions if r.kind is RegionKind.BOILERPLATE]
    assert fences == ["/requests/0/response/10", "/requests/0/response/14"]
    assert session.turns[-1].content.startswith("Next I would call `round2` from `monthlyTotal`")
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean


def test_round_ids_with_the_vscode_suffix_pair_with_their_parts():
    [doc] = documents("copilot-chat", decode(SUBAGENT.read_bytes(), SUBAGENT.name))
    record = doc["artifacts"]["ByggLogg"]["sessionRecord"]
    assert [c["via"] for c in record["fileChanges"]] == ["tool:create_file"]  # the edit group is that call's
    assert [c["command"] for c in record["commands"]] == ["npx vitest run src/ledger.test.ts"]
    assert record["commands"][0]["exitCode"] == 1


JOURNAL = GOLDEN / "copilot-chat" / "0d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d.jsonl"


def test_a_journal_is_replayed_each_value_at_the_line_that_wrote_it():
    source = decode(JOURNAL.read_bytes(), JOURNAL.name)
    [session] = GRAMMAR.parse(source, Settings())
    assert session.meta["layout"] == "journal" and session.title == "Build fails on foo.h"
    assert [t.pointer for t in session.turns] == [
        "/2/v/0/message", "/5/v/0", "/6/v/0", "/7/v/metadata/toolCallResults/call_X1__vscode-1790000000001", "/6/v/1"]
    stale = [r.pointer for r in session.regions if r.kind is RegionKind.DUPLICATE]
    assert stale == ["/4/v/1", "/5/v/1"]  # a streamed part and a running tool call, both rewritten later
    assert session.turns[2].extra["callId"] == "call_X1" and '"make"' in session.turns[2].content
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean
    [again] = GRAMMAR.parse(source, Settings())  # the replay never changes the lines it read
    assert [t.content for t in again.turns] == [t.content for t in session.turns]


def test_a_journal_line_that_is_not_json_is_kept_and_an_unknown_kind_declared():
    text = JOURNAL.read_text() + "{broken\n" + '{"kind":7,"k":["x"],"v":1}\n'
    [session] = GRAMMAR.parse(decode(text.encode(), JOURNAL.name), Settings())
    assert session.turns[-1].kind == "notice" and any(r.pointer == "/10" for r in session.regions)
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean
