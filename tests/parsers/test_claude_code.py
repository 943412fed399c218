"""Claude Code session logs: blocks as interactions, shared message ids, duplicates, sidechains,
resumed sessions, models, and the build log's calls, commands and file changes (patches apply)."""

from __future__ import annotations

import orjson

from models.records import Detection, RegionKind, SourceText
from models.settings import Settings
from normalizers import facts
from normalizers.assemble import RunContext
from parsers import registry
from parsers.grammars._agentlog import split_model
from parsers.text import decode
from tests.helpers import GOLDEN
from tests.oracle.records import assemble
from validators import diffjson
from validators.accounting import account

GRAMMAR = registry.get("claude-code")
MAIN = GOLDEN / "claude-code" / "7f3c2a10-5d4e-4b8a-9c21-0e6f5a7b8c90.jsonl"
SID = "11111111-2222-4333-8444-555555555555"


def _source(records: list[dict], name: str = f"{SID}.jsonl") -> SourceText:
    return decode(b"\n".join(orjson.dumps(r) for r in records) + b"\n", name)


def documents(grammar: str, source: SourceText) -> list[dict]:
    """The assembled documents of one source, as the pipeline builds them."""
    g = registry.get(grammar)
    ctx = RunContext.from_settings(Settings())
    return [assemble(s, g.count_turns(s.raw), source=source, detection=Detection(grammar, 1.0, {grammar: 1.0}),
                     grammar_version=g.version, ctx=ctx) for s in g.parse(source, Settings())]


def _base_of(doc: dict, turn: int) -> str:
    """The text a patch's ``baseTurn`` holds: a whole-file read's result or a whole-file write's input."""
    item = doc["artifacts"]["Chatthistorik"]["interactions"][turn - 1]
    if item["kind"] == "tool_call":
        return orjson.loads(item["content"])["content"]
    name = item["speakerName"]
    return (facts._numbered_text if name == "Read" else facts._raw_text)(item["content"])


def replay_patches(doc: dict) -> dict[str, str]:
    """Apply every patch of the session record in order: each must validate (clean JSON, schema,
    base checksum) against the text the changes before it left (a create starts from the empty
    text), or, where the base came from a tool's read or write, against the text of its
    ``baseTurn``; a base written whole inside a reply is checked by its checksum (the previous
    change's ``resultSha256``). Returns the texts the patches produced, by path."""
    texts: dict[str, str] = {}
    written: dict[str, str] = {}
    interactions = doc["artifacts"]["Chatthistorik"]["interactions"]
    for change in doc["artifacts"]["ByggLogg"]["sessionRecord"]["fileChanges"]:
        path = change["path"]
        previous, written[path] = written.get(path), change.get("resultSha256", "")
        if "patch" not in change:
            assert change["summary"].startswith("--- ")
            texts.pop(path, None)
            continue
        source = interactions[change["baseTurn"] - 1]["kind"] if "baseTurn" in change else None
        if change["operation"] == "create":
            base = ""
        elif path in texts and source != "tool_result":
            base = texts[path]
        elif source in ("tool_result", "tool_call"):
            base = _base_of(doc, change["baseTurn"])
        else:
            assert change["patch"]["target"]["base_checksum_sha256"] == previous
            texts.pop(path, None)
            continue
        texts[path] = diffjson.apply(diffjson.validate(orjson.dumps(change["patch"]), base), base)
        assert change["resultSha256"] == diffjson.sha256_text(texts[path])
    return texts


def _user(uid, text, **kw):
    return {"type": "user", "uuid": uid, "parentUuid": None, "sessionId": SID, "timestamp": "2025-10-02T09:00:00Z",
            "message": {"role": "user", "content": text}, **kw}


