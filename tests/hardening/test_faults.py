"""Issue 25, item 3: a fault of the environment ends the command with exit 4 and one line on stderr,
the run marked ``failed`` with what was written recorded, and no process left behind."""

from __future__ import annotations

import os
import resource
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import polars
import pytest

from audit.ledger import Ledger, RunRecord
from flows.pipeline import reconstruct
from models.settings import Settings
from models.status import RunStatus
from tests.hardening.test_interrupts import _alive, _archive, _descendants
from tests.helpers import ROOT

RECONSTRUCT = Path(sys.executable).parent / "reconstruct"
GOOD = "Session: s-{i}\nUser: hello {i}\nAssistant: hi there {i}\n"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    return {**env, **extra}


def _cli(args: list[str], env: dict[str, str] | None = None, inject: tuple[str, int] | None = None,
         **kwargs) -> subprocess.CompletedProcess:
    command = ([sys.executable, "-m", "tests.hardening.faultinject", inject[0], str(inject[1])] if inject
               else [str(RECONSTRUCT)])
    return subprocess.run([*command, *args], cwd=ROOT, env=env or _env(), capture_output=True, text=True,
                          timeout=600, **kwargs)


def _one_line(result: subprocess.CompletedProcess, *words: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 4, result.stderr[-3000:]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _small(root: Path, n: int = 6) -> Path:
    src = root / "in"
    src.mkdir()
    for i in range(n):
        (src / f"c{i}.txt").write_text(GOOD.format(i=i))
    return src


def _run_row(out: Path) -> RunRecord:
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        return ledger.runs.recent(1)[0]
    finally:
        ledger.close()


def _recorded(out: Path) -> list[str]:
    db = sqlite3.connect(f"file:{out / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        return sorted(r[0] for r in db.execute("SELECT DISTINCT output_path FROM sessions WHERE output_sha256 "
                                               "IS NOT NULL"))
    finally:
        db.close()


def _documents(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in (out / "sessions").rglob("*.json"))


# -- 1. a full disk ---------------------------------------------------------------------------------
@pytest.mark.parametrize("code, words", [("ENOSPC", ["disk full"]), ("EROFS", ["output not writable"])])
def test_a_write_fault_is_one_line_and_the_run_is_failed_with_what_was_written(tmp_path, code, words):
    src, out = _small(tmp_path), tmp_path / "out"
    line = _one_line(_cli(["run", str(src), "--out", str(out), "--workers", "1"], inject=(code, 3)), *words)
    assert _run_row(out).status is RunStatus.FAILED
    assert _recorded(out) == _documents(out) and len(_documents(out)) == 3
    log = Path(line.rsplit("details in ", 1)[1])
    assert log.is_relative_to(out) and "Traceback" in log.read_text()


@pytest.fixture
def tiny_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.slow
def test_a_real_full_disk(tmp_path, tiny_disk):
    src = _archive(tmp_path, 300)  # ~17 MB of documents for a 2 MB disk
    out = tiny_disk / "out"
    line = _one_line(_cli(["run", str(src), "--out", str(out)]), "disk full")
    assert _run_row(out).status is RunStatus.FAILED
    unrecorded = sorted(set(_documents(out)) - set(_recorded(out)))
    details = Path(line.rsplit("details in ", 1)[1]) if "details in " in line else None
    why = details.read_text()[-4000:] if details is not None and details.is_file() else line
    assert not unrecorded and _recorded(out), (unrecorded, why)  # the shards in flight recorded too
    assert _recorded(out) == _documents(out)  # and nothing recorded that is not on disk
    assert _unrecorded_by_verify(out) == []


def _unrecorded_by_verify(out: Path) -> list[str]:
    """What ``reconstruct verify`` finds on disk but not in the ledger's revision index (it must pass)."""
    done = _cli(["verify", "--out", str(out)])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if "not in the revision index" in line]


