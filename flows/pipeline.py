"""The Prefect flow: one flow run per archive run, one task per shard of files.

A Prefect task costs tens of milliseconds, a session must cost microseconds: inputs are grouped
into shards (by bytes and file count, in key order, so the grouping is deterministic) and each
shard is one task run. Locally the tasks are Prefect task runs on a thread pool whose bodies hand
the CPU work to one process pool per flow run (forkserver workers preloaded with the core, so a
worker starts in milliseconds instead of re-importing Prefect as ProcessPoolTaskRunner's workers
do). Transient I/O errors fail the shard task, which Prefect retries; everything else is quarantined inside it.

With a Dask address the shards are not Prefect tasks: they go to the cluster as plain Dask tasks of
the Prefect-free core (flows/cluster.py), so a worker never calls a Prefect API.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

import polars as pl
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from audit import datasets, publication, revisions
from audit.ledger import FileRow, Ledger, LedgerError, ledger_path_for
from models.settings import PIPELINE_VERSION, Settings
from models.status import DocumentMark, FileStatus, RunCounts, RunOutcome, RunStatus
from normalizers.ids import safe_path_part
from parsers import registry

from . import alerts, artifacts, cluster, faults, pool
from .core import emit, ingest, snapshots, unchanged
from .core.merge import merge_keys
from .core.shard import ShardResult, run_shard
from .summary import RunSummary

INPUT_COST = 16 * 1024
"""What a shard spends on one input beside its bytes, in bytes' worth: about 1.7 ms a small file against
0.1 s a MB of a large one (bench/RESULTS.md), so shards of many small files and of a few large ones are
cut to take about as long."""


def plan_shards(refs: list[ingest.InputRef], settings: Settings) -> list[list[ingest.InputRef]]:
    """Contiguous groups of inputs in key order, at most shard_bytes / shard_files each (a larger input
    alone). As many as those limits need, rounded up to a multiple of the workers, cut where their cost
    (bytes and ``INPUT_COST`` an input) is even: a wave of shards keeps every worker busy to its end,
    instead of one worker reading a full shard while the other reads the remainder."""
    if not refs:
        return []
    needed = max(math.ceil(sum(r.size for r in refs) / settings.shard_bytes),
                 math.ceil(len(refs) / settings.shard_files), 1)
    count = min(len(refs), math.ceil(needed / settings.workers) * settings.workers)
    left = sum(r.size + INPUT_COST for r in refs)
    even: list[list[ingest.InputRef]] = [[]]
    cost = 0
    for ref in refs:
        more = ref.size + INPUT_COST
        if even[-1] and len(even) < count and cost + more / 2 > left / (count - len(even) + 1):
            even.append([])  # this group is its even share of what is left: the next one starts
            left -= cost
            cost = 0
        even[-1].append(ref)
        cost += more
    return [shard for group in even for shard in _within_limits(group, settings)]


def _within_limits(refs: list[ingest.InputRef], settings: Settings) -> list[list[ingest.InputRef]]:
    """``refs`` cut, in order, into groups of at most shard_bytes and shard_files (a larger input alone)."""
    shards: list[list[ingest.InputRef]] = [[]]
    size = 0
    for ref in refs:
        if shards[-1] and (size + ref.size > settings.shard_bytes or len(shards[-1]) >= settings.shard_files):
            shards.append([])
            size = 0
        shards[-1].append(ref)
        size += ref.size
    return shards


def only_transient(task, task_run, state) -> bool:
    """Prefect's retry condition: retry a shard only for an error marked transient (an I/O
    hiccup); anything else would fail again the same way."""
    exc = state.data if isinstance(state.data, BaseException) else None
    if exc is None:
        try:
            exc = state.result(raise_on_failure=False)
        except Exception:  # the result cannot be read: do not retry blindly
            return False
    return bool(getattr(exc, "transient", False))


class Opaque:
    """A task argument Prefect passes as it is: Prefect walks every list, dict and dataclass given to
    a task (looking for futures to wait on), about a second per task for a shard's thousands of input
    records, which hold none."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


