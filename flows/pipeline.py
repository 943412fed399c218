"""The Prefect flow: one flow run per archive run, one task per shard of files.

A Prefect task costs tens of milliseconds, a session must cost microseconds: inputs are grouped
into shards (by bytes and file count, in key order, so the grouping is deterministic) and each
shard is one task run. Locally the tasks are Prefect task runs on a thread pool whose bodies hand
the CPU work to one process pool per flow run (forkserver workers preloaded with the core, so a
worker starts in milliseconds instead of re-importing Prefect as ProcessPoolTaskRunner's workers
do); on Dask the task body runs on the Dask worker itself. Transient I/O errors fail the shard
task, which Prefect retries; everything else is quarantined inside it.
"""

from __future__ import annotations

import math
import os
import socket
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from models.settings import PIPELINE_VERSION, Settings

from . import alerts, artifacts, emit, ingest, pool
from .ledger import Ledger, ledger_path_for
from .shard import ShardResult, run_shard


def plan_shards(refs: list[ingest.InputRef], settings: Settings) -> list[list[ingest.InputRef]]:
    """Contiguous groups of inputs in key order, at most shard_bytes / shard_files each, and at
    least as many shards as workers when there are enough files to keep every worker busy."""
    if not refs:
        return []
    total = sum(r.size for r in refs)
    target = min(settings.shard_bytes, max(1, math.ceil(total / settings.workers)))
    per_files = min(settings.shard_files, max(1, math.ceil(len(refs) / settings.workers)))
    shards: list[list[ingest.InputRef]] = [[]]
    size = 0
    for ref in refs:
        if shards[-1] and (size + ref.size > target or len(shards[-1]) >= per_files):
            shards.append([])
            size = 0
        shards[-1].append(ref)
        size += ref.size
    return shards


@task(name="reconstruct-shard", retries=2, retry_delay_seconds=1, persist_result=False, cache_policy=NO_CACHE)
def process_shard(refs: list[ingest.InputRef], out_root: str, settings: Settings,
                  companions: dict[str, ingest.InputRef], ledger_path: str, force: bool,
                  allow_shrink: bool = False) -> ShardResult:
    result, where = pool.dispatch(refs, Path(out_root), settings, companions=companions,
                                  ledger_path=Path(ledger_path), force=force, allow_shrink=allow_shrink)
    get_run_logger().debug("shard of %d inputs ran on %s", len(refs), where)
    return result


def task_runner(settings: Settings):
    """The runner for the shard tasks: Dask when an address is set, else threads that feed the
    flow run's local process pool (see ``local_pool``)."""
    if settings.dask_address:
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=settings.dask_address)
    return ThreadPoolTaskRunner(max_workers=settings.workers)


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid4().hex[:6]}"


def reconstruct(paths: list[Path], out_root: Path, settings: Settings, *, force: bool = False,
                run_id: str | None = None, runner=None, progress=None, allow_shrink: bool = False) -> dict[str, Any]:
    """Run the archive through the shards and record it in the ledger; returns the run summary.

    Called inside the Prefect flow below; ``runner`` submits shards (a Prefect task runner's
    submit, or None to run them in this process, as the benchmark's core measurement does).
    """
    started = time.perf_counter()
    run_id = run_id or new_run_id()
    out_root.mkdir(parents=True, exist_ok=True)
    cleaned = emit.clean_temporaries(out_root)
    lpath = ledger_path_for(out_root, settings)
    ledger = Ledger(lpath)
    try:
        ledger.mark_interrupted()
        ledger.start_run(run_id, f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}",
                         {"paths": [str(p) for p in paths], "out": str(out_root), "force": force,
                          "allow_shrink": allow_shrink, "pid": os.getpid(), "host": socket.gethostname()},
                         settings.fingerprint(), PIPELINE_VERSION)
        refs = ingest.discover(paths, settings)
        companions = {r.key: r for r in refs if r.companion}
        shards = plan_shards(refs, settings)
        if progress:
            progress(0, len(refs))
        results = runner(shards, companions, str(lpath)) if runner else (
            run_shard(s, out_root, settings, companions=companions, ledger_path=lpath, force=force,
                      allow_shrink=allow_shrink) for s in shards
        )
        done = 0
        written = 0
        for result in results:
            ledger.record(run_id, settings.fingerprint(), result.files, result.sessions)
            ledger.add_revisions(result.revisions, run_id)  # the index's one writer: this process
            done += len(result.files)
            written += result.written
            if progress:
                progress(done, len(refs))
        from .datasets import write as write_datasets
        from .revisions import write_index

        write_index(out_root, ledger)
        write_datasets(out_root, ledger=ledger)
        seconds = time.perf_counter() - started
        counts = ledger.finish_run(run_id, f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}", "completed", seconds)
        quarantined = ledger.quarantined(run_id)
    except BaseException:
        ledger.finish_run(run_id, f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}", "crashed",
                          time.perf_counter() - started)
        raise
    finally:
        ledger.close()
    return {"run_id": run_id, "counts": counts, "quarantined": quarantined, "seconds": seconds,
            "shards": len(shards), "written": written, "temporaries_removed": cleaned, "ledger": str(lpath)}


