"""Issue 12: reruns under the original keys, and clear failures (one line, exit 4) instead of tracebacks."""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from audit.files import Batch
from audit.ledger import Ledger
from flows.cli.app import app
from flows.exits import ExitCode
from flows.pipeline import reconstruct
from models.settings import Settings
from models.status import FileStatus, RunStatus

runner = CliRunner()
def _good(n: int) -> str:
    """A transcript whose session id is a UUID (global: a rerun of it is the same key)."""
    return f"Session: 00000000-0000-4000-8000-{n:012d}\nUser: hello\nAssistant: hi there\n"


GOOD = _good(1)


def _one_line_exit_4(result):
    _one_line(result, ExitCode.CANNOT_START)


def _one_line(result, code: ExitCode):
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output


def _archive(tmp_path):
    src = tmp_path / "logs"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "bad.txt").write_text("just prose, no speakers\n")
    (src / "sub" / "good.txt").write_text(GOOD)
    (src / "other.txt").write_text(_good(2))
    return src


def _documents(out):
    return sorted(str(p.relative_to(out)) for p in (out / "sessions").rglob("*.json"))


# -- 5. rerun --failed keeps the original keys ------------------------------------------------------
def test_rerun_after_a_fix_writes_under_the_original_key_and_drops_the_stale_record(prefect_harness, tmp_path):
    src, out = _archive(tmp_path), tmp_path / "out"
    assert runner.invoke(app, ["run", str(src), "--out", str(out), "--workers", "1"]).exit_code == ExitCode.QUARANTINED
    assert (out / "quarantine" / "logs" / "sub" / "bad.txt" / "file.json").is_file()
    before = _documents(out)
    (src / "sub" / "bad.txt").write_text(_good(3))
    result = runner.invoke(app, ["rerun", "--failed", "--out", str(out)])
    assert result.exit_code == ExitCode.OK, result.output
    third = "00000000-0000-4000-8000-000000000003"
    assert _documents(out) == sorted([*before, f"sessions/transcript/{third}/{third}.json"])
    assert not (out / "quarantine" / "logs" / "sub" / "bad.txt" / "file.json").exists()


def test_rerun_of_a_deleted_input_records_it_missing_and_duplicates_nothing(prefect_harness, tmp_path):
    src, out = _archive(tmp_path), tmp_path / "out"
    runner.invoke(app, ["run", str(src), "--out", str(out), "--workers", "1"])
    before = _documents(out)
    (src / "sub" / "bad.txt").unlink()
    runner.invoke(app, ["rerun", "--failed", "--out", str(out)])
    assert _documents(out) == before
    ledger = Ledger(out / "ledger.sqlite")
    try:
        rows = ledger.inputs.of_run(ledger.runs.latest_id())
    finally:
        ledger.close()
    assert [(r.source_key, r.status, r.reasons) for r in rows] == [("logs/sub/bad.txt", FileStatus.MISSING, ())]


# -- clear failures ---------------------------------------------------------------------------------
def test_out_pointing_at_a_file(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "afile").write_text("x")
    _one_line_exit_4(runner.invoke(app, ["run", str(tmp_path / "in"), "--out", str(tmp_path / "afile")]))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only permissions")
def test_a_read_only_output_cannot_run_but_can_be_read(tmp_path):
    src, out = _archive(tmp_path), tmp_path / "out"
    reconstruct([src], out, Settings())
    for p in [out, *out.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        _one_line_exit_4(runner.invoke(app, ["run", str(src), "--out", str(out)]))
        assert runner.invoke(app, ["status", "--out", str(out)]).exit_code == 0
        assert runner.invoke(app, ["verify", "--out", str(out)]).exit_code == 0
    finally:
        for p in [out, *out.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_status_and_verify_open_the_ledger_read_only(tmp_path):
    src, out = _archive(tmp_path), tmp_path / "out"
    reconstruct([src], out, Settings())
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name.startswith("ledger")}
    assert runner.invoke(app, ["status", "--out", str(out)]).exit_code == 0
    with pytest.raises(sqlite3.OperationalError):
        Ledger(out / "ledger.sqlite", read_only=True).db.execute("CREATE TABLE x (a)")
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name.startswith("ledger")} == before


def test_a_corrupt_ledger(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "ledger.sqlite").write_bytes(b"this is not a database" * 100)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text(GOOD)
    _one_line_exit_4(runner.invoke(app, ["status", "--out", str(out)]))
    _one_line_exit_4(runner.invoke(app, ["run", str(tmp_path / "in"), "--out", str(out), "--workers", "1"]))


