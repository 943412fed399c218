"""Codex CLI rollouts: echoes never counted twice, both layouts, models from turn_context, and the
build log's commands (exit code, duration) and apply_patch file changes (patches apply)."""

from __future__ import annotations

import orjson

from models.records import RegionKind
from models.settings import Settings
from parsers import registry
from parsers.text import decode
from tests.helpers import GOLDEN
from tests.parsers.test_claude_code import documents, replay_patches
from validators.accounting import account

GRAMMAR = registry.get("codex")
NEW = GOLDEN / "codex" / "rollout-2025-10-14T08-21-05-0199a4c2-7e1b-7d30-9f44-2b8e61c0d5a7.jsonl"
OLD = GOLDEN / "codex" / "rollout-2025-05-02-6f1d2c3b-8a9e-4f70-b1c2-d3e4f5a6b7c8.jsonl"


def _parse(records):
    source = decode(b"\n".join(orjson.dumps(r) for r in records) + b"\n", "rollout-x.jsonl")
    return list(GRAMMAR.parse(source, Settings()))


def _line(kind, **payload):
    return {"timestamp": "2025-10-14T08:00:00Z", "type": kind, "payload": payload}


def test_an_event_that_repeats_a_response_item_is_a_declared_duplicate_never_counted_twice():
    records = [
        _line("session_meta", id="s-1", cwd="/w"),
        _line("event_msg", type="user_message", message="add a test"),
        _line("response_item", type="message", role="user", content=[{"type": "input_text", "text": "add a test"}]),
        _line("event_msg", type="agent_message", message="only logged as an event"),
    ]
    [session] = _parse(records)
    assert [t.content for t in session.turns] == ["add a test", "only logged as an event"]
    assert [r.kind for r in session.regions] == [RegionKind.SESSION_HEADER, RegionKind.DUPLICATE]
    assert GRAMMAR.count_turns(session.raw) == 2
    assert account(session, None).clean


def test_model_comes_from_turn_context_and_injected_context_is_the_cli_speaking():
    [session] = GRAMMAR.parse(decode(NEW.read_bytes(), NEW.name), Settings())
    assert session.session_id == "0199a4c2-7e1b-7d30-9f44-2b8e61c0d5a7"
    assert (session.turns[0].speaker, session.turns[0].role) == ("Codex CLI", "system")
    models = {(t.model.provider, t.model.name, t.model.version) for t in session.turns if t.model}
    assert models == {("openai", "gpt-5-codex", None)}
    assert session.meta["tokenUsage"]["total_tokens"] == 19656
    assert session.meta["formatDrift"] == {"eventType:ghost_snapshot": {"count": 1, "first": "/26"}}


def test_old_layout_reads_the_bare_meta_and_items():
    [session] = GRAMMAR.parse(decode(OLD.read_bytes(), OLD.name), Settings())
    assert session.session_id == "6f1d2c3b-8a9e-4f70-b1c2-d3e4f5a6b7c8"
    assert session.regions[0].content.startswith("Prefer small, reviewed diffs")
    assert [t.kind for t in session.turns].count("tool_call") == 3


def test_commands_and_file_changes_with_patches_that_apply():
    [doc] = documents("codex", decode(NEW.read_bytes(), NEW.name))
    record = doc["artifacts"]["ByggLogg"]["sessionRecord"]
    assert [(c["command"], c["exitCode"], c["durationSeconds"]) for c in record["commands"]] == [
        ("sed -n '1,40p' bot/forecast.py", 0, 0.1), ("python -m pytest -q tests/test_forecast.py", 0, 1.2)]
    assert [(c["path"], c["operation"], "patch" in c) for c in record["fileChanges"]] == [
        ("tests/test_forecast.py", "create", True), ("tests/test_forecast.py", "edit", True),
        ("bot/forecast.py", "edit", False)]
    final = replay_patches(doc)
    assert "def test_plain_city_is_unchanged():" in final["tests/test_forecast.py"]
    [old] = documents("codex", decode(OLD.read_bytes(), OLD.name))
    failed = old["artifacts"]["ByggLogg"]["sessionRecord"]["commands"][-1]
    assert (failed["command"], failed["exitCode"]) == ("make check", 2)


def test_claude_code_and_plain_jsonl_files_are_not_taken_for_rollouts():
    for path in [*sorted((GOLDEN / "jsonl").glob("*.*l")), *sorted((GOLDEN / "claude-code").glob("*.jsonl"))]:
        assert GRAMMAR.detect(path.read_text(encoding="utf-8")[:65536], path.name) == 0.0, path


def test_newer_exec_command_output_gives_exit_code_and_duration():
    records = [_line("session_meta", id="s-2", cwd="/w"),
               _line("response_item", type="function_call", name="exec_command", call_id="c1",
                     arguments='{"cmd": "cargo test", "workdir": "/w"}'),
               _line("response_item", type="function_call_output", call_id="c1",
                     output="Chunk ID: 1f2e\nWall time: 3.2 seconds\nProcess exited with code 101\nOutput:\nerror")]
    [session] = _parse(records)
    assert session.turns[1].extra == {"callId": "c1", "exitCode": 101, "durationSeconds": 3.2}


def test_a_first_record_longer_than_the_detection_sample_is_still_recognised():
    record = _line("session_meta", id="s-3", instructions="y" * 70_000)
    sample = orjson.dumps(record).decode()[:65536]
    assert registry.detect(sample, "rollout-x.jsonl", threshold=0.5).grammar == "codex"


def test_one_reasoning_event_per_summary_part_is_each_a_duplicate():
    parts = [{"type": "summary_text", "text": "**Reading the parser**"},
             {"type": "summary_text", "text": "**Planning**"}]
    records = [_line("session_meta", id="s-4", cwd="/w"),
               _line("event_msg", type="agent_reasoning", text="**Reading the parser**"),
               _line("event_msg", type="agent_reasoning", text="**Planning**"),
               _line("response_item", type="reasoning", summary=parts, encrypted_content="gAAA")]
    [session] = _parse(records)
    assert [t.kind for t in session.turns] == ["thinking"]
    assert [r.kind for r in session.regions].count(RegionKind.DUPLICATE) == 2
    assert GRAMMAR.count_turns(session.raw) == 1


def test_keys_in_call_arguments_and_outputs_do_not_reach_the_document():
    anthropic_key = "sk-ant-api03-" + "Zq8" * 10
    slack_hook = "https://hooks.slack.com/services/T0" + "A1B2C3D4E/B0F5G6H7I/" + "x" * 24
    arguments = orjson.dumps({"command": ["bash", "-lc", f"ANTHROPIC_API_KEY={anthropic_key} ./deploy.sh"]}).decode()
    records = [_line("session_meta", id="s-5", cwd="/w"),
               _line("response_item", type="function_call", name="shell", call_id="c1", arguments=arguments),
               _line("response_item", type="function_call_output", call_id="c1", output=orjson.dumps(
                   {"output": f"env:\nANTHROPIC_API_KEY={anthropic_key}\nSLACK_WEBHOOK={slack_hook}\n",
                    "metadata": {"exit_code": 0, "duration_seconds": 0.4}}).decode())]
    source = decode(b"\n".join(orjson.dumps(r) for r in records) + b"\n", "rollout-secret.jsonl")
    [doc] = documents("codex", source)
    blob = orjson.dumps(doc).decode()
    assert anthropic_key not in blob and slack_hook not in blob
    assert doc["artifacts"]["ByggLogg"]["sessionRecord"]["commands"][0]["exitCode"] == 0
