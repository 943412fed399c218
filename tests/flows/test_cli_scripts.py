"""Read commands a script can use: --json, ids never cut, one exit-code table, shell paths, readable diffs."""

from __future__ import annotations

import dataclasses
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
import typer
from typer.testing import CliRunner

from audit import convdiff
from audit.ledger import Ledger
from flows.cli import views as cli_views
from flows.cli.app import app
from flows.exits import MEANING, ExitCode
from flows.pipeline import reconstruct
from models.errors import Reason, ReconstructError
from models.settings import PIPELINE_VERSION, Settings
from tests.helpers import ROOT

runner = CliRunner()
UUID = "3f1c6f0e-5c1b-4e39-9a43-2d5b8f0c0999"  # a global id: the edited transcript stays one session (v0, v1)
TWO = f"Session: {UUID}\nUser: hi\nAssistant: hello\n"
OTHER_999 = "Session: 999\nUser: a question\nAssistant: an answer\n"
FOUR = TWO + "User: how are you\nAssistant: fine thanks\n"
JSONL = '{"id": "999", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n'
DOC = f"sessions/transcript/{UUID}/{UUID}.json"  # the edited transcript's document
# c.txt and the jsonl chat both have session id 999: `history 999` names two documents
ANSI = re.compile(r"\x1b\[[0-9;]*m")
RUN_ID = re.compile(r"\b\d{8}T\d{6}Z-[0-9a-f]{6}\b")


@dataclass(frozen=True)
class World:
    root: Path
    out: Path

    def fill(self, args: list[str]) -> list[str]:
        return [a.format(out=self.out, root=self.root, doc=DOC) for a in args]


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    """Two runs into one output: a transcript written twice (v0, v1), a jsonl chat whose session id is
    the transcript's too, and an input that is quarantined."""
    root = tmp_path_factory.mktemp("world")
    src = root / "in"
    src.mkdir()
    (src / "a.txt").write_text(TWO)
    (src / "b.jsonl").write_text(JSONL)
    (src / "c.txt").write_text(OTHER_999)
    (src / "bad.txt").write_text("just prose, no speakers\n")
    reconstruct([src], root / "out", Settings())
    (src / "a.txt").write_text(FOUR)
    reconstruct([src], root / "out", Settings())
    (root / "empty").mkdir()
    (root / "loop").symlink_to(root / "loop")
    (root / "misspelled.toml").write_text("sourc_tz = 'UTC'\n")
    (root / "malformed.toml").write_text("source_tz = = 'x'\n")
    return World(root, root / "out")


def cli(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env=env)