def _assistant(uid, mid, block, usage=None, **kw):
    return {"type": "assistant", "uuid": uid, "parentUuid": None, "sessionId": SID,
            "timestamp": "2025-10-02T09:00:01Z", "message": {"id": mid, "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [block], "usage": usage or {"output_tokens": 1}}, **kw}


def _parts(provider, model):
    ref = split_model(provider, model)
    return None if ref is None else (ref.provider, ref.name, ref.version)


def test_model_strings_split_into_name_and_version():
    assert _parts("anthropic", "claude-sonnet-4-5-20250929") == ("anthropic", "claude-sonnet-4-5", "20250929")
    assert _parts("openai", "gpt-4o-2024-08-06") == ("openai", "gpt-4o", "2024-08-06")
    assert _parts("openai", "gpt-5-codex") == ("openai", "gpt-5-codex", None)
    assert _parts(None, "gemini/gemini-2.5-pro-exp-03-25") == ("gemini", "gemini-2.5-pro-exp-03-25", None)
    assert _parts("anthropic", "claude-3-5-sonnet@20240620") == ("anthropic", "claude-3-5-sonnet", "20240620")
    assert _parts("anthropic", "") is None


def test_records_sharing_a_message_id_stay_one_interaction_per_block_with_usage_counted_once():
    records = [
        _user("u1", "rename foo to bar"),
        _assistant("a1", "msg_1", {"type": "thinking", "thinking": "grep first"}, {"output_tokens": 5}),
        _assistant("a2", "msg_1", {"type": "text", "text": "Searching."}, {"output_tokens": 9}),
        _assistant("a3", "msg_1", {"type": "text", "text": "Searching."}, {"output_tokens": 9}),
    ]
    [session] = GRAMMAR.parse(_source(records), Settings())
    assert [(t.kind, t.extra["messageId"]) for t in session.turns[1:]] == [("thinking", "msg_1"), ("message", "msg_1")]
    assert session.meta["tokenUsage"] == {"messages": 1, "output_tokens": 9}
    assert [r.kind for r in session.regions] == [RegionKind.DUPLICATE]  # a3 repeats a2's block
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) == 3
    assert account(session, None).clean


def test_a_repeated_uuid_is_a_declared_duplicate_and_resumes_are_sessions_of_their_own():
    other = dict(_user("u9", "second session"), sessionId="99999999-2222-4333-8444-555555555555")
    records = [_user("u1", "hello"), _user("u1", "hello"), other]
    first, second = GRAMMAR.parse(_source(records), Settings())
    assert (first.session_id, second.session_id) == (SID, other["sessionId"])
    assert len(first.turns) == 1 and first.regions[0].kind == RegionKind.DUPLICATE
    assert account(first, None).clean and account(second, None).clean
    assert "0" not in second.raw and second.raw["2"] == other  # a view of its own lines, pointers of the whole file


def test_sidechain_turns_are_linked_to_the_task_call_that_started_them():
    [main, _] = GRAMMAR.parse(decode(MAIN.read_bytes(), MAIN.name), Settings())
    side = [t for t in main.turns if t.extra and t.extra.get("sidechain")]
    assert len(side) == 4 and {t.extra["startedBy"] for t in side} == {"toolu_01Task"}
    assert side[1].model.name == "claude-haiku-4-5" and side[1].model.version == "20251001"


def test_unknown_record_types_are_drift_and_still_interactions():
    records = [_user("u1", "hi"), {"type": "lint-notice", "uuid": "p1", "sessionId": SID, "content": "Linting"},
               {"type": "progress", "uuid": "p2", "sessionId": SID, "toolUseID": "t1",
                "data": {"type": "hook_progress", "hookName": "PostToolUse"}}]
    [session] = GRAMMAR.parse(_source(records), Settings())
    assert session.turns[-1].content == "Linting" and session.turns[-1].role == "other"
    assert session.meta["formatDrift"] == {"recordType:lint-notice": {"count": 1, "first": "/1"}}
    assert session.regions[-1].pointer == "/2" and len(session.turns) == 2  # progress is known metadata


def test_title_records_name_the_session_the_users_own_first():
    summary = {"type": "summary", "summary": "Leaf summary", "leafUuid": "u1"}
    generated = [{"type": "ai-title", "title": f"Generated {n}", "sessionId": SID} for n in (1, 2)]
    custom = [{"type": "custom-title", "customTitle": f"Mine {n}", "sessionId": SID} for n in (1, 2)]
    cases = [([*generated], "Generated 2"), ([*generated, summary], "Leaf summary"),
             ([custom[0], summary, *generated, custom[1]], "Mine 2")]
    for extra, title in cases:
        [session] = GRAMMAR.parse(_source([_user("u1", "hi"), *extra]), Settings())
        assert session.title == title
        assert len(session.turns) == 1 and "formatDrift" not in session.meta


def test_session_record_holds_calls_commands_and_file_changes_with_patches_that_apply():
    docs = documents("claude-code", decode(MAIN.read_bytes(), MAIN.name))
    record = docs[0]["artifacts"]["ByggLogg"]["sessionRecord"]
    calls = {c["callId"]: c for c in record["toolCalls"]}
    assert calls["toolu_01Bash"]["outcome"] == "error" and calls["toolu_01Write"]["outcome"] == "ok"
    assert record["commands"][0] == {"turn": 17, "command": "python -m pytest -q tests/test_totals.py",
                                     "callId": "toolu_01Bash", "exitCode": 1}
    changes = [(c["path"].rsplit("/", 1)[1], c["operation"], "patch" in c) for c in record["fileChanges"]]
    assert changes == [("test_totals.py", "create", True), ("totals.py", "edit", True),
                       ("test_totals.py", "edit", True)]  # totals.py's base is the Read before the Edit
    final = replay_patches(docs[0])
    assert "ROUND_HALF_UP" in final["/home/maja/src/invoice-cli/invoice/totals.py"]
    assert "def test_half_cent_rounds_up():" in final["/home/maja/src/invoice-cli/tests/test_totals.py"]
    assert docs[0]["artifacts"]["ByggLogg"]["sourceMeta"]["gitBranch"] == "fix/rounding"


def test_keys_in_tool_input_and_output_do_not_reach_the_document():
    openai_key = "sk-proj-" + "Q7w" * 12
    aws_key = "AKIA" + "Z3X9" * 4
    github = "ghp_" + "k2" * 20
    command = f"export OPENAI_API_KEY={openai_key} && env | grep -i key"
    records = [
        _user("u1", "why does the client not authenticate?"),
        _assistant("a1", "m1", {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}),
        {**_user("u2", None), "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1",
             "content": f"OPENAI_API_KEY={openai_key}\nAWS_ACCESS_KEY_ID={aws_key}\nGH_TOKEN={github}"}]}},
        _assistant("a2", "m2", {"type": "tool_use", "id": "t2", "name": "Write", "input": {
            "file_path": "/repo/.env", "content": f"OPENAI_API_KEY={openai_key}\n"}}),
    ]
    [doc] = documents("claude-code", _source(records))
    blob = orjson.dumps(doc).decode()
    for key in (openai_key, aws_key, github):
        assert key not in blob
    assert doc["artifacts"]["ai_protocol_performance"]["redactions"]["total"] >= 4
    assert doc["artifacts"]["ByggLogg"]["sessionRecord"]["commands"][0]["command"].startswith("export OPENAI_API_KEY=")


