"""A large JSON list of conversations streamed entry by entry, on every worker.

The JSON counterpart of flows/spool.py. A ChatGPT or Claude ``conversations.json`` (any grammar with
``Grammar.entries``) of ``stream_json_bytes`` or more is never held whole, nor all its sessions:

1. the list is split into its entries (``parsers.jsonsplit``: cut where orjson confirms, no tree
   of the file); entries are grouped into batches of about ``stream_chunk_bytes``;
2. each batch goes to one of ``workers - 1`` processes spawned for this input while they have fewer
   than two batches each, else it is done here (this process is the last worker; with one worker,
   or where no child process may be started, every batch is done here): every entry is parsed by its
   grammar (``Grammar.parse_entry``), accounted, assembled and gated as the whole-file path does
   (``process.judge``; the batch's sessions assembled as one table when the grammar appends turns to
   columns, flows/jsonbatch.py), and its document written to a temporary file under ``OUT/.spool``;
3. the batches' sessions come back in their order: ordinals and duplicate session ids are settled
   here across batches, as the whole-file path settles them, and each session is handed to
   ``emit`` (the shard stages the temporary file in its write batch) before the next batch is
   awaited. At most two batches per worker are in flight (memory: a few batches, not the file).

The documents are the bytes of the whole-file path (tests compare them), whatever the worker
count. A conversation the grammar cannot read is quarantined with its reason while the others go
on; a file that stops being valid JSON (cut off mid-conversation) keeps every conversation before
the break and says which conversation broke and how many bytes were not read. Documents of streamed
conversations add no dataset part rows: the rows of a whole export would all come back to the shard
(measured: 1 GB more for a 240 MB export), so the datasets read those documents themselves.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from models.errors import Reason, ReconstructError
from models.records import Detection, SourceText
from models.settings import Settings
from models.status import FileStatus, SessionStatus
from normalizers.assemble import RunContext
from normalizers.ids import safe_id
from parsers import jsonsplit, registry
from parsers.memory import paused_gc
from validators.accounting import Accountant

from . import jsonbatch
from .process import FileOutcome, SessionOutcome, judge, judge_batch
from .spool import SPOOL_DIR

Emit = Callable[[SessionOutcome], None]
INFLIGHT_PER_WORKER = 2
WRITERS = 8
"""Threads per worker that write and sync documents."""


@dataclass(slots=True)
class Job:
    """One batch of entries for a worker, with what every entry of the input shares."""

    grammar: str
    detection: Detection
    source: SourceText
    settings: Settings
    spool: Path
    tag: str
    entries: list[tuple]
    """(index, value, bytes) when parsed already (in this process), else (index, the entry's bytes)."""
    parsed: bool


def stream_json_input(open_input: Callable[[], BinaryIO], source: SourceText, sample: str, ctx: RunContext,
                      out_root: Path, emit: Emit) -> FileOutcome | None:
    """The streamed core for a large JSON list whose grammar reads entries; None when the input is
    not one (the caller then takes another route). Sessions go to ``emit`` as they are done; the
    outcome returned lists them with ``emitted`` set."""
    if source.encoding not in ("utf-8", "utf-8-bom"):
        return None  # decoding must replace bad bytes: the whole-file route does it
    try:
        detection = registry.detect(sample, source.name, threshold=ctx.settings.detect_threshold,
                                    forced=ctx.settings.format)
    except ReconstructError:
        return None  # the whole-file route records why
    grammar = registry.get(detection.grammar)
    if not grammar.entries:
        return None
    with open_input() as fp:
        if jsonsplit.array_start(fp) is None:
            return None
    with paused_gc():
        return stream_entries(open_input, source, detection, ctx, out_root, emit)


def stream_entries(open_input: Callable[[], BinaryIO], source: SourceText, detection: Detection, ctx: RunContext,
                   out_root: Path, emit: Emit) -> FileOutcome:
    """Every entry of the list through the workers, in order (module docstring)."""
    started = time.perf_counter()
    spool = out_root / SPOOL_DIR
    spool.mkdir(parents=True, exist_ok=True)
    tag = f".{hashlib.sha256(source.name.encode()).hexdigest()[:16]}.{os.getpid()}"
    merger = _Merger(emit)
    broken: jsonsplit.SplitError | None = None
    with open_input() as fp, _executor(ctx.settings) as pool:
        inflight: deque[Future | list[SessionOutcome]] = deque()
        limit = INFLIGHT_PER_WORKER * ctx.settings.workers
        started_up = pool.submit(_started) if pool is not None else None
        for batch, error in _batches(jsonsplit.entries(fp), ctx.settings.stream_chunk_bytes):
            broken = error or broken
            if batch:
                job = Job(detection.grammar, detection, source, ctx.settings, spool, tag, batch, True)
                inflight.append(_dispatch(job, pool, started_up, inflight, ctx))
            while inflight and (len(inflight) >= limit or not isinstance(inflight[0], Future) or inflight[0].done()):
                merger.add(_result(inflight.popleft()))
        while inflight:
            merger.add(_result(inflight.popleft()))
    return merger.outcome(source, detection, broken, time.perf_counter() - started)


def _dispatch(job: Job, pool: ProcessPoolExecutor | None, started_up: Future | None, inflight: deque,
              ctx: RunContext) -> Future | list[SessionOutcome]:
    """A batch to a spawned worker once one has started and while they have fewer than two each,
    else done here: this process is a worker too (it splits the file besides), so ``workers``
    processes work in all, and no batch waits for a worker to start."""
    busy = sum(1 for item in inflight if isinstance(item, Future) and not item.done())
    if pool is None or not started_up.done() or busy >= INFLIGHT_PER_WORKER * (ctx.settings.workers - 1):
        return run_job(job, ctx)
    return pool.submit(run_job, replace(job, entries=[(i, bytes(raw)) for i, _, raw in job.entries], parsed=False))


def _started() -> None:
    """Done as soon as a worker has started (its imports take a second or more)."""


def _result(item: Future | list[SessionOutcome]) -> list[SessionOutcome]:
    return item.result() if isinstance(item, Future) else item


def _batches(entries: Iterator[jsonsplit.Entry], size: int
             ) -> Iterator[tuple[list[tuple[int, Any, Any]], jsonsplit.SplitError | None]]:
    """Entries (index, value, bytes) in batches of about ``size`` bytes; the last batch carries the
    split's error, if any."""
    batch: list[tuple[int, Any, Any]] = []
    held = 0
    try:
        for entry in entries:
            batch.append((entry.index, entry.value, entry.raw))
            held += entry.end - entry.start
            if held >= size:
                yield batch, None
                batch, held = [], 0
    except jsonsplit.SplitError as exc:
        yield batch, exc
        return
    yield batch, None


def _worker_signals() -> None:
    """Ctrl-C is the main process's to handle (flows/pool.py)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def _executor(settings: Settings) -> Iterator[ProcessPoolExecutor | None]:
    """Worker processes for one input; None with one worker, or in a process that may not start any
    (a daemonic one, as a Dask worker's)."""
    if settings.workers <= 1 or multiprocessing.current_process().daemon:
        yield None
        return
    # spawned, not forked from a server: a fork server would hold one more copy of the imports in memory
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=settings.workers - 1, mp_context=context, initializer=_worker_signals)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    else:
        pool.shutdown()


# --- in the worker ---------------------------------------------------------------------------------

_CONTEXTS: dict[str, RunContext] = {}


def _context(settings: Settings) -> RunContext:
    """The run context, built once per worker process and settings."""
    key = settings.model_dump_json()
    if key not in _CONTEXTS:
        _CONTEXTS[key] = RunContext.from_settings(settings)
    return _CONTEXTS[key]


def run_job(job: Job, ctx: RunContext | None = None) -> list[SessionOutcome]:
    """The sessions of a batch's entries, in order, each document in a temporary file, written and
    synced by a few threads while the next entries are worked on (one fsync after another costs
    milliseconds each; concurrent ones share the disk's commits, and the shard's batch then finds
    them synced)."""
    ctx = ctx or _context(job.settings)
    grammar = registry.get(job.grammar)
    out: list[SessionOutcome] = []
    with paused_gc(), ThreadPoolExecutor(WRITERS) as writers:
        pending = []
        for index, outcomes in _outcomes(grammar, job, ctx):
            for n, outcome in enumerate(outcomes):
                if outcome.encoded is not None:
                    pending.append(writers.submit(_write, outcome, job.spool / f"{job.tag}.{index}.{n}.json.tmp"))
                out.append(outcome)
        for done in pending:
            done.result()
    return out


def _outcomes(grammar, job: Job, ctx: RunContext) -> Iterator[tuple[int, list[SessionOutcome]]]:
    """(index, its sessions) of each entry of a batch, in order: the batch's sessions assembled as one
    table when its grammar appends turns to columns and the batch is large enough (flows/jsonbatch.py),
    else entry by entry. Either way the same documents."""
    values = [(index, item if job.parsed else orjson.loads(item)) for index, item, *_ in job.entries]
    size = sum(len(raw) for *_, raw in job.entries)
    if jsonbatch.uses_columns(grammar, ctx.settings, size):
        try:
            yield from _batched(grammar, values, job, ctx)
            return
        except Exception:  # a shortcoming of the column route must not lose the batch: read it entry by entry
            pass
    for index, value in values:
        yield index, _entry(grammar, index, value, job, ctx)


def _batched(grammar, values: list[tuple[int, Any]], job: Job, ctx: RunContext
             ) -> list[tuple[int, list[SessionOutcome]]]:
    """Every entry parsed with its turns as columns, counted and accounted; then the batch assembled."""
    done: list[tuple[int, list]] = []
    batch: list[tuple[int, jsonbatch.Pending]] = []
    for index, value in values:
        started = time.perf_counter()
        try:
            prepared = [jsonbatch.prepare(parsed, grammar)
                        for parsed in grammar.parse_entry(f"/{index}", value, job.source, ctx.settings, columns=True)]
        except ReconstructError as exc:
            done.append((index, [_unreadable(index, value, exc.reason, exc.detail, started)]))
            continue
        except Exception as exc:  # a grammar bug loses this conversation, not the file
            done.append((index, [_unreadable(index, value, Reason.PARSE_ERROR, _bug(grammar, exc), started)]))
            continue
        done.append((index, [len(batch) + i for i in range(len(prepared))]))
        batch.extend((0, p) for p in prepared)
    judged = judge_batch(batch, grammar, job.source, job.detection, ctx, None)
    return [(index, [judged[i] if isinstance(i, int) else i for i in items]) for index, items in done]


def _bug(grammar, exc: Exception) -> str:
    where = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{grammar.name} failed: {type(exc).__name__}: {exc} ({where.filename}:{where.lineno})"


def _write(outcome: SessionOutcome, path: Path) -> None:
    """The session's document into a temporary file, synced; the outcome then names the file."""
    with open(path, "wb") as fh:
        fh.write(outcome.encoded)
        fh.flush()
        os.fsync(fh.fileno())
    outcome.spool, outcome.spool_sha256 = path, hashlib.sha256(outcome.encoded).hexdigest()
    outcome.encoded = None
    outcome.rows = None  # a large export's rows would all come back to the shard: the tables read the file


def _entry(grammar, index: int, value: Any, job: Job, ctx: RunContext) -> list[SessionOutcome]:
    """One entry's sessions; an entry its grammar cannot read is one quarantined session."""
    started = time.perf_counter()
    try:
        sessions = list(grammar.parse_entry(f"/{index}", value, job.source, ctx.settings))
        accountant = Accountant.of(job.source, lines=not grammar.structured)
        out = [judge(0, parsed, grammar, job.source, job.detection, ctx, {}, accountant.account(parsed, True))
               for parsed in sessions]
    except ReconstructError as exc:
        return [_unreadable(index, value, exc.reason, exc.detail, started)]
    except Exception as exc:  # a grammar bug loses this conversation, not the file
        return [_unreadable(index, value, Reason.PARSE_ERROR, _bug(grammar, exc), started)]
    return out


def _unreadable(index: int, value: Any, reason: Reason, detail: str, started: float) -> SessionOutcome:
    raw = value.get("id") or value.get("uuid") if isinstance(value, dict) else None
    raw = raw if isinstance(raw, str) and raw else None
    return SessionOutcome(0, safe_id(raw), None, SessionStatus.QUARANTINED, [Reason(reason).value],
                          f"conversation /{index} could not be read: {detail}", None, None, 0, 0, 0,
                          seconds=time.perf_counter() - started)


# --- back in the shard's process -----------------------------------------------------------------

class _Merger:
    """The sessions in order: ordinals, duplicate ids across batches, handed on one by one."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.sessions: list[SessionOutcome] = []
        self.seen: dict[str, int] = {}

    def add(self, outcomes: list[SessionOutcome]) -> None:
        for s in outcomes:
            s.ordinal = len(self.sessions) + 1
            if s.document is None and s.spool is None and s.encoded is None:
                pass  # an unreadable entry: no session id to hold
            elif s.session_id_raw is not None and s.session_id in self.seen:
                s = duplicate(s, self.seen[s.session_id])
            else:
                self.seen.setdefault(s.session_id, s.ordinal)
            self.emit(s)
            s.document = None  # staged: only what the ledger records is kept
            self.sessions.append(s)

    def outcome(self, source: SourceText, detection: Detection, broken: jsonsplit.SplitError | None,
                seconds: float) -> FileOutcome:
        sessions = self.sessions
        reasons, detail = [], ""
        if broken is not None:
            reasons, detail = [Reason.PARSE_ERROR.value], lost(broken, source.size)
        statuses = {s.status for s in sessions}
        if not sessions:
            status = FileStatus.QUARANTINED
            if broken is None:
                reasons, detail = [Reason.NO_TURNS.value], f"{detection.grammar} found no session in the input"
        elif statuses == {SessionStatus.OK} and broken is None:
            status = FileStatus.OK
        else:
            status = FileStatus.QUARANTINED if statuses == {SessionStatus.QUARANTINED} and not broken \
                else FileStatus.PARTIAL
        return FileOutcome(source.name, source.sha256, source.size, detection.grammar, status, reasons, detail,
                           detection, sessions, seconds, emitted=True)


def duplicate(s: SessionOutcome, first: int) -> SessionOutcome:
    """A session whose id an earlier one holds: quarantined with its document as built (the whole-file
    route's judgement, made here because the two may lie in different batches)."""
    if s.spool is not None:
        doc = orjson.loads(Path(s.spool).read_bytes())
        Path(s.spool).unlink(missing_ok=True)
    else:
        doc = s.document
    doc["artifacts"]["ai_protocol_performance"]["gate"] = {}  # not gated: judged a duplicate first
    out = SessionOutcome(
        s.ordinal, s.session_id, s.session_id_raw, SessionStatus.QUARANTINED, [Reason.DUPLICATE_SESSION_ID.value],
        f"session id {s.session_id_raw!r} already used by session #{first} of this source; not merged, not overwritten",
        None, doc, s.interactions, s.source_turns, s.characters, seconds=s.seconds)
    out.unaccounted, out.declared, out.drift = s.unaccounted, s.declared, s.drift
    return out


def lost(broken: jsonsplit.SplitError, size: int) -> str:
    """What a break in the JSON cost: the conversation it is in and every byte from its start."""
    return (f"the file stops being valid JSON in conversation #{broken.index + 1} (/{broken.index}, from byte "
            f"{broken.start}): {broken}; that conversation and everything after it ({size - broken.start} of "
            f"{size} bytes) were not read, the {broken.index} before it were")


def with_companions(source: SourceText, companions: dict[str, str]) -> SourceText:
    return replace(source, companions=companions) if companions else source
