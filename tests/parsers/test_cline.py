"""Cline / Roo Code task histories: the task id from the folder, injected context, results matched
to their calls, the older XML tool protocol, and file changes with patches that apply."""

from __future__ import annotations

import orjson

from models.settings import Settings
from parsers import registry
from parsers.text import decode
from tests.helpers import GOLDEN
from tests.parsers.test_claude_code import documents, replay_patches
from validators.accounting import account

GRAMMAR = registry.get("cline")
TASK = GOLDEN / "cline" / "tasks" / "1759241528190" / "api_conversation_history.json"
NAME = "tasks/1759241528190/api_conversation_history.json"


def test_blocks_injected_context_and_results_matched_to_calls():
    [session] = GRAMMAR.parse(decode(TASK.read_bytes(), NAME), Settings())
    assert session.session_id == "1759241528190"
    assert [(t.role, t.kind, t.pointer) for t in session.turns[:2]] == [("user", "message", "/0"),
                                                                       ("assistant", "thinking", "/1/content/0")]
    assert "<environment_details>" in session.turns[0].content  # appended to the task as it was sent
    results = [t for t in session.turns if t.kind == "tool_result"]
    assert [(t.speaker, t.extra["callId"]) for t in results][:2] == [("read_file", "toolu_01ClRead"),
                                                                    ("write_to_file", "toolu_01ClWrite")]
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean


def test_older_xml_tool_calls_are_tool_calls():
    messages = [{"role": "user", "content": [{"type": "text", "text": "<task>\nlist the files\n</task>"}]},
                {"role": "assistant", "content": [{"type": "text",
                                                   "text": "<list_files>\n<path>.</path>\n</list_files>"}]},
                {"role": "user", "content": [{"type": "text", "text": "[list_files for '.'] Result:\nREADME.md"}]}]
    [session] = GRAMMAR.parse(decode(orjson.dumps(messages), "api_conversation_history.json"), Settings())
    assert [(t.kind, (t.extra or {}).get("tool")) for t in session.turns] == [
        ("message", None), ("tool_call", "list_files"), ("tool_result", "list_files")]
    env = {"role": "user", "content": [{"type": "text", "text": "[list_files for '.'] Result:\nREADME.md"},
                                       {"type": "text", "text": "<environment_details>\n# Current Mode\nACT MODE"}]}
    [session] = GRAMMAR.parse(decode(orjson.dumps([*messages[:2], env]), "x.json"), Settings())
    assert [(t.role, (t.extra or {}).get("injected")) for t in session.turns[2:]] == [("tool", None),
                                                                                     ("system", True)]
    assert session.session_id is None and session.turns[1].model is None


def test_file_changes_chain_from_a_whole_file_write():
    [doc] = documents("cline", decode(TASK.read_bytes(), NAME))
    record = doc["artifacts"]["ByggLogg"]["sessionRecord"]
    assert [(c["operation"], "patch" in c) for c in record["fileChanges"]] == [("write", False), ("edit", True)]
    replay_patches(doc)
    assert record["commands"] == [{"turn": 11, "command": "npx vitest run src/utils", "callId": "toolu_01ClExec"}]
