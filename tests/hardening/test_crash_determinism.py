"""Crash safety (SIGKILL mid-run, then a rerun) and determinism across hash seeds, shard plans and order."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from audit.ledger import Ledger
from tests.helpers import ROOT

RUN = textwrap.dedent("""
    import sys
    from pathlib import Path
    from flows.pipeline import reconstruct
    from models.settings import Settings
    out, workers, shard_files, *paths = sys.argv[1:]
    reconstruct([Path(p) for p in paths], Path(out), Settings(workers=int(workers), shard_files=int(shard_files)))
""")


def _archive(root: Path, n: int = 300) -> Path:
    src = root / "archive"
    for i in range(n):
        folder = src / f"part{i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = "".join(f"[2025-01-{1 + i % 28:02d} 10:{j:02d}:00] {'User' if j % 2 else 'Assistant'}: turn {j} of "
                        f"chat {i} " + "words " * 40 + "\n" for j in range(40))
        (folder / f"chat-{i:04d}.txt").write_text(f"Session: chat-{i:04d}\n{lines}")
    return src


def _run(out: Path, paths: list[Path], *, workers=2, shard_files=10, seed="0", wait=True):
    env = {**os.environ, "PYTHONHASHSEED": seed}
    cmd = [sys.executable, "-c", RUN, str(out), str(workers), str(shard_files), *map(str, paths)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
    if wait:
        assert proc.wait(timeout=600) == 0
    return proc


def _docs(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "sessions").rglob("*.json"))}


def _final_state(out: Path) -> dict[str, tuple]:
    """Per source: the status and output of its latest processing (skips point back to earlier runs)."""
    ledger = Ledger(out / "ledger.sqlite")
    try:
        rows = ledger.db.execute(
            "SELECT s.source_key, s.ordinal, s.status, s.output_path, s.output_sha256 FROM sessions s "
            "JOIN runs r ON r.run_id = s.run_id ORDER BY r.started_at, r.rowid").fetchall()
    finally:
        ledger.close()
    return {(k, o): (st, p, h) for k, o, st, p, h in rows}


def test_sigkill_mid_run_then_rerun_equals_an_uninterrupted_run(tmp_path):
    src = _archive(tmp_path)
    clean = tmp_path / "clean"
    _run(clean, [src])
    crashed = tmp_path / "crashed"
    proc = _run(crashed, [src], wait=False)
    deadline = time.time() + 120
    while time.time() < deadline and len(list((crashed / "sessions").rglob("*.json"))) < 60:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(_docs(crashed)) < len(_docs(clean)), "the run finished before it could be killed"
    _run(crashed, [src])
    assert _docs(crashed) == _docs(clean)
    assert _final_state(crashed) == _final_state(clean)
    assert not [p for p in crashed.rglob("*.tmp")]
    ledger = Ledger(crashed / "ledger.sqlite")
    try:
        statuses = [r.status for r in ledger.runs.recent()]
    finally:
        ledger.close()
    assert sorted(statuses) == ["completed", "interrupted"]


def test_documents_do_not_depend_on_hash_seed_shard_plan_or_path_order(tmp_path):
    src = _archive(tmp_path, 60)
    parts = sorted(src.iterdir())
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, parts, workers=1, shard_files=2000, seed="1")
    _run(b, list(reversed(parts)), workers=2, shard_files=7, seed="2")
    assert _docs(a) == _docs(b) and len(_docs(a)) == 60