@task(name="reconstruct-shard", retries=0, retry_delay_seconds=1, retry_condition_fn=only_transient,
      persist_result=False, cache_policy=NO_CACHE)
def process_shard(refs: Opaque, out_root: str, settings: Settings, companions: Opaque, ledger_path: str,
                  force: bool, allow_shrink: bool = False, run_id: str | None = None) -> ShardResult:
    """One shard (``refs``: its list of InputRef; ``companions``: the run's, by key)."""
    result, where = pool.dispatch(refs.value, Path(out_root), settings, companions=companions.value,
                                  ledger_path=Path(ledger_path), force=force, allow_shrink=allow_shrink,
                                  run_id=run_id)
    get_run_logger().debug("shard of %d inputs ran on %s", len(refs.value), where)
    return result


@task(name="reconstruct-merge", retries=0, retry_delay_seconds=1, retry_condition_fn=only_transient,
      persist_result=False, cache_policy=NO_CACHE)
def process_merge(keys: Opaque, out_root: str, settings: Settings, ledger_path: str, run_id: str,
                  allow_shrink: bool = False) -> ShardResult:
    """One group of deferred session keys merged (flows/core/merge.py), on the same pool as the shards."""
    result, where = pool.dispatch(keys.value, Path(out_root), settings, fn=merge_keys, ledger_path=Path(ledger_path),
                                  run_id=run_id, allow_shrink=allow_shrink)
    get_run_logger().debug("merge of %d session keys ran on %s", len(keys.value), where)
    return result


def plan_merges(keys: list[str], settings: Settings) -> list[list[str]]:
    """The deferred keys in key order, in at least as many groups as workers (at most 500 keys each)."""
    keys = sorted(set(keys))
    if not keys:
        return []
    size = min(KEYS_PER_MERGE, max(1, math.ceil(len(keys) / settings.workers)))
    return [keys[i:i + size] for i in range(0, len(keys), size)]


KEYS_PER_MERGE = 500


def shard_task(settings: Settings):
    """The shard task with the run's retry count (``task_retries``), transient errors only."""
    return process_shard.with_options(retries=settings.task_retries, retry_condition_fn=only_transient)


def task_runner(settings: Settings):
    """The runner for the shard tasks: threads that feed the flow run's local process pool (see
    ``local_pool``). With a Dask address the shards go to Dask without it (flows/cluster.py)."""
    return ThreadPoolTaskRunner(max_workers=settings.workers)


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid4().hex[:6]}"