def test_a_full_disk_waits_for_the_shard_in_flight_and_records_it(tmp_path):
    """Two shards in flight: one meets ENOSPC while the other has written its documents and not yet
    returned (ordered by tests/hardening/faultinject.py, no timing). The run waits for the second and
    records it: every document on disk is in the ledger. The input whose document did not land is
    not recorded as done, so the next run writes it."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for name in ("a0", "a1", "b0", "b1"):
        (src / f"{name}.txt").write_text(GOOD.format(i=name))
    result = _cli(["run", str(src), "--out", str(out), "--workers", "2"], inject=("inflight", str(tmp_path)))
    _one_line(result, "disk full")
    assert "gave up" not in result.stderr
    assert _run_row(out).status is RunStatus.FAILED
    assert _documents(out) == _recorded(out) and len(_documents(out)) == 3  # a0, b0, b1
    assert _unrecorded_by_verify(out) == []
    assert _cli(["run", str(src), "--out", str(out), "--workers", "1"]).returncode == 0
    assert len(_documents(out)) == 4 and _documents(out) == _recorded(out)


def test_no_shard_starts_once_the_run_stops_starting(tmp_path):
    """After a fault (``pool.stop_starting``) a shard not yet begun returns an empty result at once."""
    from flows import pool

    begun = []
    with pool.local_pool(Settings(workers=1)):
        pool.stop_starting()
        result, where = pool.dispatch(["x"], tmp_path, Settings(workers=1), fn=lambda *a, **k: begun.append(a))
    assert begun == [] and result.files == [] and result.stopped is None and "stopped" in where


# -- 2. the output turning read-only mid-run (ext4 remounts itself read-only on a metadata error) ---
@pytest.fixture
def ext4_disk(tmp_path):
    image, mount = tmp_path / "disk.img", tmp_path / "disk"
    mount.mkdir()
    with image.open("wb") as fh:
        fh.truncate(256 << 20)
    steps = [["mkfs.ext4", "-q", "-F", "-b", "4096", str(image)], ["mount", "-o", "loop", str(image), str(mount)]]
    for step in steps:
        done = subprocess.run(step, capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot make a loop ext4 file system here: {done.stderr.decode().strip()}")
    (mount / "trap").mkdir()  # a folder whose block is broken later; unmounted so it is read from disk
    for i in range(3):
        (mount / "trap" / f"f{i}").write_text("x")
    subprocess.run(["umount", str(mount)], check=True)
    subprocess.run(["mount", "-o", "loop,errors=remount-ro", str(image), str(mount)], check=True)
    yield image, mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _break_into_read_only(image: Path, mount: Path) -> None:
    """Corrupt the trap folder's block on the device and read it: ext4 remounts itself read-only."""
    # the image itself, not the loop device findmnt names: the folder was written before the remount, so
    # its block is on the image, and no second mount or busy device can hide it; -c (catastrophic mode) does
    # not read the block bitmaps, which the mounted file system may be writing at this moment (their checksum
    # then does not match, and debugfs without -c refuses to open the image)
    blocks = subprocess.run(["debugfs", "-c", "-R", "blocks /trap", str(image)], capture_output=True, text=True)
    assert blocks.stdout.split(), f"debugfs found no block of /trap: {blocks.stderr.strip()}"
    block = int(blocks.stdout.split()[0])
    with image.open("r+b") as fh:
        fh.seek(block * 4096)
        fh.write(os.urandom(4096))
    subprocess.run(["ls", str(mount / "trap")], capture_output=True)
    options = subprocess.run(["findmnt", "-n", "-o", "OPTIONS", str(mount)], capture_output=True, text=True).stdout
    assert {"ro", "emergency_ro"} & set(options.strip().split(",")), options