@pytest.mark.parametrize("command", [["status"], ["quarantine"], ["rerun", "--failed"]])
def test_malformed_and_missing_config_files(command, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("source_tz = = 'x'\n")
    _one_line(runner.invoke(app, [*command, "--out", str(tmp_path), "--config", str(bad)]), ExitCode.USAGE)
    _one_line(runner.invoke(app, [*command, "--out", str(tmp_path), "--config", str(tmp_path / "none.toml")]),
              ExitCode.USAGE)


def test_run_with_a_missing_config_file(tmp_path):
    (tmp_path / "in").mkdir()
    result = runner.invoke(app, ["run", str(tmp_path / "in"), "--out", str(tmp_path / "o"),
                                 "--config", str(tmp_path / "missing.toml")])
    _one_line(result, ExitCode.USAGE)
    assert "missing.toml" in result.output


def test_schema_into_a_missing_folder(tmp_path):
    _one_line_exit_4(runner.invoke(app, ["schema", "--out", str(tmp_path / "no" / "such" / "s.json")]))


def test_read_commands_on_a_mistyped_out_say_so_and_create_nothing(tmp_path):
    typo = tmp_path / "outptu"
    for command in (["status"], ["quarantine"], ["rerun", "--failed"]):
        result = runner.invoke(app, [*command, "--out", str(typo)])
        _one_line_exit_4(result)
        assert "no ledger" in result.output
    assert not typo.exists()


def test_quarantine_of_an_unknown_run(tmp_path):
    src, out = _archive(tmp_path), tmp_path / "out"
    reconstruct([src], out, Settings())
    _one_line(runner.invoke(app, ["quarantine", "--out", str(out), "--run", "nosuchrun"]), ExitCode.NOT_FOUND)


def test_a_full_disk_stops_the_run_marked_failed_with_what_was_written(tmp_path, monkeypatch):
    src = tmp_path / "in"
    src.mkdir()
    for i in range(6):
        (src / f"c{i}.txt").write_text(_good(i))
    real, calls = Batch.stage, []

    def filling(self, path, data, mode=0o644):
        calls.extend([path] if "sessions" in path.parts else [])
        if len(calls) > 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(self, path, data, mode)

    monkeypatch.setattr(Batch, "stage", filling)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="No space left"):
        reconstruct([src], out, Settings(workers=1))
    ledger = Ledger(out / "ledger.sqlite")
    try:
        run = ledger.runs.recent(1)[0]
        written = sorted(r[0] for r in ledger.db.execute("SELECT output_path FROM sessions WHERE output_sha256 "
                                                         "IS NOT NULL"))
        indexed = sorted(ledger.revisions.latest())
    finally:
        ledger.close()
    # the shard's writes staged before the disk filled are made durable and recorded, and only those
    on_disk = sorted(p.relative_to(out).as_posix() for p in (out / "sessions").rglob("*.json"))
    assert run.status is RunStatus.FAILED and len(written) == 3 and written == indexed == on_disk
    assert not list(out.rglob("*.tmp"))


def test_a_full_disk_through_the_cli_is_one_line(prefect_harness, tmp_path, monkeypatch):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text(GOOD)

    def full(self, path, data, mode=0o644):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(Batch, "stage", full)
    result = runner.invoke(app, ["run", str(src), "--out", str(tmp_path / "o"), "--workers", "1"])
    _one_line_exit_4(result)
    assert "No space left on device" in result.output


def test_status_on_a_ledger_of_an_older_schema_upgrades_it(tmp_path):
    from audit.ledger.schema import MIGRATIONS

    out = tmp_path / "out"
    out.mkdir()
    db = sqlite3.connect(out / "ledger.sqlite")
    db.executescript(MIGRATIONS[0] + MIGRATIONS[1])
    db.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    db.commit()
    db.close()
    assert runner.invoke(app, ["status", "--out", str(out)]).exit_code == 0


def _open_ledger(path: str, barrier) -> int:
    from audit.ledger import Ledger
    from audit.ledger.schema import version

    barrier.wait()
    ledger = Ledger(Path(path))
    try:
        return version(ledger.db)
    finally:
        ledger.close()


def test_processes_creating_one_ledger_at_once_both_succeed(tmp_path):
    """A scheduled run and a CLI command may create the same new ledger together: the one that
    loses the race to a migration step goes on from the version the other wrote."""
    import multiprocessing

    from audit.ledger import SCHEMA_VERSION

    ctx = multiprocessing.get_context("spawn")
    path = str(tmp_path / "ledger.sqlite")
    for attempt in range(3):  # the race is not forced; several tries make a collision likely
        for leftover in (path, f"{path}-wal", f"{path}-shm"):
            Path(leftover).unlink(missing_ok=True)
        with ctx.Manager() as manager:
            barrier = manager.Barrier(4)
            with ctx.Pool(4) as pool:
                versions = pool.starmap(_open_ledger, [(path, barrier)] * 4)
        assert versions == [SCHEMA_VERSION] * 4, attempt


def test_the_event_workers_drain_progress_stays_off_the_runs_stderr(monkeypatch, caplog):
    """Prefect's event worker says "Still processing items" while it drains at exit: not a fault, so not a
    line on the run's stderr (whose one line at a fault must stay one line); its errors still are."""
    import logging

    from prefect.events.worker import EventsWorker

    from flows.cli.app import prefect_env

    logger = logging.getLogger(EventsWorker.__name__)  # the name Prefect's services log under
    monkeypatch.setattr(logger, "level", logger.level)
    prefect_env()
    with caplog.at_level(logging.DEBUG, logger="unrelated"):
        logger.warning("Still processing items: 1 items remaining...")
        logger.error("Service 'EventsWorker' failed with 1 pending items.")
    assert [r.levelname for r in caplog.records if r.name == logger.name] == ["ERROR"]
