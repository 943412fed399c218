"""SWE-agent and mini-SWE-agent trajectories: history entries as interactions, the step-by-step
trajectory declared as a duplicate, observations answering their actions, commands."""

from __future__ import annotations

import orjson

from models.records import RegionKind
from models.settings import Settings
from parsers import registry
from parsers.text import decode
from tests.helpers import GOLDEN
from tests.parsers.test_claude_code import documents
from validators.accounting import account

GRAMMAR = registry.get("swe-agent")
TRAJ = GOLDEN / "swe-agent" / "sizefmt__sizefmt-17.traj"


def test_history_is_the_conversation_and_the_trajectory_a_declared_duplicate():
    [session] = GRAMMAR.parse(decode(TRAJ.read_bytes(), TRAJ.name), Settings())
    assert session.session_id == "sizefmt__sizefmt-17"
    assert [t.role for t in session.turns[:4]] == ["system", "user", "assistant", "tool"]
    assert session.turns[2].extra == {"tool": "bash", "callId": "step-1"} == {**session.turns[3].extra, "tool": "bash"}
    assert (session.turns[2].model.provider, session.turns[2].model.version) == ("anthropic", "20241022")
    assert RegionKind.DUPLICATE in {r.kind for r in session.regions}
    assert account(session, None).clean and GRAMMAR.count_turns(session.raw) == len(session.turns)


def test_mini_swe_agent_return_codes_and_fenced_commands():
    doc = {"info": {"exit_status": "Submitted", "config": {"model": {"model_name": "gpt-5-mini"}}},
           "trajectory_format": "mini-swe-agent-1.1", "instance_id": "acme__calc-3",
           "messages": [{"role": "system", "content": "You are a helpful assistant."},
                        {"role": "user", "content": "<pr_description>div by zero</pr_description>"},
                        {"role": "assistant", "content": "THOUGHT: run it\n\n```bash\npython -m calc 1/0\n```"},
                        {"role": "user",
                         "content": "<returncode>1</returncode>\n<output>\nZeroDivisionError\n</output>"}]}
    source = decode(orjson.dumps(doc), "acme__calc-3.traj.json")
    [session] = GRAMMAR.parse(source, Settings())
    assert session.session_id == "acme__calc-3" and session.turns[3].extra == {"callId": "step-1", "exitCode": 1}
    [built] = documents("swe-agent", source)
    assert built["artifacts"]["ByggLogg"]["sessionRecord"]["commands"] == [
        {"turn": 3, "command": "python -m calc 1/0", "callId": "step-1", "exitCode": 1}]


def test_commands_from_classic_actions():
    [doc] = documents("swe-agent", decode(TRAJ.read_bytes(), TRAJ.name))
    commands = doc["artifacts"]["ByggLogg"]["sessionRecord"]["commands"]
    assert [c["command"] for c in commands][-1] == "pip install -e . -q && pytest -q tests/test_sizefmt.py"


def test_the_tool_calling_format_gives_one_call_per_tool_call_answered_by_id():
    path = GOLDEN / "swe-agent" / "tinyurl__shortener-42.traj.json"
    [session] = registry.get("swe-agent").parse(decode(path.read_bytes(), path.name), Settings())
    calls = [t for t in session.turns if t.kind == "tool_call"]
    results = [t for t in session.turns if t.kind == "tool_result"]
    assert len(calls) == 5
    assert [t.pointer for t in calls[:2]] == ["/messages/2/tool_calls/0", "/messages/2/tool_calls/1"]
    assert [r.extra["callId"] for r in results] == [c.extra["callId"] for c in calls[:4]]
    assert results[2].extra["exitCode"] == 1 and session.turns[2].pointer == "/messages/2/content"
    assert session.turns[2].time is not None  # extra.timestamp
    [doc] = documents("swe-agent", decode(path.read_bytes(), path.name))
    commands = doc["artifacts"]["ByggLogg"]["sessionRecord"]["commands"]
    assert commands[0]["command"] == "grep -rn 'def slugify' /testbed/tinyurl" and commands[2]["exitCode"] == 1