def test_a_shell_command_typed_with_a_bang_is_a_command():
    records = [_user("u1", "<bash-input>git status --short</bash-input>"),
               _user("u2", "<bash-stdout> M invoice/totals.py</bash-stdout><bash-stderr></bash-stderr>")]
    [doc] = documents("claude-code", _source(records))
    assert doc["artifacts"]["Chatthistorik"]["interactions"][0]["kind"] == "command"
    assert doc["artifacts"]["ByggLogg"]["sessionRecord"]["commands"] == [{"turn": 1, "command": "git status --short"}]


def test_a_first_record_longer_than_the_detection_sample_is_still_recognised():
    record = _user("u1", "here is the whole log:\n" + "x" * 70_000)
    sample = orjson.dumps(record).decode()[:65536]
    assert registry.detect(sample, f"{SID}.jsonl", threshold=0.5).grammar == "claude-code"


def test_a_compact_summary_is_the_cli_speaking():
    [session] = GRAMMAR.parse(_source([_user("u1", "This session is being continued from a previous conversation.",
                                             isCompactSummary=True)]), Settings())
    assert (session.turns[0].role, session.turns[0].extra["isCompactSummary"]) == ("system", True)


def _edit_log(calls: list[tuple[str, dict, dict]]) -> SourceText:
    """A session of tool calls (name, input, toolUseResult), each answered; the file is never read."""
    records = [{"type": "user", "uuid": "u0", "parentUuid": None, "sessionId": SID,
                "timestamp": "2025-10-01T09:00:00Z", "message": {"role": "user", "content": "tidy config.py"}}]
    for n, (name, args, result) in enumerate(calls):
        records.append({"type": "assistant", "uuid": f"a{n}", "parentUuid": f"u{n}", "sessionId": SID,
                        "timestamp": f"2025-10-01T09:00:{2 * n + 1:02d}Z",
                        "message": {"id": f"msg_{n}", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                                    "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": name,
                                                 "input": args}]}})
        records.append({"type": "user", "uuid": f"u{n + 1}", "parentUuid": f"a{n}", "sessionId": SID,
                        "timestamp": f"2025-10-01T09:00:{2 * n + 2:02d}Z", "toolUseResult": result,
                        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}",
                                                                 "content": "The file has been updated."}]}})
    return _source(records)