@pytest.mark.slow
def test_an_output_that_turns_read_only_mid_run(tmp_path, ext4_disk):
    image, mount = ext4_disk
    src, out = _archive(tmp_path, 1500), mount / "out"
    env = _env(XDG_STATE_HOME=str(tmp_path / "state"))
    proc = subprocess.Popen([str(RECONSTRUCT), "run", str(src), "--out", str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[int] = set()
    while proc.poll() is None and len(list((out / "sessions").rglob("*.json"))) < 100:
        seen |= _descendants(proc.pid)
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before the fault"
    seen |= _descendants(proc.pid)
    try:
        _break_into_read_only(image, mount)
        _, stderr = proc.communicate(timeout=600)
    finally:
        proc.kill()
    lines = stderr.strip().splitlines()
    assert proc.returncode == 4 and len(lines) == 1, stderr[-3000:]
    assert any(w in lines[0] for w in ("output not writable", "file system failed", "ledger cannot be")), lines[0]
    # the ledger lives on the same, now read-only, file system: its status cannot change, and the
    # line says so; the end is kept outside OUT, and the next run, once the output is writable, records it
    # (the ledger itself may not even be readable now: a hot journal SQLite cannot roll back read-only)
    assert "could not record the run's end" in lines[0] and "kept in " in lines[0], lines[0]
    kept = Path(lines[0].rsplit("kept in ", 1)[1].split(", the next run")[0])
    assert kept.is_relative_to(tmp_path / "state"), kept
    run_id = orjson.loads(kept.read_bytes())["run_id"]
    _gone(seen)
    subprocess.run(["umount", str(mount)], check=True)
    subprocess.run(["e2fsck", "-fy", str(image)], capture_output=True)  # repairs the broken folder (exit 1)
    subprocess.run(["mount", "-o", "loop", str(image), str(mount)], check=True)
    again = _cli(["run", str(src), "--out", str(out)], env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        assert ledger.runs.get(run_id).status is RunStatus.FAILED and not kept.exists()
    finally:
        ledger.close()


def test_a_run_whose_ledger_turned_read_only_is_marked_failed_by_the_next_run(tmp_path):
    """The ledger refuses the run's failed status (read-only, as on an output remounted read-only): the
    end is kept outside OUT, the line says where, and the next run records it as ``failed``, with its
    time and why, instead of ``interrupted``."""
    src, out, state = _small(tmp_path), tmp_path / "out", tmp_path / "state"
    env = _env(XDG_STATE_HOME=str(state))
    line = _one_line(_cli(["run", str(src), "--out", str(out), "--workers", "1"], env=env, inject=("readonly", 3)),
                     "output not writable", "could not record the run's end", "the next run records it")
    faulted = _run_row(out)
    kept = list((state / "reconstruct" / "unrecorded-ends").glob("*.json"))
    assert faulted.status is RunStatus.RUNNING and len(kept) == 1 and str(kept[0]) in line
    assert not kept[0].is_relative_to(out)
    assert _cli(["run", str(src), "--out", str(out), "--workers", "1"], env=env).returncode == 0
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        row, ending = ledger.runs.get(faulted.run_id), ledger.meta.get(f"ending:{faulted.run_id}")
    finally:
        ledger.close()
    assert row.status is RunStatus.FAILED and row.finished_at and row.files == 3, row
    assert ending.startswith("failed at ") and "output not writable" in ending, ending
    assert not kept[0].exists()


def _gone(pids: set[int], patience: float = 30.0) -> None:
    deadline = time.monotonic() + patience
    while {p for p in pids if _alive(p)} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not {p for p in pids if _alive(p)}, [Path(f"/proc/{p}/cmdline").read_bytes()[:100] for p in pids
                                                 if _alive(p)]


# -- 3. SIGKILL of the main process -------------------------------------------------------------------
@pytest.mark.slow
def test_workers_end_with_a_killed_run_and_write_nothing_after_it(tmp_path):
    src, out = _archive(tmp_path, 1500), tmp_path / "out"
    proc = subprocess.Popen([str(RECONSTRUCT), "run", str(src), "--out", str(out), "--workers", "2"], cwd=ROOT,
                            env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: set[int] = set()
    while proc.poll() is None and len(list((out / "sessions").rglob("*.json"))) < 100:
        seen |= _descendants(proc.pid)
        time.sleep(0.2)
    seen |= _descendants(proc.pid)
    proc.kill()
    assert proc.wait() == -9, "the run ended before it was killed"
    _gone(seen)
    first = _documents(out)
    time.sleep(2)
    assert _documents(out) == first
    assert len(first) < 1500


# -- 4. Prefect unavailable ---------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_prefect_api_where_nothing_listens(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/api"
    out = tmp_path / "out"
    _one_line(_cli(["run", str(_small(tmp_path)), "--out", str(out)], env=_env(PREFECT_API_URL=url)),
              "Prefect unavailable", url)
    assert not (out / "ledger.sqlite").exists()  # the run never started


def test_an_unwritable_prefect_home(tmp_path):
    (tmp_path / "a-file").write_text("x")
    home = tmp_path / "a-file" / "home"  # not writable even by root
    _one_line(_cli(["run", str(_small(tmp_path)), "--out", str(tmp_path / "out")], env=_env(PREFECT_HOME=str(home))),
              "PREFECT_HOME", str(home))


# -- 5. a damaged ledger ------------------------------------------------------------------------------
def _ledger(tmp_path: Path) -> tuple[Path, Path]:
    src, out = _small(tmp_path, 40), tmp_path / "out"
    reconstruct([src], out, Settings(workers=1))
    return src, out


def _page_of(path: Path, table: str) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT rootpage FROM sqlite_master WHERE name=?", (table,)).fetchone()[0]
    finally:
        db.close()


@pytest.mark.parametrize("where", ["middle", "header"])
def test_a_damaged_ledger_is_one_line_naming_it(tmp_path, where):
    src, out = _ledger(tmp_path)
    path = out / "ledger.sqlite"
    _damage(path, where)
    result = _cli(["run", str(src), "--out", str(out), "--workers", "1"])
    _one_line(result, "ledger damaged", str(path), "move it aside")


def _damage(path: Path, where: str) -> None:
    with path.open("r+b") as fh:
        if where == "header":
            fh.write(b"X" * 100)
        else:  # garbage over a page in the middle that a run does not read (the aliases table)
            fh.seek((_page_of(path, "aliases") - 1) * 4096)
            fh.write(b"garbage!" * 512)


READ_COMMANDS = [["status"], ["quarantine"], ["sessions"], ["verify"], ["report"], ["export"],
                 ["history", "{doc}"], ["diff", "{doc}", "v1", "v1"], ["rerun"], ["query", "SELECT 1"],
                 ["revert", "{doc}", "--to", "v1", "--confirm", "no"], ["link", "a:1", "b:2", "--why", "test"]]


@pytest.mark.parametrize("where", ["middle", "header"])
def test_read_commands_check_a_damaged_ledger_as_run_does(tmp_path, where):
    """Every command that reads the ledger runs its quick_check first: a damaged ledger gives the line
    and exit code ``run`` gives, never a traceback nor an answer read past the damage."""
    _, out = _ledger(tmp_path)
    path = out / "ledger.sqlite"
    doc = _documents(out)[0]
    _damage(path, where)
    for command in READ_COMMANDS:
        args = [a.format(doc=doc) for a in command]
        where_out = [str(out)] if command[0] == "query" else ["--out", str(out)]
        result = _cli([*args[:1], *where_out, *args[1:]])
        line = _one_line(result, "ledger damaged", str(path), "move it aside")
        assert line.startswith("cannot read: "), (command, line)
        assert not (out / "logs").exists(), command  # a read command writes nothing under OUT


# -- 6. too few file descriptors -------------------------------------------------------------------------
def test_too_few_file_descriptors(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (20, 20))

    _one_line(_cli(["run", str(_small(tmp_path)), "--out", str(tmp_path / "out")], preexec_fn=limit),
              "EMFILE", "20")


def test_a_low_soft_limit_is_raised_not_refused():
    from flows import faults

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 200:
        pytest.skip(f"the hard limit here ({hard}) is too low to test raising the soft one")
    resource.setrlimit(resource.RLIMIT_NOFILE, (30, hard))
    try:
        faults.check_open_files(2)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == faults.FILES_BASE + 2 * faults.FILES_PER_WORKER
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_faults_map_to_one_place():
    """The one mapping: known exception classes from the file system, SQLite and Prefect's client,
    however chained, to a fault; anything else (a bug) to none."""
    import errno

    import httpx

    from flows import faults
    from models.errors import Reason

    def chained(inner: BaseException) -> BaseException:
        try:
            try:
                raise inner
            except BaseException as exc:
                raise RuntimeError("Failed to reach API") from exc
        except RuntimeError as outer:
            return outer

    cases = [
        (Reason.DISK_FULL, OSError(errno.ENOSPC, "No space left on device", "/x")),
        (Reason.OUTPUT_READ_ONLY, OSError(errno.EROFS, "Read-only file system")),
        (Reason.OUTPUT_READ_ONLY, OSError("Read-only file system (os error 30): out/x.parquet.tmp")),  # polars'
        (Reason.OUTPUT_READ_ONLY, polars.exceptions.ComputeError(  # a Parquet part written as the output turns
            "parquet: File out of specification: underlying IO error: Read-only file system (os error 30)")),
        (Reason.DISK_FULL, polars.exceptions.ComputeError("IO error: No space left on device (os error 28)")),
        (Reason.TOO_MANY_OPEN_FILES, OSError(errno.EMFILE, "Too many open files")),
        (Reason.LEDGER_CORRUPT, sqlite3.DatabaseError("database disk image is malformed")),
        (Reason.PREFECT_UNAVAILABLE, chained(httpx.ConnectError("refused"))),
    ]
    for reason, exc in cases:
        assert faults.fault_of(exc).reason is reason, exc
    assert faults.fault_of(ValueError("a bug")) is None


def test_a_ledger_that_refuses_a_shards_key_claims_stops_the_shard_as_a_full_disk_does():
    """A worker's key claims meet SQLite's full or read-only ledger: the shard stops and returns what it
    wrote, as at ENOSPC (flows/core/shard.py), instead of raising out of the pool."""
    import errno

    from audit.ledger import LedgerError, sqlite_reason
    from flows import faults

    def wrapped(inner: sqlite3.Error) -> BaseException:
        """The ledger's own error for a SQLite one, as the ledger raises it (its reason read from SQLite's words)."""
        try:
            try:
                raise inner
            except sqlite3.Error as exc:
                raise LedgerError(sqlite_reason(exc), "ledger cannot be used") from None
        except LedgerError as outer:
            return outer

    assert faults.stops_writes(sqlite3.OperationalError("database or disk is full"))[0] == errno.ENOSPC
    assert faults.stops_writes(sqlite3.OperationalError("attempt to write a readonly database"))[0] == errno.EROFS
    assert faults.stops_writes(wrapped(sqlite3.OperationalError("database or disk is full")))[0] == errno.ENOSPC
    assert faults.stops_writes(sqlite3.OperationalError("database disk image is malformed")) is None
    assert faults.stops_writes(ValueError("a bug")) is None