# -- one exit-code table ------------------------------------------------------------------------------
OUT = ["--out", "{out}"]
EMPTY = ["--out", "{root}/empty"]
CASES: list[tuple[ExitCode, list[str], dict[str, str] | None]] = [
    (ExitCode.OK, ["status", *OUT], None),
    (ExitCode.OK, ["quarantine", *OUT], None),
    (ExitCode.OK, ["sessions", *OUT], None),
    (ExitCode.OK, ["history", "{doc}", *OUT], None),
    (ExitCode.OK, ["verify", *OUT], None),
    (ExitCode.OK, ["formats"], None),
    (ExitCode.OK, ["diff", "{doc}", "v0", "v1", *OUT], None),
    (ExitCode.OK, ["status", *OUT], {"RECONSTRUCT_HOME": "/x", "RECONSTRUCT_OUT": "/y"}),
    (ExitCode.PROBLEM, ["revert", "{doc}", "--to", "v0", "--confirm", "not it", *OUT], None),
    (ExitCode.USAGE, ["status", "--limit", "many", *OUT], None),
    (ExitCode.USAGE, ["no-such-command"], None),
    (ExitCode.USAGE, ["run", "{root}/in", "--format", "nope", "--out", "{root}/o"], None),
    (ExitCode.USAGE, ["run", "{root}/in", "--source-tz", "Mars/Olympus", "--out", "{root}/o"], None),
    (ExitCode.USAGE, ["status", "--config", "{root}/misspelled.toml", *OUT], None),
    (ExitCode.USAGE, ["status", "--config", "{root}/malformed.toml", *OUT], None),
    (ExitCode.USAGE, ["status", "--config", "{root}/none.toml", *OUT], None),
    (ExitCode.USAGE, ["status", *OUT], {"RECONSTRUCT_SOURCETZ": "UTC"}),
    (ExitCode.USAGE, ["diff", "{doc}", "first", "v1", *OUT], None),
    (ExitCode.USAGE, ["diff", "{doc}", "v0", "v1", "--format", "patch", *OUT], None),
    (ExitCode.USAGE, ["export", "--format", "xls", *OUT], None),
    (ExitCode.QUARANTINED, ["run", "{root}/in", "--out", "{root}/fresh", "--workers", "1"], None),
    (ExitCode.CANNOT_START, ["run", "{root}/no-such-input", "--out", "{root}/o"], None),
    (ExitCode.CANNOT_START, ["run", "{root}/in", "--out", "{root}/loop"], None),  # a symbolic-link loop
    (ExitCode.CANNOT_START, ["run", "{root}/in", "--out", "{root}/loop/out"], None),  # under one
    *[(ExitCode.CANNOT_START, [*command, *EMPTY], None) for command in (
        ["status"], ["quarantine"], ["sessions"], ["history", "999"], ["verify"], ["diff", "999", "v0", "v1"],
        ["report"], ["export"], ["rerun", "--failed"])],
    (ExitCode.NOT_FOUND, ["quarantine", "--run", "nope", *OUT], None),
    (ExitCode.NOT_FOUND, ["report", "--run", "nope", *OUT], None),
    (ExitCode.NOT_FOUND, ["rerun", "--failed", "--run", "nope", *OUT], None),
    (ExitCode.NOT_FOUND, ["sessions", "--key", "transcript:nope", *OUT], None),
    (ExitCode.NOT_FOUND, ["history", "nope", *OUT], None),
    (ExitCode.NOT_FOUND, ["diff", "{doc}", "v0", "v9", *OUT], None),
    (ExitCode.NOT_FOUND, ["revert", "{doc}", "--to", "v9", "--confirm", "x", *OUT], None),
    (ExitCode.AMBIGUOUS, ["history", "999", *OUT], None),
    (ExitCode.AMBIGUOUS, ["diff", "999", "v0", "v1", *OUT], None),
]
# Codes whose case needs a real signal: tests/hardening/test_interrupts.py sends SIGINT and SIGTERM.
COVERED_ELSEWHERE = {ExitCode.INTERRUPTED: ROOT / "tests" / "hardening" / "test_interrupts.py"}


@pytest.mark.parametrize(("code", "args", "env"), CASES,
                         ids=[f"{c.name}-{' '.join(a[:2])}-{i}" for i, (c, a, _) in enumerate(CASES)])
def test_every_case_of_the_exit_code_table(code, args, env, world, request):
    if code is ExitCode.QUARANTINED:
        request.getfixturevalue("prefect_harness")
    result = cli(*world.fill(args), env=env)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    if code not in (ExitCode.OK, ExitCode.QUARANTINED, ExitCode.USAGE):  # click's usage errors say more
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_every_exit_code_has_a_case_and_a_row_in_the_docs():
    tested = {code for code, _, _ in CASES} | set(COVERED_ELSEWHERE)
    assert tested == set(ExitCode)
    assert all(path.is_file() for path in COVERED_ELSEWHERE.values())
    rows = re.findall(r"^\| \*\*(\d+)\*\* \| `(\w+)` \| (.+) \|$", (ROOT / "docs" / "cli.md").read_text(), re.M)
    assert [(int(n), name, text) for n, name, text in rows] == [(c.value, c.name, MEANING[c]) for c in ExitCode]


@pytest.mark.parametrize(("block", "code"), [("run", ExitCode.CANNOT_START), ("read", ExitCode.PROBLEM)])
def test_a_pipeline_error_the_table_does_not_name(block, code):
    from flows.cli.app import clear_failures
    from flows.exits import one_line

    guard = clear_failures("run failed") if block == "run" else one_line()
    with pytest.raises(typer.Exit) as ended, guard:
        raise ReconstructError(Reason.WRITE_ERROR, "no space left")
    assert ended.value.exit_code == code


# -- --json ---------------------------------------------------------------------------------------------
READS = [(["status", *OUT], "runs", "run_id"), (["quarantine", *OUT], "quarantined", "source_key"),
         (["sessions", *OUT], "sessions", "path"), (["history", "{doc}", *OUT], "revisions", "sha256"),
         (["formats"], "grammars", "name")]


