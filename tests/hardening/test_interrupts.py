"""Issue 12: Ctrl-C and SIGTERM stop a run within seconds, record what was written, mark the run
interrupted, print one line, and leave no process behind (workers, the embedded Prefect server)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.ledger import Ledger
from models.status import RunStatus
from tests.helpers import ROOT

CLI = "import sys; from flows.cli.app import app; sys.argv[0] = 'reconstruct'; app()"


def _archive(root: Path, n: int = 400) -> Path:
    src = root / "archive"
    for i in range(n):
        folder = src / f"part{i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = "".join(f"[2025-01-{1 + i % 28:02d} 10:{j % 60:02d}:00] {'User' if j % 2 else 'Assistant'}: "
                        f"turn {j} of chat {i} " + "words " * 40 + "\n" for j in range(200))
        (folder / f"chat-{i:04d}.txt").write_text(f"Session: chat-{i:04d}\n{lines}")
    return src


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.parametrize("signum, group", [(signal.SIGINT, True), (signal.SIGINT, False), (signal.SIGTERM, False)],
                         ids=["ctrl-c-at-a-terminal", "sigint", "sigterm"])
def test_a_signal_stops_the_run_cleanly(signum, group, tmp_path):
    """``group``: the signal goes to the whole process group, as a terminal's Ctrl-C does."""
    src, out = _archive(tmp_path), tmp_path / "out"
    env = {**os.environ, "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    proc = subprocess.Popen([sys.executable, "-c", CLI, "run", str(src), "--out", str(out), "--workers", "2"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and len(list((out / "sessions").rglob("*.json"))) < 40:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    kids = _descendants(proc.pid)
    if group:
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    try:  # a hang guard, not a speed test: how fast it stops depends on the machine's load
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr, stderr
    time.sleep(1)
    assert [k for k in kids if _alive(k)] == []
    ledger = Ledger(out / "ledger.sqlite")
    try:
        run = ledger.runs.recent(1)[0]
        recorded = {r[0] for r in ledger.db.execute("SELECT output_path FROM sessions WHERE run_id=?",
                                                    (run.run_id,))}
    finally:
        ledger.close()
    assert run.status is RunStatus.INTERRUPTED
    written = {str(p.relative_to(out)) for p in (out / "sessions").rglob("*.json")}
    assert 40 <= len(written) < 400 and written == recorded