def _call(i, args):
    return {"id": f"call_{i}", "type": "function",
            "function": {"name": "str_replace_editor", "arguments": orjson.dumps(args).decode()}}


def _function_calling_traj() -> bytes:
    """A SWE-agent 1.x trajectory in the function-calling layout, its long step list first (as SWE-agent
    writes it: the sample detection sees holds no history and no info)."""
    edits = [{"command": "create", "path": "/repo/test_calc.py", "file_text": "def test():\n    assert 1\n"},
             {"command": "str_replace", "path": "/repo/calc.py", "old_str": "a-b", "new_str": "a+b"},
             {"command": "insert", "path": "/repo/calc.py", "insert_line": 1, "new_str": "# ok"}]
    history = [{"role": "system", "content": "You are a helpful assistant.", "message_type": "system_prompt"}]
    for i, args in enumerate(edits, 1):
        history += [{"role": "assistant", "content": f"step {i}", "thought": f"step {i}",
                     "action": "str_replace_editor", "tool_calls": [_call(i, args)], "message_type": "action"},
                    {"role": "tool", "content": "done", "message_type": "observation", "tool_call_ids": [f"call_{i}"]}]
    steps = [{"thought": "t", "action": "a", "observation": "o" * 3000, "response": "r"} for _ in range(40)]
    config = orjson.dumps({"agent": {"model": {"name": "claude-3-5-sonnet-20241022"}}}).decode()
    return orjson.dumps({"trajectory": steps, "history": history, "info": {"exit_status": "submitted"},
                         "replay_config": config}, option=orjson.OPT_INDENT_2)


def test_a_function_calling_trajectory_is_read_with_its_file_changes_and_model():
    source = decode(_function_calling_traj(), "calc__calc-1.traj")
    assert registry.detect(source.text[:65536], source.name, threshold=0.5).grammar == "swe-agent"
    (doc,) = documents("swe-agent", source)
    record = doc["artifacts"]["ByggLogg"]["sessionRecord"]
    assert [(c["path"], c["operation"]) for c in record["fileChanges"]] == [
        ("/repo/test_calc.py", "create"), ("/repo/calc.py", "edit"), ("/repo/calc.py", "insert")]
    calls = [(c["callId"], c.get("resultTurn")) for c in record["toolCalls"] if c["kind"] == "tool_call"]
    assert calls == [("call_1", 4), ("call_2", 7), ("call_3", 10)]  # each answered by its tool_call_ids result
    items = doc["artifacts"]["Chatthistorik"]["interactions"]
    replies = [i for i in items if i["role"] == "assistant"]
    assert {(i["model"]["provider"], i["model"]["name"]) for i in replies} == {("anthropic", "claude-3-5-sonnet")}


def test_edit_commands_of_the_action_layout_are_file_changes():
    steps = ["open calc.py", "edit 3:3\n    return a + b\nend_of_edit", "str_replace_editor create /repo/new.py "
             "--file_text 'x = 1'", "pytest -q"]
    history = [{"role": "system", "content": "You are an agent."}]
    for i, command in enumerate(steps):
        history += [{"role": "assistant", "content": f"Step {i}.\n\n```\n{command}\n```\n", "action": command + "\n"},
                    {"role": "user", "content": "ok", "message_type": "observation"}]
    data = {"history": history, "info": {"exit_status": "submitted", "model_stats": {"api_calls": 4}}}
    (doc,) = documents("swe-agent", decode(orjson.dumps(data), "calc__calc-2.traj"))
    changes = doc["artifacts"]["ByggLogg"]["sessionRecord"]["fileChanges"]
    assert [(c["path"], c["operation"], c["via"]) for c in changes] == [
        ("calc.py", "edit", "command:edit"), ("/repo/new.py", "create", "command:str_replace_editor")]