@pytest.mark.parametrize(("args", "rows", "field"), READS, ids=[a[0] for a, _, _ in READS])
def test_json_is_one_sorted_document_with_the_rows_of_the_table(args, rows, field, world):
    as_json, table = cli(*world.fill([*args, "--json"])), cli(*world.fill(args))
    assert as_json.exit_code == 0 and table.exit_code == 0, as_json.output
    doc = orjson.loads(as_json.stdout)
    assert as_json.stdout == orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"
    lines = table.stdout.splitlines()  # not a terminal: a header line and a tab-separated line per row
    values = [row[field] for row in doc[rows]]
    assert values and all(any(v in line.split("\t") for line in lines) for v in values), (values, lines)


def test_every_json_field_is_documented():
    table_lines = (cli_views.SnapshotLine, cli_views.LinkLine)  # table-only rows, not in any JSON
    kinds = [k for k in vars(cli_views).values() if dataclasses.is_dataclass(k) and k not in table_lines]
    kinds += [convdiff.ConversationDiff, convdiff.Hunk, convdiff.Line, convdiff.Turn]
    text = (ROOT / "docs" / "cli.md").read_text()
    named = set(re.findall(r"`(\w+)`", text)) | set(re.findall(r'"(\w+)":', text))
    missing = {f"{k.__name__}.{f.name}" for k in kinds for f in dataclasses.fields(k) if f.name not in named}
    assert missing == set()


