"""OpenHands trajectories: one interaction per event, observations answering their actions, the
runtime's bookkeeping declared, and the build log's commands and file changes."""

from __future__ import annotations

import orjson

from models.settings import Settings
from parsers import registry
from parsers.text import decode
from tests.helpers import GOLDEN
from tests.parsers.test_claude_code import documents, replay_patches
from validators.accounting import account

GRAMMAR = registry.get("openhands")
TRAJ = GOLDEN / "openhands" / "conversation-5b1e9a2c.json"


def test_events_observations_and_bookkeeping():
    [session] = GRAMMAR.parse(decode(TRAJ.read_bytes(), TRAJ.name), Settings())
    assert session.session_id == "5b1e9a2c" and len(session.regions) == 2
    call, result = session.turns[2], session.turns[3]
    assert (call.kind, call.extra["tool"], result.extra["callId"]) == ("tool_call", "execute_bash", "event-3")
    assert (call.model.provider, call.model.name, call.model.version) == ("anthropic", "claude-sonnet-4", "20250514")
    assert session.turns[4].kind == "thinking"
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean


def test_commands_with_exit_codes_and_a_created_file():
    [doc] = documents("openhands", decode(TRAJ.read_bytes(), TRAJ.name))
    record = doc["artifacts"]["ByggLogg"]["sessionRecord"]
    assert [(c["command"], c["exitCode"]) for c in record["commands"]] == [
        ("cat /workspace/slugs.py", 0), ("cd /workspace && python -m pytest -q", 1)]
    assert [(c["operation"], "patch" in c) for c in record["fileChanges"]] == [("edit", False), ("create", True)]
    assert "unicode-test" in replay_patches(doc)["/workspace/test_slugs.py"]


def test_an_edit_action_is_the_call_the_model_sent_and_its_patches_apply():
    path = GOLDEN / "openhands" / "edit-actions.json"
    [session] = GRAMMAR.parse(decode(path.read_bytes(), path.name), Settings())
    call = orjson.loads(session.turns[1].content)
    assert call["command"] == "create" and call["file_text"].startswith("def median")
    assert call["thought"] == "I'll add the helper in stats.py first."  # the action's thought stays said
    [doc] = documents("openhands", decode(path.read_bytes(), path.name))
    changes = doc["artifacts"]["ByggLogg"]["sessionRecord"]["fileChanges"]
    assert [c["operation"] for c in changes] == ["create", "edit"]
    assert "(xs[mid - 1] + xs[mid]) / 2" in replay_patches(doc)["/workspace/stats.py"]
