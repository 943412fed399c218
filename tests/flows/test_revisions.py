"""Revision store (seed 001): v0 on first write, history, confirmed revert, verify, diff and apply-diff."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from audit import revisions
from audit.ledger import SCHEMA_VERSION, Ledger
from audit.ledger.schema import MIGRATIONS
from flows.cli.app import app
from flows.core.shard import run_shard
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import ROOT
from validators.diffjson import make_diff

SID = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"  # a global session id (a UUID): every rerun of the file is the same key
DOC = f"sessions/transcript/{SID}/{SID}.json"  # the document of the session key transcript:SID
TWO = f"Session: {SID}\nUser: hi\nAssistant: hello\n"
FOUR = TWO + "User: how are you\nAssistant: fine thanks\n"
MERGED = "merged 2 snapshots"  # the later export of the session is a snapshot merged with the first (#15)


def cli(*args: str, input: str | None = None):
    return CliRunner().invoke(app, list(args), input=input)


def _run(tmp_path: Path, text: str, **kw) -> dict:
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    (src / "chat.txt").write_text(text)
    return reconstruct([src], tmp_path / "out", Settings(), **kw)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _index(out: Path) -> dict:
    return orjson.loads((out / ".revisions" / "index.json").read_bytes())


@pytest.fixture
def two_revisions(tmp_path):
    """A document written twice: v0 (two turns), v1 (four turns)."""
    _run(tmp_path, TWO)
    _run(tmp_path, FOUR)
    return tmp_path / "out"


def test_first_write_is_v0_with_its_blob_and_index_follows_seed_schema(tmp_path):
    _run(tmp_path, TWO)
    out = tmp_path / "out"
    index = _index(out)
    assert index["version"] == "LKv2.1"
    [entry] = index["files"]
    assert entry["file"] == DOC
    [v0] = entry["history"]
    assert set(v0) == {"rev", "sha256", "note", "ts"}
    assert (v0["rev"], v0["note"], v0["sha256"]) == ("v0", "init", _sha(out / DOC))
    assert (out / ".revisions" / "blobs" / v0["sha256"]).read_bytes() == (out / DOC).read_bytes()
    # an unchanged rerun adds nothing
    _run(tmp_path, TWO, force=True)
    assert len(_index(out)["files"][0]["history"]) == 1


def test_replacement_keeps_the_previous_revision_and_history_lists_newest_first(two_revisions):
    out = two_revisions
    hist = _index(out)["files"][0]["history"]
    assert [h["rev"] for h in hist] == ["v0", "v1"] and hist[1]["note"] == MERGED
    assert all((out / ".revisions" / "blobs" / h["sha256"]).is_file() for h in hist)
    result = cli("history", DOC, "--out", str(out))
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].split() == ["rev", "ts", "note", "sha256"]
    assert [ln.split()[0] for ln in lines[1:]] == ["v1", "v0"]
    assert lines[1].split()[-1] == hist[1]["sha256"]


def test_revert_needs_the_exact_confirmation(two_revisions):
    out = two_revisions
    before = (out / DOC).read_bytes()
    for given in (None, "", "CONFIRM REVERT", f"confirm revert {DOC} v0", f"CONFIRM REVERT {DOC} v1"):
        args = ["revert", DOC, "--to", "v0", "--out", str(out)]
        result = cli(*args, input="") if given is None else cli(*args, "--confirm", given)
        assert result.exit_code != 0
        assert (out / DOC).read_bytes() == before
        assert len(_index(out)["files"][0]["history"]) == 2
    wrong_prompt = cli("revert", DOC, "--to", "v0", "--out", str(out), input="yes\n")
    assert wrong_prompt.exit_code != 0 and (out / DOC).read_bytes() == before

    typed = cli("revert", DOC, "--to", "v0", "--out", str(out), input=f"CONFIRM REVERT {DOC} v0\n")
    assert typed.exit_code == 0, typed.output
    hist = _index(out)["files"][0]["history"]
    assert [(h["rev"], h["note"]) for h in hist][-1] == ("v2", "revert->v0")
    assert hist[2]["sha256"] == hist[0]["sha256"] == _sha(out / DOC)
    assert cli("verify", "--out", str(out)).exit_code == 0


def test_revert_to_unknown_revision_or_document_fails(two_revisions):
    out = two_revisions
    assert cli("revert", DOC, "--to", "v9", "--out", str(out), "--confirm", f"CONFIRM REVERT {DOC} v9").exit_code != 0
    assert cli("history", "no-such-session", "--out", str(out)).exit_code != 0


def test_verify_reports_every_mismatch(two_revisions):
    out = two_revisions
    assert cli("verify", "--out", str(out)).exit_code == 0
    (out / DOC).write_bytes((out / DOC).read_bytes() + b" ")
    stray = out / "sessions" / "transcript" / "stray.json"
    stray.write_text("{}")
    hist = _index(out)["files"][0]["history"]
    blob = out / ".revisions" / "blobs" / hist[0]["sha256"]
    blob.write_bytes(b"tampered")
    result = cli("verify", "--out", str(out))
    assert result.exit_code != 0
    assert f"{DOC}: document sha256" in result.output
    assert "sessions/transcript/stray.json: document not in the revision index" in result.output
    assert f"blobs/{hist[0]['sha256']}: content sha256" in result.output
    # a document that differs from its index is not replaced by revert either
    confirm = f"CONFIRM REVERT {DOC} v0"
    assert cli("revert", DOC, "--to", "v0", "--out", str(out), "--confirm", confirm).exit_code != 0


def test_session_id_names_a_document_when_unique(tmp_path):
    reconstruct([ROOT / "sample_logs"], tmp_path, Settings())
    index = _index(tmp_path)
    rel = next(f["file"] for f in index["files"] if f["file"].endswith("/review-2025-08-24.json"))
    result = cli("history", "review-2025-08-24", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert rel in result.output or "v0" in result.output


def test_document_written_before_the_store_gets_v0_from_its_old_bytes(tmp_path):
    _run(tmp_path, TWO)
    out = tmp_path / "out"
    old = (out / DOC).read_bytes()
    db = sqlite3.connect(out / "ledger.sqlite")
    db.execute("DELETE FROM revisions")
    db.commit()
    db.close()
    _run(tmp_path, FOUR)
    hist = _index(out)["files"][0]["history"]
    assert [(h["rev"], h["note"]) for h in hist] == [("v0", "init|found before the revision store"), ("v1", MERGED)]
    assert revisions.get_blob(out, hist[0]["sha256"]) == old


def test_ledger_migrates_from_schema_1(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0])
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute("INSERT INTO files VALUES ('r1', 'k', 'k', 'h', 1, 'transcript', 'partial', 'parse_error,no_turns', "
               "'', 1, 'fp', 0.1)")
    db.execute("INSERT INTO sessions VALUES ('r1', 'k', 2, 's', NULL, 'quarantined', 'schema', '', NULL, NULL, "
               "1, 1, 1, 0.1)")
    db.commit()
    db.close()
    ledger = Ledger(path)
    try:
        assert SCHEMA_VERSION == 7
        assert ledger.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "7"
        assert ledger.revisions.history() == []
        # comma-joined reasons of an old ledger become rows
        rows = ledger.db.execute("SELECT source_key, ordinal, reason FROM reasons ORDER BY 2, 3").fetchall()
        assert rows == [("k", None, "no_turns"), ("k", None, "parse_error"), ("k", 2, "schema")]
        # sessions of an old ledger had no source accounting: nothing counted as unaccounted
        assert ledger.db.execute("SELECT unaccounted, declared FROM sessions").fetchall() == [(0, 0)]
    finally:
        ledger.close()


def _pool_runner(out: Path, settings: Settings):
    """Shards in parallel processes, as the flow runs them: only the main process writes the index."""
    def runner(shards, companions, ledger_path):
        # forkserver, as the flow's pool: a forked child of a process whose polars threads are running can hang
        with ProcessPoolExecutor(max_workers=3, mp_context=multiprocessing.get_context("forkserver")) as pool:
            futures = [pool.submit(run_shard, s, out, settings, companions=companions, ledger_path=Path(ledger_path))
                       for s in shards]
            for f in futures:
                yield f.result()
    return runner


def test_parallel_shards_share_the_blob_store(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for i in range(12):
        # two texts, six files each: each text is one snapshot of one session (whichever shard claims it)
        (src / f"chat{i:02}.txt").write_text((FOUR if i % 2 else TWO).replace(f"Session: {SID}\n", ""))
    settings = Settings(shard_files=1, workers=3)
    out = tmp_path / "out"
    summary = reconstruct([src], out, settings, runner=_pool_runner(out, settings))
    assert summary.shards >= 3
    index = _index(out)
    assert len(index["files"]) == 2
    assert sorted(f["file"] for f in index["files"]) == [f["file"] for f in index["files"]]
    assert cli("verify", "--out", str(out)).exit_code == 0


def test_diff_prints_one_clean_object_and_apply_diff_writes_a_revision(two_revisions, tmp_path):
    out = two_revisions
    result = cli("diff", DOC, "v1", "v0", "--out", str(out), "--format", "diff_json_v1")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("{") and text.rstrip("\n").endswith("}") and text.count("\n") == 1
    diff = orjson.loads(text)
    assert diff["protocol_id"] == "diff_json_v1" and diff["target"]["path"] == DOC
    hist = _index(out)["files"][0]["history"]
    assert diff["target"]["base_checksum_sha256"] == hist[1]["sha256"]  # documents are canonical text

    patch = tmp_path / "patch.json"
    patch.write_text(text)
    no = cli("apply-diff", str(patch), "--to", DOC, "--out", str(out), input="\n")
    assert no.exit_code != 0 and len(_index(out)["files"][0]["history"]) == 2
    yes = cli("apply-diff", str(patch), "--to", DOC, "--out", str(out), "--confirm", f"CONFIRM APPLY-DIFF {DOC} v1")
    assert yes.exit_code == 0, yes.output
    hist = _index(out)["files"][0]["history"]
    assert hist[-1]["rev"] == "v2" and hist[-1]["sha256"] == hist[0]["sha256"] == _sha(out / DOC)
    assert hist[-1]["note"].startswith("apply-diff on v1")


def test_apply_diff_refuses_bad_diffs(two_revisions, tmp_path):
    out = two_revisions
    base = (out / DOC).read_text()
    confirm = ["--confirm", f"CONFIRM APPLY-DIFF {DOC} v1"]
    good = make_diff(base, base.replace('"hello"', '"HELLO"'), DOC)
    broken_json = make_diff(base, base[:-3], DOC)
    speaker = make_diff(base, base.replace('"speaker":"', '"speaker":"x', 1), DOC)
    cases = {
        "code fences": "```json\n" + orjson.dumps(good).decode() + "\n```",
        "text before the object": "Here you go: " + orjson.dumps(good).decode(),
        "must be 'diff_json_v1'": orjson.dumps({**good, "protocol_id": "diff_json_v0"}).decode(),
        "base checksum mismatch": orjson.dumps(make_diff(base.replace('"hello"', '"hallo"'), base, DOC)).decode(),
        "result checksum mismatch": orjson.dumps({**good, "result_sha256": "0" * 64}).decode(),
        "beyond the base": orjson.dumps({"protocol_id": "diff_json_v1", "target": good["target"],
                                         "ops": [{"op": "delete", "at": len(base), "del": 5}]}).decode(),
        "patched document is not JSON": orjson.dumps(broken_json).decode(),
        "fails the gate": orjson.dumps(speaker).decode(),
    }
    for i, (why, raw) in enumerate(cases.items()):
        name = f"case{i}.json"
        patch = tmp_path / name
        patch.write_text(raw)
        result = cli("apply-diff", str(patch), "--to", DOC, "--out", str(out), *confirm)
        assert result.exit_code != 0, why
        assert "refused" in result.output and why in result.output, (why, result.output)
        assert len(_index(out)["files"][0]["history"]) == 2, why
    assert cli("apply-diff", str(tmp_path / "missing.json"), "--to", DOC, "--out", str(out), *confirm).exit_code != 0