def test_verify_json_lists_every_mismatch_and_exits_1(world, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(world.out, out)
    (out / DOC).chmod(0o644)
    (out / DOC).write_bytes(b"{}")
    result = cli("verify", "--out", str(out), "--json")
    assert result.exit_code == ExitCode.PROBLEM
    doc = orjson.loads(result.stdout)
    assert doc["checked"] >= 2 and len(doc["problems"]) == 1 and doc["problems"][0].startswith(DOC)
    ok = orjson.loads(cli("verify", "--out", str(world.out), "--json").stdout)
    assert ok["problems"] == [] and ok["checked"] == doc["checked"]


# -- ids never cut ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("columns", ["80", "120"])
def test_a_run_id_printed_by_status_on_a_terminal_works_with_run(columns, world):
    shown = cli("status", "--out", str(world.out), env={"TTY_COMPATIBLE": "1", "COLUMNS": columns})
    assert shown.exit_code == 0
    text = ANSI.sub("", shown.stdout)
    assert max(len(line) for line in text.splitlines()) <= int(columns), text
    ledger = Ledger(world.out / "ledger.sqlite", read_only=True)
    try:
        runs = [r.run_id for r in ledger.runs.recent()]
    finally:
        ledger.close()
    printed = RUN_ID.findall(text)
    assert sorted(printed) == sorted(runs), text
    for run_id in printed:
        assert cli("quarantine", "--run", run_id, "--out", str(world.out)).exit_code == 0


@pytest.mark.parametrize("columns", ["80", "120"])
def test_paths_in_a_terminal_table_are_whole(columns, world):
    shown = cli("sessions", "--out", str(world.out), env={"TTY_COMPATIBLE": "1", "COLUMNS": columns})
    assert shown.exit_code == 0 and DOC in ANSI.sub("", shown.stdout), shown.stdout


# -- --version -------------------------------------------------------------------------------------------
def test_version_names_the_package_and_the_pipeline():
    from importlib.metadata import version

    result = cli("--version")
    assert result.exit_code == 0
    assert result.stdout == f"reconstruct {version('reconstruct')} (pipeline {PIPELINE_VERSION})\n"


# -- history ---------------------------------------------------------------------------------------------
def test_history_takes_the_path_a_shell_completes(world, monkeypatch):
    monkeypatch.chdir(world.root)
    for given in (f"out/{DOC}", f"./out/{DOC}", str(world.out / DOC)):
        result = cli("history", given, "--out", "out", "--json")
        assert result.exit_code == 0, result.output
        assert orjson.loads(result.stdout)["document"] == DOC


def test_history_of_an_id_naming_several_documents_lists_them(world):
    listed = cli("history", "999", "--out", str(world.out), "--json")
    assert listed.exit_code == ExitCode.AMBIGUOUS
    matches = orjson.loads(listed.stdout)["matches"]
    assert [m["path"] for m in matches] == sorted(m["path"] for m in matches) and len(matches) == 2
    assert {m["key"].split(":")[0] for m in matches} == {"transcript", "jsonl"}
    table = cli("history", "999", "--out", str(world.out))
    assert all(m["path"] in table.stdout and m["key"] in table.stdout for m in matches)
    picked = cli("history", matches[0]["path"], "--out", str(world.out))
    assert picked.exit_code == 0


# -- diff -------------------------------------------------------------------------------------------------
def test_diff_shows_the_interactions_as_a_unified_diff(world):
    result = cli("diff", DOC, "v0", "v1", "--out", str(world.out))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[:3] == [f"--- {DOC} v0", f"+++ {DOC} v1", "@@ -1,2 +1,4 @@"]
    assert [ln[:2] for ln in lines[3:]] == [" #", "  ", " #", "  ", "+#", "+ ", "+#", "+ "]
    assert lines[-2].startswith("+#4 ") and lines[-2].endswith("Assistant (unknown:unknown@unknown)")
    assert lines[-1] == "+    fine thanks"
    same = cli("diff", DOC, "v1", "v1", "--out", str(world.out))
    assert same.exit_code == 0 and same.stdout == ""


def test_diff_json_has_the_hunks_and_the_patch_format_stays(world):
    hunks = orjson.loads(cli("diff", DOC, "v0", "v1", "--out", str(world.out), "--json").stdout)
    assert (hunks["document"], hunks["rev_a"], hunks["rev_b"]) == (DOC, "v0", "v1")
    (hunk,) = hunks["hunks"]
    assert [(ln["op"], ln["turn"]["content"]) for ln in hunk["lines"]] == [
        (" ", "hi"), (" ", "hello"), ("+", "how are you"), ("+", "fine thanks")]
    patch = cli("diff", DOC, "v0", "v1", "--out", str(world.out), "--format", "diff_json_v1")
    assert patch.exit_code == 0 and orjson.loads(patch.stdout)["protocol_id"] == "diff_json_v1"


def test_a_changed_turn_is_a_removal_and_an_addition_with_context():
    a = [convdiff.Turn(i, "U (x:y@z)", None, f"t{i}") for i in range(1, 10)]
    b = [*a[:4], convdiff.Turn(5, "U (x:y@z)", None, "changed"), *a[5:]]
    (hunk,) = convdiff.compare("d", "v0", a, "v1", b).hunks
    assert (hunk.a_start, hunk.a_count, hunk.b_start, hunk.b_count) == (2, 7, 2, 7)
    assert [ln.op for ln in hunk.lines] == [" ", " ", " ", "-", "+", " ", " ", " "]


# -- settings --------------------------------------------------------------------------------------------
def test_a_misspelled_setting_in_the_config_file_names_the_closest(world):
    result = cli("status", "--out", str(world.out), "--config", str(world.root / "misspelled.toml"))
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.count("\n") == 1 and "'sourc_tz'" in result.stderr and "'source_tz'" in result.stderr


def test_a_retired_setting_says_why_it_went(world):
    """A config or environment still naming a setting that earlier versions had is told it went, and why."""
    config = world.root / "retired.toml"
    config.write_text("columnar_min_bytes = 16384\nstream_bytes = 1\n")
    for result in (cli("status", "--out", str(world.out), "--config", str(config)),
                   cli("status", "--out", str(world.out), env={"RECONSTRUCT_COLUMNAR_MIN_BYTES": "0"})):
        assert result.exit_code == ExitCode.USAGE
        assert result.stderr.count("\n") == 1 and "no longer exists" in result.stderr, result.stderr
        assert "table of lines" in result.stderr


@pytest.mark.parametrize(("variable", "closest"), [("RECONSTRUCT_WORKRES", "RECONSTRUCT_WORKERS"),
                                                    ("reconstruct_source_tzz", "RECONSTRUCT_SOURCE_TZ")])
def test_a_misspelled_environment_variable_names_the_closest(variable, closest, world):
    result = cli("status", "--out", str(world.out), env={variable: "2"})
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.count("\n") == 1 and variable in result.stderr and closest in result.stderr