def test_an_edit_patch_applies_to_the_original_file_its_result_keeps():
    original = "\ufeffDEBUG = True\r\nPORT = 8000\r\nHOSTS = []\r\n"  # a Windows file the session never read
    path = "/srv/app/config.py"
    edit = {"file_path": path, "old_string": "DEBUG = True", "new_string": "DEBUG = False"}
    multi = {"file_path": path, "edits": [{"old_string": "PORT = 8000", "new_string": "PORT = 8080"},
                                         {"old_string": "HOSTS = []", "new_string": "HOSTS = ['*']"}]}
    after_edit = "DEBUG = False\nPORT = 8000\nHOSTS = []\n"
    [doc] = documents("claude-code", _edit_log([
        ("Edit", edit, {"filePath": path, "oldString": "DEBUG = True", "newString": "DEBUG = False",
                        "originalFile": original, "structuredPatch": [], "userModified": False}),
        ("MultiEdit", multi, {"filePath": path, "edits": multi["edits"], "originalFileContents": after_edit}),
        ("Write", {"file_path": path, "content": "DEBUG = False\n"},
         {"type": "update", "filePath": path, "content": "DEBUG = False\n", "originalFile": "stale copy\n"}),
    ]))
    changes = doc["artifacts"]["ByggLogg"]["sessionRecord"]["fileChanges"]
    bases = [diffjson.canonical(original).removeprefix("\ufeff"), after_edit, "stale copy\n"]
    results = [after_edit, "DEBUG = False\nPORT = 8080\nHOSTS = ['*']\n", "DEBUG = False\n"]
    assert [c["operation"] for c in changes] == ["edit", "edit", "write"]
    for change, base, result in zip(changes, bases, results, strict=True):
        assert change["baseFrom"] == "originalFile" and "baseTurn" not in change
        patch = diffjson.validate(diffjson.dumps(change["patch"]), base)
        assert patch["target"]["base_checksum_sha256"] == diffjson.sha256_text(base)
        assert diffjson.apply(patch, base) == result and change["resultSha256"] == diffjson.sha256_text(result)


def test_the_original_file_is_never_shown_in_the_document():
    source = _edit_log([("Edit", {"file_path": "/a.txt", "old_string": "x", "new_string": "y"},
                         {"filePath": "/a.txt", "originalFile": "x marks the spot ORIGINAL-ONLY\n"})])
    [session] = GRAMMAR.parse(source, Settings())
    assert session.turns[1].base_text == "x marks the spot ORIGINAL-ONLY\n"
    [doc] = documents("claude-code", source)
    assert b"ORIGINAL-ONLY" not in orjson.dumps(doc["artifacts"]["Chatthistorik"])
    [change] = doc["artifacts"]["ByggLogg"]["sessionRecord"]["fileChanges"]
    assert diffjson.apply(change["patch"], "x marks the spot ORIGINAL-ONLY\n") == "y marks the spot ORIGINAL-ONLY\n"


def test_attachments_and_newer_bookkeeping_records():
    path = GOLDEN / "claude-code" / "c41e7a2b-9d3f-4b6a-8e1c-5f2d7a9b3c60.jsonl"
    source = decode(path.read_bytes(), path.name)
    detection = registry.detect(source.text, path.name, threshold=0.5)
    assert detection.grammar == "claude-code" and detection.scores["claude-code"] == 1.0  # every record explained
    [session] = GRAMMAR.parse(source, Settings())
    hook = session.turns[0]
    assert (hook.kind, hook.role, hook.speaker) == ("attachment", "system", "Claude Code")
    assert hook.extra["attachmentType"] == "hook_additional_context" and "formatDrift" not in session.meta
    assert [r.pointer for r in session.regions] == ["/0", "/1", "/5", "/6"]
    assert GRAMMAR.count_turns(session.raw) == len(session.turns) and account(session, None).clean