def reconstruct(paths: list[ingest.Root], out_root: Path, settings: Settings, *, force: bool = False,
                run_id: str | None = None, runner=None, progress=None, allow_shrink: bool = False,
                keys: list[str] | None = None, merger=None) -> RunSummary:
    """Run the archive through the shards and record it in the ledger; returns the run summary.

    Called inside the Prefect flow below; ``runner`` submits shards (a Prefect task runner's
    submit, or None to run them in this process, as the benchmark's core measurement does).
    ``keys`` limits the run to these source keys (a rerun: the same roots, so the same keys);
    a key no longer found is recorded ``missing``. ``merger`` submits the groups of deferred session
    keys after the shards (None: merged in this process).
    """
    started = time.perf_counter()
    run_id = run_id or new_run_id()
    paths = [ingest.as_root(p) for p in paths]
    out_root = Path(os.path.abspath(out_root))
    out_root.mkdir(parents=True, exist_ok=True)
    emit.clear_stop(out_root)
    lpath = ledger_path_for(out_root, settings)
    ledger = Ledger(lpath)
    try:
        ledger.check()
        ledger.hold_reserve()
        _end_runs_left_running(ledger)
        cleaned = _clean_after_unfinished(out_root, ledger)
        before = publication.stamp(ledger)  # what the published tables must hold for a run that changes nothing
        ledger.runs.start(run_id, _now(),
                         {"paths": [str(p) for p in paths], "out": str(out_root), "force": force,
                          "allow_shrink": allow_shrink, "pid": os.getpid(), "host": socket.gethostname(),
                          "prefect_flow_run_id": flow_run.get_id(),
                          **({"keys": keys} if keys is not None else {})},
                         settings.fingerprint(), PIPELINE_VERSION)
    except BaseException:
        ledger.close()
        raise
    pending: ShardResult | None = None
    flight = InFlight()
    try:
        refs = ingest.discover(paths, settings, exclude=(out_root,))
        companions = {r.key: r for r in refs if r.companion}
        if keys is not None:
            refs = _only(refs, keys, run_id, settings, ledger)
        else:
            _record_missing(paths, refs, run_id, settings, ledger)
        files = sum(len(r.parts) or 1 for r in refs)  # a conversation over several files counts each file
        refs, done = _skip_unchanged(refs, run_id, settings, ledger, companions, force)
        shards = plan_shards(refs, settings)
        if progress:
            progress(done, files)
        results = flight.follow(runner(shards, companions, str(lpath)) if runner else flight.here(
            shards, lambda s: run_shard(s, out_root, settings, companions=companions, ledger_path=lpath, force=force,
                                        allow_shrink=allow_shrink, run_id=run_id)))
        written = 0
        deferred: list[str] = []
        prints: list = []
        for result in results:
            pending = result  # recorded again at a fault when recording it is what failed
            _record(result, out_root, run_id, settings, ledger)
            pending = None
            _stop_if_full(result)
            deferred.extend(result.deferred)
            prints.extend(result.prints)
            written += result.written
            done += result.release()
            if progress:
                progress(done, files)
        found = snapshots.resolve(prints, ledger, settings.snapshot_time_tolerance_seconds)  # on proof only
        deferred.extend([*found.merge, *found.linked])  # a possible link is written into both documents
        written += _merge_phase(deferred, out_root, run_id, settings, ledger, lpath, merger, allow_shrink, flight)
        pool.release_workers()  # the rest runs here: idle workers would hold their last shard's memory
        revisions.refresh_index(out_root, ledger)
        interrupted = emit.stop_requested(out_root)
        seconds = time.perf_counter() - started
        ending = RunStatus.INTERRUPTED if interrupted else RunStatus.COMPLETED
        counts = ledger.runs.finish(run_id, _now(), ending, seconds)
        quarantined = ledger.quarantine.of_run(run_id)
        published, unpublished = _publish(out_root, run_id, ledger, before if _changed_nothing(counts) else None)
    except BaseException as exc:
        _end_unfinished(exc, Ending(ledger, out_root, run_id, settings, started), pending, flight)
        raise
    finally:
        emit.clear_stop(out_root)
        ledger.close()
    return RunSummary(run_id, ending, counts, quarantined, seconds, len(shards), written, cleaned, str(lpath),
                      unpublished, published)


def _skip_unchanged(refs: list[ingest.InputRef], run_id: str, settings: Settings, ledger: Ledger,
                    companions: dict[str, ingest.InputRef], force: bool) -> tuple[list[ingest.InputRef], int]:
    """Record the inputs an earlier run proves unchanged (flows/core/unchanged.py) as skipped, before any
    shard is planned; returns the inputs left for the shards and the files recorded."""
    if force:
        return refs, 0
    proof = unchanged.prove(refs, settings, ledger, companions)
    ledger.inputs.record(run_id, settings.fingerprint(), proof.rows, [])
    return proof.rest, len(proof.rows)


def _changed_nothing(counts: RunCounts) -> bool:
    """Whether a run recorded only skipped or noted inputs: no session, no failure, no input gone."""
    noted = counts.files_skipped + counts.files_companion + counts.files_ignored
    return counts.files == noted and not (counts.files_failed or counts.sessions_ok or counts.sessions_partial
                                          or counts.sessions_quarantined)


