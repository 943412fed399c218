"""What one measurement runs, in a child process of its own: the pipeline three ways, and the peers.

Each function takes the data path and an output folder and returns a JSON-able dict with ``seconds``
(the floors in ``bench/floors.py`` follow the same shape).
"""

from __future__ import annotations

import sqlite3
import time
from concurrent.futures import as_completed
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from bench.floors import FLOORS

if TYPE_CHECKING:
    from flows.summary import RunSummary


def _interactions(ledger: str, run_id: str) -> int:
    """Turns written by this run (ok and partial sessions), read from the run's ledger."""
    with sqlite3.connect(ledger) as db:
        return db.execute("SELECT COALESCE(SUM(interactions), 0) FROM sessions WHERE run_id=? "
                          "AND status IN ('ok', 'partial')", (run_id,)).fetchone()[0]


def _result(summary: RunSummary, seconds: float, **extra) -> dict:
    counts = dict(asdict(summary.counts), interactions=_interactions(summary.ledger, summary.run_id))
    return {"seconds": seconds, "counts": counts, "shards": summary.shards, **extra}


def core(data: str, out: str) -> dict:
    """The core without Prefect: reconstruct(..., runner=None), every shard in this process."""
    from flows.pipeline import reconstruct
    from models.settings import Settings

    t0 = time.perf_counter()
    summary = reconstruct([Path(data)], Path(out), Settings(), runner=None)
    return _result(summary, time.perf_counter() - t0)


def core_pool(data: str, out: str) -> dict:
    """The core on the same local process pool the flow uses, without Prefect: the fair baseline
    for Prefect's overhead when an archive has more shards than one."""
    from flows import pool
    from flows.core.shard import run_shard
    from flows.pipeline import reconstruct
    from models.settings import Settings

    settings = Settings()
    with pool.local_pool(settings) as executor:
        def runner(shards, companions, ledger_path):
            futures = [executor.pool.submit(run_shard, s, Path(out), settings, companions=companions,
                                       ledger_path=Path(ledger_path)) for s in shards]
            for f in as_completed(futures):  # each recorded as soon as it is done, as the flow does
                yield f.result()

        t0 = time.perf_counter()
        summary = reconstruct([Path(data)], Path(out), settings, runner=runner if executor else None)
        seconds = time.perf_counter() - t0
    return _result(summary, seconds)


def shard(data: str, out: str) -> dict:
    """The core's shard alone (read, process, write documents and revision blobs), without the
    ledger and the datasets pass that ``core`` adds: the datasets read every document back whole."""
    from flows.core import ingest
    from flows.core.shard import run_shard
    from models.settings import Settings

    settings = Settings()
    t0 = time.perf_counter()
    refs = ingest.discover([Path(data)], settings)
    result = run_shard(refs, Path(out), settings)
    seconds = time.perf_counter() - t0
    ok = sum(s.status.value == "ok" for s in result.sessions)
    partial = sum(s.status.value == "partial" for s in result.sessions)
    return {"seconds": seconds, "shards": 1,
            "counts": {"sessions_ok": ok, "sessions_partial": partial, "files": len(refs), "files_skipped": 0,
                       "interactions": sum(s.interactions for s in result.sessions)}}


def _start_prefect():
    """Start Prefect's embedded server as ``reconstruct run`` does (launched, the flow imported while
    it starts, then waited for) and run an empty flow on it; returns the seconds it took (creating
    its database too, on a fresh machine) and the server (None when one is configured)."""
    from flows.cli.app import prefect_env
    from flows.serve import start_embedded, use_embedded, without_heartbeats

    prefect_env()
    t0 = time.perf_counter()
    server = start_embedded()
    from prefect import flow as prefect_flow

    from flows.pipeline import preload  # the flow's imports and preload, as in a real run, while the server starts

    preload()

    use_embedded(server)

    @prefect_flow
    def warm_up() -> int:
        return 1

    with without_heartbeats(server):
        warm_up()
    return time.perf_counter() - t0, server


def flow(data: str, out: str) -> dict:
    """The real flow on the embedded server, as ``reconstruct run`` runs it; the server's start (a
    warm-up flow) is timed apart. Run again on the same output, it is the unchanged rerun: every
    input skipped."""
    from flows.serve import without_heartbeats

    server_start, server = _start_prefect()
    from flows.pipeline import run_archive
    from models.settings import Settings

    with without_heartbeats(server):
        t0 = time.perf_counter()
        summary = run_archive([Path(data)], Path(out), Settings())
        seconds = time.perf_counter() - t0
    return _result(summary, seconds, server_start=server_start)


def prefect_idle(data: str, out: str) -> dict:
    """Prefect with its server started and nothing to do: the part of every flow's RSS that is not ours."""
    seconds, _ = _start_prefect()
    time.sleep(0.5)  # let the RSS sampler see the settled process tree
    return {"seconds": seconds}


CHILDREN = {"core": core, "core_pool": core_pool, "shard": shard, "flow": flow, "rerun": flow,
            "prefect_idle": prefect_idle, **{f"floor:{name}": fn for name, fn in FLOORS.items()}}
