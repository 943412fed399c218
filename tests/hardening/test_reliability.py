"""Issue 12: no run-killing input, no lost or duplicated document, every input in the ledger."""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path

import orjson
import pytest

from audit.ledger import Ledger
from flows import pool
from flows.core import archives, ingest
from flows.pipeline import only_transient, reconstruct, shard_task
from models import errors
from models.settings import Settings
from models.status import FileStatus
from tests.hardening.corpus import GLOBAL_DOC, GLOBAL_TRANSCRIPT, GOOD_TRANSCRIPT
from tests.hardening.killers import raise_transient, run_or_die


def _files(out: Path, run_id: str) -> dict[str, tuple]:
    ledger = Ledger(out / "ledger.sqlite")
    try:
        rows = ledger.db.execute("SELECT source_path, status, reasons, detail FROM files WHERE run_id=?",
                                 (run_id,)).fetchall()
    finally:
        ledger.close()
    return {p: (s, r, d) for p, s, r, d in rows}


def _docs(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "sessions").rglob("*.json"))}


# -- 1. a file name that is not UTF-8 -------------------------------------------------------------
def test_non_utf8_file_names_are_recorded_and_later_runs_work(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (Path(os.fsdecode(bytes(src) + b"/caf\xe9.txt"))).write_text(GOOD_TRANSCRIPT)
    Path(os.fsdecode(bytes(src) + b"/empty\xff.txt")).write_bytes(b"")
    out = tmp_path / "out"
    for _ in range(2):
        summary = reconstruct([src], out, Settings())
        files = _files(out, summary.run_id)
        assert len(files) == 2
    assert "in/caf\\xe9.txt" in files and "in/empty\\xff.txt" in files
    first = _files(out, Ledger(out / "ledger.sqlite").runs.latest_id())
    assert first["in/empty\\xff.txt"][1] == "empty"
    record = next((out / "quarantine").rglob("file.json"))
    assert orjson.loads(record.read_bytes())["source"] == "in/empty\\xff.txt"


# -- 2. inputs too large for memory, and a worker that dies -----------------------------------------
def test_an_input_over_the_memory_budget_is_quarantined_too_large(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "small.txt").write_text(GOOD_TRANSCRIPT)
    (src / "big.txt").write_text(GOOD_TRANSCRIPT + "User: more\n" * 200)
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings(memory_budget_bytes=4096))
    files = _files(out, summary.run_id)
    assert files["in/small.txt"][0] == "ok"
    status, reasons, detail = files["in/big.txt"]
    assert (status, reasons) == ("quarantined", "too_large") and "4096" in detail