def _publish(out_root: Path, run_id: str, ledger: Ledger,
             before: dict | None) -> tuple[publication.Published, str | None]:
    """Publish the current tables an auditor queries (audit/publication.py): only the runs table when the
    run changed nothing else (``before``: the ledger's stamp when it started, None when it changed
    something). When they cannot be written, the reason is recorded in the ledger (meta
    ``datasets_unpublished:<run>``) and returned: the run's documents stand, and readers build the
    tables from the ledger (the published stamp is stale)."""
    try:
        if before is not None and publication.publish_run(out_root, ledger, before) is not None:
            return publication.Published.RUN_ONLY, None
        publication.publish(out_root, ledger)
    except (OSError, pl.exceptions.PolarsError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
        ledger.meta.set(f"datasets_unpublished:{run_id}", reason)
        return publication.Published.UNPUBLISHED, reason
    return publication.Published.REWRITTEN, None


def _record(result: ShardResult, out_root: Path, run_id: str, settings: Settings, ledger: Ledger) -> None:
    """Record a shard's (or a merge group's) rows in the ledger, then its dataset part."""
    _record_rows(result, out_root, run_id, settings, ledger)
    _record_parts(result, out_root, run_id)


def _record_rows(result: ShardResult, out_root: Path, run_id: str, settings: Settings, ledger: Ledger) -> None:
    """A shard's rows in the ledger: its inputs, sessions, revisions, snapshots and reconciliation."""
    ledger.inputs.record(run_id, settings.fingerprint(), result.files, result.sessions)
    ledger.revisions.add(result.revisions, run_id)  # the index's one writer: this process
    ledger.snapshots.add(result.snapshots, run_id)
    ledger.snapshots.reconcile(run_id, result.reconciliation)
    _mark_superseded(result, run_id, ledger, out_root)


def _record_parts(result: ShardResult, out_root: Path, run_id: str) -> None:
    """A shard's dataset part, after its rows are in the ledger (a part's rows are always known to it)."""
    datasets.adopt(out_root, run_id, result.staged)  # turns before sessions: a crash between re-reads


def _stop_if_full(result: ShardResult) -> None:
    """After its rows are recorded: a shard that met a full or read-only disk stops the run."""
    if result.stopped:
        raise OSError(result.stopped[0], result.stopped[1])


def _merge_phase(deferred: list[str], out_root: Path, run_id: str, settings: Settings, ledger: Ledger,
                 lpath: Path, merger, allow_shrink: bool, flight: InFlight) -> int:
    """Merge the keys the shards deferred (flows/core/merge.py), in groups; returns the documents written.
    Skipped when the run is asked to stop: the snapshots are indexed, the next run merges them."""
    resolved = ledger.aliases.of(deferred)  # a key resolved to another is merged as that one
    groups = plan_merges([resolved.get(k, k) for k in deferred], settings)
    if not groups or emit.stop_requested(out_root):
        return 0
    results = flight.follow(merger(groups, str(lpath)) if merger else flight.here(
        groups, lambda g: merge_keys(g, out_root, settings, ledger_path=lpath, run_id=run_id,
                                     allow_shrink=allow_shrink)))
    written = 0
    for result in results:
        _record(result, out_root, run_id, settings, ledger)
        _stop_if_full(result)
        written += result.written
        result.release()
    return written


def _clean_after_unfinished(out_root: Path, ledger: Ledger) -> int:
    """Remove the temporaries a killed or failed run left behind. A completed run leaves none (each
    shard committed or abandoned its batch), so after one the output, as large as the archive, is
    not walked."""
    last = ledger.runs.recent(1)
    if last and last[0].status is RunStatus.COMPLETED:
        return 0
    return emit.clean_temporaries(out_root)


class InFlight:
    """The results the run has asked for (shards, then merge groups) and not yet received. At a fault
    the run starts no more of them and waits for these before it stops the workers: each returns
    what it wrote, even when it met the fault too, so every document on disk is in the ledger."""

    def __init__(self) -> None:
        self.results: Iterator[ShardResult] = iter(())
        self.stopped = False

    def follow(self, results: Iterable[ShardResult]) -> Iterator[ShardResult]:
        """The results of the phase now running (the runner's, or ``here``'s)."""
        self.results = iter(results)
        return self.results

    def here(self, groups: list, run: Callable[[Any], ShardResult]) -> Iterator[ShardResult]:
        """Each group run in this process, in turn, until the run stops (nothing is then in flight)."""
        for group in groups:
            if self.stopped:
                return
            yield run(group)

    def drain(self) -> Iterator[ShardResult]:
        """Stop starting (here and in the pool: flows/pool.py) and yield the results still to come."""
        self.stopped = True
        pool.stop_starting()
        yield from self.results


@dataclass(frozen=True, slots=True)
class Ending:
    """What recording a run's end needs: its ledger, output, id, settings and start time."""

    ledger: Ledger
    out_root: Path
    run_id: str
    settings: Settings
    started: float


def _end_unfinished(exc: BaseException, end: Ending, pending: ShardResult | None, flight: InFlight) -> None:
    """Record how a run that raised ended. At a fault the shards in flight are waited for (no other
    starts), then the ledger's reserve is released (after the workers are done, else they would fill
    it) so that the rows of a shard whose recording failed and of those in flight, and the run's
    status, fit on a full disk; their dataset parts come last, where room is left. An interrupt or a
    bug stops the workers at once. A ledger that cannot take the status leaves the run ``running``;
    the end is then kept outside OUT for the next run to record (``_keep_end``), and the log says why."""
    status = ending_status(exc)
    landed: list[ShardResult] = []
    if status is RunStatus.FAILED:
        landed = _wait_for_flight(exc, flight)
        end.ledger.release_reserve()
        landed = _record_landed(exc, end, pending, landed)
    pool.stop_workers()
    seconds = time.perf_counter() - end.started
    try:
        end.ledger.runs.finish(end.run_id, _now(), status, seconds)
    except (sqlite3.Error, OSError) as failed:
        exc.add_note(f"{faults.UNRECORDED}: {type(failed).__name__}: {failed}")
        _keep_end(exc, end, status, seconds)
    for result in landed:
        _part_or_note(exc, result, end)


def _keep_end(exc: BaseException, end: Ending, status: RunStatus, seconds: float) -> None:
    """The run's end, which its ledger could not take, kept outside OUT (flows/faults.py) for the next
    run to record (``_end_runs_left_running``); where it is kept is noted on ``exc`` for the line."""
    fault = faults.fault_of(exc)
    why = faults.line_of(fault) if fault is not None else f"{type(exc).__name__}: {exc}"
    kept = faults.keep_end(faults.KeptEnd(os.path.abspath(end.ledger.path), end.run_id, str(status), _now(),
                                          round(seconds, 3), why))
    if kept is not None:
        exc.add_note(f"{faults.KEPT}{kept}")


def _end_runs_left_running(ledger: Ledger) -> None:
    """Runs left ``running`` whose process is gone: marked interrupted (``Ledger.mark_interrupted``),
    unless their end was kept outside OUT when the ledger could not take it (``_keep_end``: an output
    gone read-only); such a run gets that end, its status, time and counts, and why (meta
    ``ending:<run>``), and the kept file is removed. A kept end whose run is not left running (its
    process lives on, or the ledger does not know it) is left as it is."""
    kept = [(path, e) for path, e in faults.kept_ends(ledger.path)
            if _status(ledger, e.run_id) is RunStatus.RUNNING]
    ledger.runs.mark_interrupted()
    for path, e in kept:
        if _status(ledger, e.run_id) is not RunStatus.INTERRUPTED:
            continue
        ledger.runs.finish(e.run_id, e.finished_at, RunStatus(e.status), e.seconds)
        ledger.meta.set(f"ending:{e.run_id}", f"{e.status} at {e.finished_at}: {e.why} (the ledger could not "
                        f"take it then; kept in {path})")
        path.unlink(missing_ok=True)


def _status(ledger: Ledger, run_id: str) -> RunStatus | None:
    run = ledger.runs.get(run_id)
    return None if run is None else RunStatus(run.status)


def _wait_for_flight(exc: BaseException, flight: InFlight) -> list[ShardResult]:
    """The results of every shard still in flight at a fault (none starts any more): each returns what
    it wrote, also when it met the fault too."""
    landed: list[ShardResult] = []
    try:
        landed.extend(flight.drain())
    except Exception as failed:  # a shard in flight that raised: what else runs is stopped with the workers
        exc.add_note(f"{faults.IN_FLIGHT_UNRECORDED}: waiting for them: {type(failed).__name__}: {failed}")
    return landed


def _record_landed(exc: BaseException, end: Ending, pending: ShardResult | None,
                   landed: list[ShardResult]) -> list[ShardResult]:
    """The rows of ``pending`` (a shard whose recording failed), then of each shard that was in flight,
    until the ledger refuses a write (what it could not take is noted on ``exc``, and the command's
    line says so); returns the results recorded."""
    if pending is not None and not _recorded(exc, lambda: _record_pending(pending, end)):
        return []
    for i, result in enumerate(landed):
        if not _recorded(exc, lambda r=result: _record_rows(r, end.out_root, end.run_id, end.settings, end.ledger)):
            return landed[:i]
    return landed


def _record_pending(pending: ShardResult, end: Ending) -> None:
    """The rows of a shard whose recording met the fault (its inputs, sessions and revisions again)."""
    end.ledger.inputs.record(end.run_id, end.settings.fingerprint(), pending.files, pending.sessions)
    end.ledger.revisions.add(pending.revisions, end.run_id)


def _recorded(exc: BaseException, write: Callable[[], Any]) -> bool:
    """Whether ``write`` got into the ledger (else why not is noted on ``exc``)."""
    try:
        write()
    except (sqlite3.Error, OSError) as failed:
        exc.add_note(f"{faults.IN_FLIGHT_UNRECORDED}: {type(failed).__name__}: {failed}")
        return False
    return True


def _part_or_note(exc: BaseException, result: ShardResult, end: Ending) -> None:
    """A shard's dataset part at a fault, when it fits (without it, the tables read its documents)."""
    try:
        _record_parts(result, end.out_root, end.run_id)
    except (OSError, pl.exceptions.PolarsError) as failed:
        exc.add_note(f"dataset part {result.part} not written: {type(failed).__name__}: {failed}")


def _now() -> str:
    return f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"


def ending_status(exc: BaseException) -> RunStatus:
    """How a run that raised ends in the ledger: interrupted (Ctrl-C, SIGTERM), failed (the
    system: a full disk, a read-only output) or crashed (a bug)."""
    if isinstance(exc, KeyboardInterrupt | SystemExit) or type(exc).__name__ in ("Abort", "TerminationSignal"):
        return RunStatus.INTERRUPTED
    return RunStatus.FAILED if faults.fault_of(exc) is not None else RunStatus.CRASHED


def _record_missing(paths: list[ingest.Root], refs: list[ingest.InputRef], run_id: str, settings: Settings,
                    ledger: Ledger) -> None:
    """Inputs an earlier run saw under these roots that are gone: recorded ``missing``, and their
    documents (kept: nothing is deleted without confirmation) marked ``source_missing``."""
    prefixes = ["/".join(safe_path_part(p) for p in parts) for parts in ingest.root_names(paths)]
    found = {r.key for r in refs} | {part.key for r in refs for part in r.parts}  # files of a grouped conversation
    gone = sorted(k for k, (status, _) in ledger.inputs.known().items()
                  if k not in found and status not in (FileStatus.MISSING, FileStatus.IGNORED)
                  and any(k == p or k.startswith(p + "/") for p in prefixes))
    _missing(gone, run_id, settings, ledger)


def _missing(gone: list[str], run_id: str, settings: Settings, ledger: Ledger) -> None:
    if not gone:
        return
    known = ledger.inputs.known()
    ledger.inputs.record(run_id, settings.fingerprint(), [
        FileRow(k, known[k][1] if k in known else k, None, 0, None, FileStatus.MISSING, [],
                "no longer under the run's paths; its documents stay, marked source_missing", 0, 0.0)
        for k in gone], [])
    ledger.revisions.mark(run_id, [(path, k, DocumentMark.SOURCE_MISSING, "the input is gone")
                                   for k in gone for path in sorted(ledger.inputs.previous_outputs(k, run_id))])


def _mark_superseded(result: ShardResult, run_id: str, ledger: Ledger, out_root: Path) -> None:
    """Documents an input produced before but not now (a conversation removed from an export); a
    document moved to its key's address is not one of them."""
    processed = {f.source_key for f in result.files
                 if f.status in (FileStatus.OK, FileStatus.PARTIAL) and not f.reasons}
    now: dict[str, set[str]] = {}
    for s in result.sessions:
        now.setdefault(s.source_key, set()).add(s.output_path)
    rows = []
    for key in sorted(processed):
        for path in sorted(ledger.inputs.previous_outputs(key, run_id) - now.get(key, set())):
            if not (out_root / path).is_file():
                continue
            rows.append((path, key, DocumentMark.SUPERSEDED, "the input no longer holds this session"))
    if rows:
        ledger.revisions.mark(run_id, rows)


def _only(refs: list[ingest.InputRef], keys: list[str], run_id: str, settings: Settings,
          ledger: Ledger) -> list[ingest.InputRef]:
    """The refs of these keys; a key no longer found is recorded missing (its documents stay)."""
    found, gone = ingest.select(refs, keys)
    _missing(gone, run_id, settings, ledger)
    return found


@contextmanager
def untagged():
    """Task runs submitted inside carry no tags (the flow run keeps its own). Prefect asks its API for
    tag-based concurrency slots before each tagged task run begins: a round trip per shard while its
    worker waits, up to 2 s on a loaded server, for limits this pipeline never sets."""
    from prefect.context import TagsContext

    with TagsContext(current_tags=set()):
        yield


def _prefect_runners(out_root: Path, settings: Settings, force: bool, allow_shrink: bool, run_id: str, logger):
    """Shards and merges as Prefect task runs on this flow run's task runner (the local pool)."""

    def submit(shards, companions, ledger_path):
        shard = shard_task(settings)
        shared = Opaque(companions)
        with untagged():
            futures = [shard.submit(Opaque(s), str(out_root), settings, shared, ledger_path, force, allow_shrink,
                                    run_id) for s in shards]
        for i, fut in enumerate(as_completed(futures), 1):  # each shard recorded as soon as it is done
            yield _logged(fut.result(), i, len(futures), logger)

    def merge(groups, ledger_path):
        task_ = process_merge.with_options(retries=settings.task_retries, retry_condition_fn=only_transient)
        with untagged():
            futures = [task_.submit(Opaque(g), str(out_root), settings, ledger_path, run_id, allow_shrink)
                       for g in groups]
        for fut in as_completed(futures):
            yield fut.result()

    return submit, merge


def _dask_runners(client, out_root: Path, settings: Settings, force: bool, allow_shrink: bool, run_id: str, logger):
    """Shards and merges as plain Dask tasks of the Prefect-free core (flows/cluster.py): a worker never
    needs this run's Prefect API."""

    def submit(shards, companions, ledger_path):
        results = cluster.shards(client, shards, out_root, settings, companions=companions,
                                 ledger_path=Path(ledger_path), force=force, allow_shrink=allow_shrink, run_id=run_id)
        for i, result in enumerate(results, 1):
            yield _logged(result, i, len(shards), logger)

    def merge(groups, ledger_path):
        yield from cluster.merges(client, groups, out_root, settings, ledger_path=Path(ledger_path), run_id=run_id,
                                  allow_shrink=allow_shrink)

    return submit, merge


def _logged(result: ShardResult, done: int, total: int, logger) -> ShardResult:
    logger.info("shard %d/%d done: %d files, %d sessions", done, total, len(result.files), len(result.sessions))
    return result


@flow(name="reconstruct-archive", log_prints=False, validate_parameters=False)
def reconstruct_archive(paths: list[str], out: str, settings: Settings | dict[str, Any] | None = None,
                        force: bool = False, show_progress: bool = False,
                        allow_shrink: bool = False, keys: list[str] | None = None,
                        run_id: str | None = None) -> RunSummary:
    """Reconstruct every session of an archive into ``out`` (see docs/output.md: Output layout).

    Run it with ``run_archive`` (which names the run as it is created) or as a deployment: either way
    ``settings.dask_address`` sends the shards to that Dask scheduler. Paths are made absolute here, on
    the driver, before anything is shipped; a path may be a URL (``s3://``, ``gcs://``, ``file://``:
    flows/core/ingest.py reads it through fsspec).
    """
    logger = get_run_logger()
    out_root = Path(os.path.abspath(out))  # resolved here, never on a worker with another directory
    roots = [ingest.as_root(p) for p in paths]
    if not isinstance(settings, Settings):  # a deployment passes the settings as a plain mapping
        settings = Settings(**(settings or {}))
    run_id = run_id or new_run_id()
    artifacts.name_flow_run(paths, run_id)
    try:
        with progress_bar(show_progress) as progress, pool.local_pool(settings), graceful_stop(out_root), \
                cluster.connected(settings.dask_address) as client:
            submit, merge = (_dask_runners(client, out_root, settings, force, allow_shrink, run_id, logger) if client
                             else _prefect_runners(out_root, settings, force, allow_shrink, run_id, logger))
            summary = reconstruct(roots, out_root, settings, force=force, run_id=run_id, runner=submit,
                                  progress=progress, allow_shrink=allow_shrink, keys=keys, merger=merge)
    except BaseException as exc:
        alerts.emit_run_event(alerts.outcome_of(exc), run_id, artifacts.archive_name(paths), out,
                              _alert_counts(exc, ledger_path_for(out_root, settings), run_id), repr(exc))
        raise
    c = summary.counts
    logger.info("run %s: %d files (%d skipped, %d quarantined); sessions ok %d, partial %d, quarantined %d",
                summary.run_id, c.files, c.files_skipped, c.files_quarantined,
                c.sessions_ok, c.sessions_partial, c.sessions_quarantined)
    artifacts.publish(summary)
    if c.quarantined_any:
        alerts.emit_run_event(RunOutcome.QUARANTINED, run_id, artifacts.archive_name(paths), out, c)
    return summary


def _alert_counts(exc: BaseException, lpath: Path, run_id: str) -> RunCounts | None:
    """The counts of a run that raised, for its alert; none when the ledger cannot be opened (the
    fault holds it too: an output gone read-only). Noted on ``exc``, which stays the run's error: its
    notes say whether the run's end was recorded."""
    try:
        return alerts.ledger_counts(lpath, run_id)
    except (LedgerError, sqlite3.Error, OSError) as failed:
        exc.add_note(f"the alert's counts could not be read: {type(failed).__name__}: {failed}")
        return None


@contextmanager
def graceful_stop(out_root: Path):
    """Ctrl-C or SIGTERM asks the run to stop after the inputs in progress (all recorded, the run
    marked interrupted); a second one stops at once (workers killed, the run marked interrupted).
    Installed by the CLI and again inside the flow, where Prefect puts its own SIGTERM handler."""
    asked = []

    def _stop(signum, frame):
        if asked or not out_root.is_dir():
            raise KeyboardInterrupt(f"signal {signum}")
        asked.append(signum)
        emit.request_stop(out_root)

    try:
        previous = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: signals stay as they are
        yield
        return
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


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


def preload() -> None:
    """Load what every run needs in this process, while Prefect's server starts (``reconstruct run`` calls
    it between launching the server and waiting for it): the grammar registry, which discovery asks for
    the companion file names, and the encoder Prefect serializes a flow run's parameters with (FastAPI's,
    imported by Prefect on the first flow run with parameters)."""
    import fastapi.encoders  # noqa: F401

    registry.all_grammars()


def run_archive(paths: list[Path], out: Path, settings: Settings, *, force: bool = False,
                show_progress: bool = False, allow_shrink: bool = False,
                keys: list[str] | None = None) -> RunSummary:
    """Run the flow with the task runner the settings ask for (``keys``: only these inputs), named
    and tagged as it is created (no update of the run from inside it)."""
    from prefect import tags

    run_id = new_run_id()
    names = [str(p) for p in paths]
    name = artifacts.flow_run_name(names, run_id)
    configured = reconstruct_archive.with_options(task_runner=task_runner(settings), flow_run_name=lambda: name)
    with tags(*artifacts.run_tags(names)):
        return configured(names, str(out), settings, force, show_progress, allow_shrink, keys, run_id)