@flow(name="reconstruct-archive", log_prints=False, validate_parameters=False)
def reconstruct_archive(paths: list[str], out: str, settings: Settings | dict[str, Any] | None = None,
                        force: bool = False, show_progress: bool = False,
                        allow_shrink: bool = False) -> dict[str, Any]:
    """Reconstruct every session of an archive into ``out`` (see README: Output layout).

    Run it with ``run_archive`` (which picks the task runner from the settings) or, for a
    deployment, ``reconstruct_archive.with_options(task_runner=task_runner(settings))``.
    """
    logger = get_run_logger()
    out_root = Path(out)
    if not isinstance(settings, Settings):  # a deployment passes the settings as a plain mapping
        settings = Settings(**(settings or {}))

    def submit(shards, companions, ledger_path):
        futures = [process_shard.submit(s, str(out_root), settings, companions, ledger_path, force, allow_shrink)
                   for s in shards]
        for i, fut in enumerate(futures, 1):
            result = fut.result()
            logger.info("shard %d/%d done: %d files, %d sessions", i, len(futures),
                        len(result.files), len(result.sessions))
            yield result

    run_id = new_run_id()
    artifacts.name_flow_run(paths, run_id)
    try:
        with progress_bar(show_progress) as progress, pool.local_pool(settings):
            summary = reconstruct([Path(p) for p in paths], out_root, settings, force=force, run_id=run_id,
                                  runner=submit, progress=progress, allow_shrink=allow_shrink)
    except BaseException as exc:
        alerts.emit_run_event(alerts.outcome_of(exc), run_id, artifacts.archive_name(paths), out,
                              alerts.ledger_counts(ledger_path_for(out_root, settings), run_id), repr(exc))
        raise
    c = summary["counts"]
    logger.info("run %s: %d files (%d skipped, %d quarantined); sessions ok %d, partial %d, quarantined %d",
                summary["run_id"], c["files"], c["files_skipped"], c["files_quarantined"],
                c["sessions_ok"], c["sessions_partial"], c["sessions_quarantined"])
    artifacts.publish(summary)
    if alerts.needs_attention(c):
        alerts.emit_run_event("quarantined", run_id, artifacts.archive_name(paths), out, c)
    return summary


class progress_bar:
    """A rich progress bar over input files (a no-op when not shown)."""

    def __init__(self, show: bool) -> None:
        self.show = show
        self._bar = None
        self._task = None

    def __enter__(self):
        if not self.show:
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(TextColumn("files"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self._bar.__enter__()
        self._task = self._bar.add_task("files", total=None)
        return self.update

    def update(self, done: int, total: int) -> None:
        self._bar.update(self._task, completed=done, total=total)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)


def run_archive(paths: list[Path], out: Path, settings: Settings, *, force: bool = False,
                show_progress: bool = False, allow_shrink: bool = False) -> dict[str, Any]:
    """Run the flow with the task runner the settings ask for."""
    configured = reconstruct_archive.with_options(task_runner=task_runner(settings))
    return configured([str(p) for p in paths], str(out), settings, force, show_progress, allow_shrink)