def test_a_worker_that_dies_quarantines_its_input_and_the_run_goes_on(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a.txt", "die.txt", "z.txt"):
        (src / name).write_text(GOOD_TRANSCRIPT)
    refs = ingest.discover([src], Settings())
    out = tmp_path / "out"
    with pool.local_pool(Settings(workers=2)):
        result, where = pool.dispatch(refs, out, Settings(), fn=run_or_die)
        again, _ = pool.dispatch(refs[:1], out, Settings(), fn=run_or_die)  # the pool was replaced
    assert "input by input" in where
    by_name = {f.source_path: f for f in result.files}
    assert by_name["in/die.txt"].status == "quarantined" and by_name["in/die.txt"].reasons == ["worker_died"]
    assert by_name["in/a.txt"].status == by_name["in/z.txt"].status == "ok"
    assert again.files[0].status == "ok"


# -- 3. a stray JSON under OUT/sessions ----------------------------------------------------------
def test_a_stray_json_under_sessions_does_not_stop_runs_datasets_or_report(tmp_path):
    from audit.report import write_report

    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text(GOOD_TRANSCRIPT)
    out = tmp_path / "out"
    reconstruct([src], out, Settings())
    (out / "sessions" / "notes.json").write_text("{ hand edited")
    (out / "sessions" / "other.json").write_text('{"sessionId": "x"}')
    (src / "b.txt").write_text(GOOD_TRANSCRIPT.replace("s-1", "s-2"))
    summary = reconstruct([src], out, Settings())
    assert summary.counts.sessions_ok == 1
    from audit.datasets import tables

    assert tables(out)[0].height == 2
    ledger = Ledger(out / "ledger.sqlite")
    try:
        assert write_report(out, ledger).is_file()
    finally:
        ledger.close()


# -- 4. the error root pickles; only transient errors are retried, task_retries times ----------------
@pytest.mark.parametrize("cls", [errors.ReconstructError, errors.IngestError, errors.TransientIngestError,
                                 errors.DetectionError, errors.ParseError, errors.ConfigError])
def test_every_error_survives_pickling(cls):
    exc = cls(errors.Reason.PARSE_ERROR, "bad line", path="a/b.txt", line=7, grammar="irc")
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls and str(back) == str(exc)
    assert (back.reason, back.detail, back.path, back.line, back.grammar, back.transient) == (
        exc.reason, exc.detail, exc.path, exc.line, exc.grammar, exc.transient)


def test_a_transient_error_in_a_worker_reaches_the_parent_and_the_pool_lives(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text(GOOD_TRANSCRIPT)
    refs = ingest.discover([src], Settings())
    with pool.local_pool(Settings(workers=2)):
        with pytest.raises(errors.TransientIngestError) as caught:
            pool.dispatch(refs, tmp_path / "out", Settings(), fn=raise_transient)
        assert caught.value.line == 3
        result, where = pool.dispatch(refs, tmp_path / "out", Settings())
    assert where == "the local process pool" and result.files[0].status == "ok"


def test_retries_follow_the_setting_and_only_transient_errors():
    from prefect.states import Failed

    assert shard_task(Settings(task_retries=5)).retries == 5
    assert shard_task(Settings(task_retries=0)).retries == 0
    transient = errors.TransientIngestError(errors.Reason.UNREADABLE, "hiccup")
    terminal = errors.ParseError(errors.Reason.PARSE_ERROR, "bad")
    assert only_transient(None, None, Failed(data=transient)) is True
    assert only_transient(None, None, Failed(data=terminal)) is False
    assert only_transient(None, None, Failed(data=ValueError("bug"))) is False


# -- 6. one status vocabulary, one "failed" predicate ------------------------------------------------
def test_a_file_with_a_failed_session_is_failed_everywhere_and_never_skipped(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "dup.txt").write_text(GOOD_TRANSCRIPT + GOOD_TRANSCRIPT)  # the second session is quarantined
    (src / "fine.txt").write_text(GOOD_TRANSCRIPT.replace("s-1", "s-9"))
    out = tmp_path / "out"
    first = reconstruct([src], out, Settings())
    second = reconstruct([src], out, Settings())
    assert second.counts.files_skipped == 1  # fine.txt only
    ledger = Ledger(out / "ledger.sqlite")
    try:
        failed = [s.source_path for s in ledger.quarantine.failed_sources(first.run_id)]
        listed = {q.source_path for q in ledger.quarantine.of_run(first.run_id)}
        assert failed == ["in/dup.txt"] and listed == {"in/dup.txt"}
        assert ledger.runs.counts(first.run_id).files_failed == 1
        reasons = ledger.db.execute("SELECT source_key, ordinal, reason FROM reasons WHERE run_id=?",
                                    (first.run_id,)).fetchall()
        assert reasons == [("in/dup.txt", 2, "duplicate_session_id")]
        statuses = {r[0] for r in ledger.db.execute("SELECT status FROM files")}
    finally:
        ledger.close()
    assert statuses <= {s.value for s in FileStatus}


def test_a_grammar_that_fails_halfway_is_rerun_not_skipped(tmp_path):
    from audit.ledger import FileRow, SessionRow

    ledger = Ledger(tmp_path / "ledger.sqlite")
    try:
        ledger.runs.start("r1", "2025-01-01T00:00:00Z", {}, "fp", "0")
        ledger.inputs.record("r1", "fp",
                             [FileRow("k", "k", "h", 1, "irc", FileStatus.PARTIAL, ["parse_error"], "boom", 1, 0.0)],
                             [SessionRow("k", 1, "s", None, "ok", [], "", "sessions/k/s.json", "x", 1, 1, 1, 0.0)])
        assert not ledger.inputs.prior(["k"]).unchanged("k", "h", "fp")
        assert [s.source_key for s in ledger.quarantine.failed_sources("r1")] == ["k"]
        assert [q.reasons for q in ledger.quarantine.of_run("r1")] == [("parse_error",)]
        assert ledger.runs.counts("r1").files_quarantined == 1
    finally:
        ledger.close()


# -- 7. zip entries that collide -----------------------------------------------------------------
def test_zip_entries_that_map_to_one_key_are_all_recorded_and_quarantined(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    with zipfile.ZipFile(src / "export.zip", "w") as zf:
        zf.writestr("chat/a.txt", GOOD_TRANSCRIPT)
        zf.writestr("chat\\a.txt", GOOD_TRANSCRIPT.replace("hello", "other"))
        zf.writestr("x.txt", GOOD_TRANSCRIPT)
        with pytest.warns(UserWarning):
            zf.writestr("x.txt", GOOD_TRANSCRIPT.replace("hello", "second"))
        zf.writestr("fine.txt", GOOD_TRANSCRIPT)
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings())
    files = _files(out, summary.run_id)
    assert len(files) == 5, files
    collided = {p: v for p, v in files.items() if v[1] == "name_collision"}
    assert len(collided) == 4 and all(v[0] == "quarantined" for v in collided.values())
    assert files["in/export.zip/fine.txt"][0] == "ok"
    assert summary.counts.files_quarantined == 4


# -- 8. several roots: stable, distinct keys whatever the order ----------------------------------------
def test_keys_of_several_roots_do_not_depend_on_their_order(tmp_path):
    for d, word in (("dir1", "one"), ("dir2", "two")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "chat.txt").write_text(GLOBAL_TRANSCRIPT.replace("hello", word))
    a, b = tmp_path / "a", tmp_path / "b"
    reconstruct([tmp_path / "dir1" / "chat.txt", tmp_path / "dir2" / "chat.txt"], a, Settings())
    reconstruct([tmp_path / "dir2" / "chat.txt", tmp_path / "dir1" / "chat.txt"], b, Settings())
    # the two files hold one session (a global id): two snapshots, merged the same either way (#15)
    assert _docs(a) == _docs(b) and len(_docs(a)) == 1
    reconstruct([tmp_path / "dir2" / "chat.txt", tmp_path / "dir1" / "chat.txt"], a, Settings())
    assert _docs(a) == _docs(b)
    [doc] = _docs(a).values()
    paths = {s["path"] for s in orjson.loads(doc)["artifacts"]["ByggLogg"]["snapshots"]}
    assert paths == {"dir1/chat.txt", "dir2/chat.txt"}


# -- 9 and 13. ignored files and the output root are recorded with their rule ---------------------------
def test_ignored_files_and_an_output_root_inside_the_input_are_recorded(tmp_path):
    src = tmp_path / "in"
    (src / ".git").mkdir(parents=True)
    (src / ".git" / "config").write_text("x")
    for name in (".hidden.txt", "Thumbs.db", ".DS_Store", "desktop.ini"):
        (src / name).write_text(GOOD_TRANSCRIPT)
    (src / "chat.txt").write_text(GOOD_TRANSCRIPT)
    (src / "IMG-20240301-WA0001.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(range(256)))
    (src / ".aider.chat.history.md").write_text("# aider chat started at 2024-05-01 10:00:00\n\n#### hi\n\nHello.\n")
    out = src / "out"
    for _ in range(3):
        summary = reconstruct([src], out, Settings())
    files = _files(out, summary.run_id)
    assert set(files) == {"in/.git", "in/.hidden.txt", "in/Thumbs.db", "in/.DS_Store", "in/desktop.ini",
                          "in/chat.txt", "in/out", "in/IMG-20240301-WA0001.jpg", "in/.aider.chat.history.md"}, files
    inputs = {"in/chat.txt", "in/.aider.chat.history.md"}
    assert all(files[p][0] == "ignored" and files[p][2] for p in files if p not in inputs)
    assert "output root" in files["in/out"][2] and "media" in files["in/IMG-20240301-WA0001.jpg"][2]
    assert summary.counts.files_ignored == 7
    assert not (out / "sessions" / "in" / "out").exists()


# -- 10 and 11. what the skip sees: companions and UTF-16 ---------------------------------------------
def test_utf16_inputs_are_skipped_when_unchanged(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "wide.txt").write_bytes(GOOD_TRANSCRIPT.encode("utf-16"))
    out = tmp_path / "out"
    reconstruct([src], out, Settings())
    assert reconstruct([src], out, Settings()).counts.files_skipped == 1


def test_a_changed_companion_reprocesses_its_folder_and_is_read_once(tmp_path, monkeypatch):
    import shutil

    from tests.helpers import GOLDEN

    src = tmp_path / "slack"
    shutil.copytree(GOLDEN / "slack" / "workspace", src, ignore=shutil.ignore_patterns("*.expected.json"))
    day = next(p for p in (src / "general").iterdir() if p.suffix == ".json")
    for n in range(3):  # more day files in the same folder
        shutil.copy(day, day.with_name(f"2030-01-0{n + 1}.json"))
    out = tmp_path / "out"
    reads = []
    real_read = ingest.read
    monkeypatch.setattr(ingest, "read", lambda ref, *a: reads.append(ref.name) or real_read(ref, *a))
    first = reconstruct([src], out, Settings(workers=1))
    assert reads.count("slack/users.json") == 1
    assert reconstruct([src], out, Settings(workers=1)).counts.files_skipped == first.counts.files - 1
    users = src / "users.json"
    users.write_text(users.read_text().replace("Bo Berg", "Bo Renamed"))
    third = reconstruct([src], out, Settings(workers=1))
    assert third.counts.files_skipped == 0
    assert any("Bo Renamed" in d.decode() for d in _docs(out).values())


# -- zips at scale: one open per shard ------------------------------------------------------------
def test_a_zip_is_opened_once_per_shard_not_per_entry(tmp_path, monkeypatch):
    src = tmp_path / "in"
    src.mkdir()
    with zipfile.ZipFile(src / "many.zip", "w") as zf:
        for i in range(200):
            zf.writestr(f"c/{i:03d}.txt", GOOD_TRANSCRIPT.replace("s-1", f"s-{i}"))
    opened = []
    real = zipfile.ZipFile
    monkeypatch.setattr(archives.zipfile, "ZipFile", lambda *a, **k: opened.append(a[0]) or real(*a, **k))
    summary = reconstruct([src], tmp_path / "out", Settings(workers=1))
    assert summary.counts.sessions_ok == 200
    assert len(opened) <= 1 + summary.shards, len(opened)


# -- 12. documents whose source is gone are kept and flagged; fixed inputs lose their quarantine record --
def _flags(out: Path) -> dict[str, str]:
    from audit.datasets import tables

    frame = tables(out)[0]
    return {p: f for p, f in zip(frame["output_path"], frame["flag"], strict=True) if f}


def test_a_deleted_input_keeps_its_document_flagged_source_missing(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text(GOOD_TRANSCRIPT)
    (src / "b.txt").write_text(GLOBAL_TRANSCRIPT)
    out = tmp_path / "out"
    reconstruct([src], out, Settings())
    (src / "b.txt").unlink()
    summary = reconstruct([src], out, Settings())
    assert _files(out, summary.run_id)["in/b.txt"][0] == "missing"
    assert summary.counts.files_missing == 1 and summary.counts.files_quarantined == 0
    assert (out / GLOBAL_DOC).is_file()
    assert _flags(out) == {GLOBAL_DOC: "source_missing"}
    again = reconstruct([src], out, Settings())  # still gone: not recorded again, still flagged
    assert again.counts.files_missing == 0
    assert _flags(out) == {GLOBAL_DOC: "source_missing"}
    (src / "b.txt").write_text(GLOBAL_TRANSCRIPT)
    reconstruct([src], out, Settings())
    assert _flags(out) == {}


def test_a_conversation_removed_from_an_export_is_flagged_superseded(tmp_path):
    from tests.hardening.corpus import CHATGPT

    one = orjson.loads(CHATGPT)[0]
    two = {**one, "id": "conv-2", "title": "second"}
    src = tmp_path / "in"
    src.mkdir()
    (src / "conversations.json").write_bytes(orjson.dumps([one, two]))
    out = tmp_path / "out"
    reconstruct([src], out, Settings())
    (src / "conversations.json").write_bytes(orjson.dumps([one]))
    reconstruct([src], out, Settings())
    assert _flags(out) == {"sessions/chatgpt/conv-2/conv-2.json": "superseded"}
    assert (out / "sessions/chatgpt/conv-2/conv-2.json").is_file()


def test_a_fixed_input_loses_its_quarantine_record(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "bad.txt").write_text("just prose\n")
    out = tmp_path / "out"
    reconstruct([src], out, Settings())
    record = out / "quarantine" / "in" / "bad.txt" / "file.json"
    assert record.is_file()
    (src / "bad.txt").write_text(GOOD_TRANSCRIPT)
    reconstruct([src], out, Settings())
    assert not record.exists()


# -- done when: one folder holding all of these at once -------------------------------------------------
def test_a_folder_of_every_hostile_input_at_once(tmp_path):
    src = tmp_path / "in"
    (src / ".git").mkdir(parents=True)
    Path(os.fsdecode(bytes(src) + b"/caf\xe9.txt")).write_text(GOOD_TRANSCRIPT)
    (src / "Thumbs.db").write_bytes(b"\0\1")
    (src / "wide.txt").write_bytes(GOOD_TRANSCRIPT.replace("s-1", "s-7").encode("utf-16"))
    (src / "big.txt").write_text(GOOD_TRANSCRIPT.replace("s-1", "s-8") + "User: more\n" * 3000)
    (src / "empty.txt").write_bytes(b"")
    with zipfile.ZipFile(src / "z.zip", "w") as zf:
        zf.writestr("a/x.txt", GOOD_TRANSCRIPT)
        zf.writestr("a\\x.txt", GOOD_TRANSCRIPT)
    out = src / "out"
    reconstruct([src], out, Settings(memory_budget_bytes=1 << 18))
    (out / "sessions" / "stray.json").write_text("{")
    summary = reconstruct([src], out, Settings(memory_budget_bytes=1 << 18))
    files = _files(out, summary.run_id)
    assert set(files) == {"in/.git", "in/caf\\xe9.txt", "in/Thumbs.db", "in/wide.txt", "in/big.txt",
                          "in/empty.txt", "in/z.zip/a/x.txt", "in/z.zip/a/x.txt~2", "in/out"}, files
    assert files["in/big.txt"][1] == "too_large" and files["in/wide.txt"][0] == "skipped"


def test_an_input_changed_and_changed_back_is_processed_again(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    out = tmp_path / "out"
    for text in (GLOBAL_TRANSCRIPT, GLOBAL_TRANSCRIPT.replace("hello", "changed"), GLOBAL_TRANSCRIPT):
        (src / "a.txt").write_text(text)
        summary = reconstruct([src], out, Settings())
    assert summary.counts.files_skipped == 0
    # its two contents are two snapshots of one session (a global id), both in its document (#15)
    doc = orjson.loads((out / GLOBAL_DOC).read_bytes())
    assert len(doc["artifacts"]["ByggLogg"]["snapshots"]) == 2
