"""The one streamed read of a large JSON export: its conversations entry by entry, on every worker.

The JSON counterpart of flows/core/spool.py. A ChatGPT, Claude, DeepSeek or Grok ``conversations.json``, a
Takeout ``Hangouts.json`` or an Open WebUI export (any grammar that names its ``Grammar.conversations``) of
``stream_json_bytes`` or more is never held whole, nor all its sessions:

1. the list of conversations is located before anything is read (``parsers.jsonsplit.locate``: the
   top-level list, or the list in a wrapper object such as ``{"conversations": [...]}``, whose other
   members are set aside as the whole read sets them aside). An input where it cannot be located
   cheaply (one conversation object, the format's own key before the list, no list in the object's
   first block) or that is not UTF-8 is read whole, as ``ReadWhole`` says in its ledger row (or
   quarantined ``too_large`` when it does not fit the memory budget);
2. the list is split into its entries (``parsers.jsonsplit``: cut where orjson confirms, no tree
   of the file); entries are grouped into batches of about ``stream_chunk_bytes``;
3. each batch goes to one of ``workers - 1`` processes spawned for this input while they have fewer
   than two batches each, else it is done here (this process is the last worker; with one worker,
   or where no child process may be started, every batch is done here): every entry is parsed by its
   grammar (``Grammar.parse_conversation``, which its whole read runs on each conversation too),
   accounted, assembled and gated as the whole-file path does
   (the batch's sessions assembled as one table, flows/core/batches.py), and its document written to a
   temporary file under ``OUT/.spool``;
4. the batches' sessions come back in their order: ordinals and duplicate session ids are settled
   here across batches, as the whole-file path settles them, and each session is handed to
   ``emit`` (the shard stages the temporary file in its write batch) before the next batch is
   awaited. At most two batches per worker are in flight (memory: a few batches, not the file).

The documents are the bytes of the whole-file path (tests compare them), whatever the worker
count. A conversation the grammar cannot read is quarantined with its reason while the others go
on; a file that stops being valid JSON (cut off mid-conversation, in a list or in a wrapper) keeps every
conversation before the break and says which conversation broke and how many bytes were not read.

Each batch's worker also stages the dataset rows of its documents (a sessions part and a turns part,
``audit.datasets.write_batch``), taken from the sessions as assembled and keyed by the path each
document has by its id and its sha256; the shard settles them once it has emitted the batch
(``datasets.settle``: the rows of a document it did not write are dropped, an id-less document's
path gets its ordinal) and the run adopts them. The rows never come back to the shard (all of an
export's rows there cost 1 GB for a 240 MB export), and no document is read back for them. A worker
process that dies (killed, out of memory) loses its batch only: sent once more, alone, to a fresh
worker, then its conversations quarantined ``worker_died`` (``_result``).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from audit import datasets
from models.errors import NotStreamable, Reason, ReconstructError
from models.records import Detection, ParsedSession, SourceText
from models.settings import Settings
from models.status import FileStatus, SessionStatus
from normalizers.assemble import RunContext
from normalizers.ids import safe_id
from parsers import jsonsplit, registry
from parsers.base import ConversationList
from parsers.memory import paused_gc
from parsers.turncols import TurnColumns

from . import batches, lifeline
from .emit import document_relpath
from .process import FileOutcome, Owner, ReadWhole, SessionOutcome, failure, judge_batch
from .spool import SPOOL_DIR

Emit = Callable[[SessionOutcome], "tuple[str | None, str | None] | None"]
"""Stages a session; returns its (path, sha256) when its document was written (sha256 None when not)."""
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
    key: str | None = None
    """The input's source key: the worker stages its documents' dataset rows under their paths
    (none without it)."""
    pointer: str = ""
    """The JSON pointer of the list the entries are of (``/conversations`` in a wrapper object)."""


@dataclass(slots=True)
class Done:
    """A batch's sessions in order, and the dataset rows its worker staged for their documents."""

    sessions: list[SessionOutcome]
    parts: datasets.BatchParts | None = None


def batch_stem(key: str, first: int) -> str:
    """The name of a batch's staged parts: from the input's key and its first entry."""
    return f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.{first:09d}"


def stream_json_input(open_input: Callable[[], BinaryIO], source: SourceText, detection: Detection, ctx: RunContext,
                      out_root: Path, emit: Emit, key: str | None = None) -> FileOutcome | ReadWhole | None:
    """The streamed core for a large JSON export whose grammar (``detection``) names its ``conversations``;
    ``ReadWhole`` when the list cannot be located cheaply (module docstring); None when its grammar names
    none (the caller says why it is read whole). Sessions go to ``emit`` as they are done; the outcome
    returned lists them with ``emitted`` set, and the staged dataset parts of the documents written (with
    ``key``, the input's source key)."""
    shape = registry.get(detection.grammar).conversations
    if shape is None:
        return None
    if source.encoding not in ("utf-8", "utf-8-bom"):
        return ReadWhole(f"the file is {source.encoding}, and its bytes must be decoded before they are cut")
    try:
        with open_input() as fp:
            at = jsonsplit.locate(fp, shape)
    except NotStreamable as exc:
        return ReadWhole(f"its list of conversations is not located cheaply: {exc.detail}")
    with paused_gc():
        return stream_entries(open_input, source, detection, ctx, out_root, emit, key, at, shape)


def stream_entries(open_input: Callable[[], BinaryIO], source: SourceText, detection: Detection, ctx: RunContext,
                   out_root: Path, emit: Emit, key: str | None, at: jsonsplit.ListAt,
                   shape: ConversationList) -> FileOutcome:
    """Every entry of the list ``at`` through the workers, in order (module docstring)."""
    started = time.perf_counter()
    spool = out_root / SPOOL_DIR
    spool.mkdir(parents=True, exist_ok=True)
    tag = f".{hashlib.sha256(source.name.encode()).hexdigest()[:16]}.{os.getpid()}"
    merger = _Merger(emit)
    broken: jsonsplit.SplitError | None = None
    stems: list[str] = []
    repaired = _Surrogates(at.pointer)
    try:
        with open_input() as fp, _workers(ctx.settings) as workers:
            inflight: deque[_Sent | Done] = deque()
            limit = INFLIGHT_PER_WORKER * ctx.settings.workers
            split = jsonsplit.entries(fp, at=at, shape=shape)
            for batch, error in _batches(repaired.counted(split), ctx.settings.stream_chunk_bytes):
                broken = error or broken
                if batch:
                    job = Job(detection.grammar, detection, source, ctx.settings, spool, tag, batch, True, key,
                              at.pointer)
                    stems.append(batch_stem(key or "", batch[0][0]))
                    inflight.append(_dispatch(job, workers, inflight, ctx))
                while inflight and (len(inflight) >= limit or isinstance(inflight[0], Done)
                                    or inflight[0].future.done()):
                    merger.add(_result(inflight.popleft(), workers))
            while inflight:
                merger.add(_result(inflight.popleft(), workers))
    except BaseException:
        for stem in stems:  # a failed input leaves no rows behind
            for path in datasets.batch_paths(out_root, stem):
                path.unlink(missing_ok=True)
        raise
    outcome = merger.outcome(source, detection, broken, time.perf_counter() - started, at.pointer)
    outcome.detail = "; ".join(x for x in (outcome.detail, repaired.note()) if x)
    return outcome


class _Surrogates:
    """The lone surrogate escapes the split read as U+FFFD, counted for the input's ledger row."""

    def __init__(self, pointer: str) -> None:
        self.count, self.entries, self.pointer = 0, [], pointer

    def counted(self, entries: Iterator[jsonsplit.Entry]) -> Iterator[jsonsplit.Entry]:
        for entry in entries:
            if entry.surrogates:
                self.count += entry.surrogates
                self.entries.append(entry.index)
            yield entry

    def note(self) -> str:
        if not self.count:
            return ""
        where = ", ".join(f"{self.pointer}/{i}" for i in self.entries[:5]) + (" ..." if len(self.entries) > 5 else "")
        return (f"{self.count} lone UTF-16 surrogate escapes (a \\ud800-\\udfff without its pair) read as "
                f"U+FFFD, in conversations {where}")


@dataclass(slots=True)
class _Sent:
    """A batch sent to a spawned worker: its job (the entries' bytes), to send again if the worker dies."""

    job: Job
    future: Future


def _dispatch(job: Job, workers: _Workers, inflight: deque, ctx: RunContext) -> _Sent | Done:
    """A batch to a spawned worker once one has started and while they have fewer than two each,
    else done here: this process is a worker too (it splits the file besides), so ``workers``
    processes work in all, and no batch waits for a worker to start."""
    busy = sum(1 for item in inflight if isinstance(item, _Sent) and not item.future.done())
    if not workers.ready() or busy >= INFLIGHT_PER_WORKER * (ctx.settings.workers - 1):
        return run_job(job, ctx)
    sent = replace(job, entries=[(i, bytes(raw)) for i, _, raw in job.entries], parsed=False)
    return _Sent(sent, workers.submit(sent))


def _started() -> None:
    """Done as soon as a worker has started (its imports take a second or more)."""


def _result(item: _Sent | Done, workers: _Workers) -> Done:
    """A batch's result. When its worker died (killed, out of memory) the batch is sent once more,
    alone, to a fresh worker (a batch in flight beside the one that killed it lands); when that
    one dies too, its conversations are quarantined (``worker_died``) and the input goes on."""
    if isinstance(item, Done):
        return item
    try:
        return item.future.result()
    except BrokenProcessPool:
        _discard_lost(item.job)
    try:
        return workers.submit(item.job).result()
    except BrokenProcessPool:
        _discard_lost(item.job)
        return Done([_died(index, raw, item.job) for index, raw in item.job.entries])


def _discard_lost(job: Job) -> None:
    """What a dead worker may have left of a batch: its documents' temporaries and its staged rows."""
    for index, *_ in job.entries:
        for path in job.spool.glob(f"{job.tag}.{index}.*.json.tmp"):
            path.unlink(missing_ok=True)
    if job.key is not None:
        for path in datasets.batch_paths(job.spool.parent, batch_stem(job.key, job.entries[0][0])):
            path.unlink(missing_ok=True)


def _died(index: int, raw: bytes, job: Job) -> SessionOutcome:
    first, last = job.entries[0][0], job.entries[-1][0]
    try:
        value = orjson.loads(raw)  # for its id; this process parsed it once already
    except orjson.JSONDecodeError:
        value = None
    detail = (f"the worker process reading conversations {job.pointer}/{first}..{job.pointer}/{last} died twice "
              "(killed for lack of memory?); the other conversations were read")
    return _unreadable(f"{job.pointer}/{index}", value, Reason.WORKER_DIED, detail, time.perf_counter())


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




class _Workers:
    """The worker processes of one input: none with one worker, or in a process that may not start
    any (a daemonic one, as a Dask worker's). A pool one of whose processes died is replaced."""

    def __init__(self, settings: Settings) -> None:
        self.size = settings.workers - 1
        self.pool: ProcessPoolExecutor | None = None
        self.started_up: Future | None = None
        if self.size > 0 and not multiprocessing.current_process().daemon:
            self._start()

    def _start(self) -> None:
        # spawned, not forked from a server: a fork server would hold one more copy of the imports in memory
        context = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(max_workers=self.size, mp_context=context, initializer=lifeline.worker_start,
                                        initargs=(lifeline.owner(),))
        self.started_up = self.pool.submit(_started)

    def ready(self) -> bool:
        """A worker has started (until then, batches are done here)."""
        return self.started_up is not None and self.started_up.done()

    def submit(self, job: Job) -> Future:
        try:
            return self.pool.submit(run_job, job)
        except BrokenProcessPool:  # a worker died: a fresh pool for the batches to come
            self.pool.shutdown(wait=False, cancel_futures=True)
            self._start()
            return self.pool.submit(run_job, job)

    def close(self, wait: bool) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=wait, cancel_futures=not wait)


@contextmanager
def _workers(settings: Settings) -> Iterator[_Workers]:
    workers = _Workers(settings)
    try:
        yield workers
    except BaseException:
        workers.close(wait=False)
        raise
    else:
        workers.close(wait=True)


# --- in the worker ---------------------------------------------------------------------------------

_CONTEXTS: dict[str, RunContext] = {}


def _context(settings: Settings) -> RunContext:
    """The run context, built once per worker process and settings."""
    key = settings.model_dump_json()
    if key not in _CONTEXTS:
        _CONTEXTS[key] = RunContext.from_settings(settings)
    return _CONTEXTS[key]


def run_job(job: Job, ctx: RunContext | None = None) -> Done:
    """The sessions of a batch's entries, in order, each document in a temporary file, written and
    synced by a few threads while the next entries are worked on (one fsync after another costs
    milliseconds each; concurrent ones share the disk's commits, and the shard's batch then finds
    them synced); then the documents' dataset rows, staged."""
    ctx = ctx or _context(job.settings)
    grammar = registry.get(job.grammar)
    out: list[SessionOutcome] = []
    with paused_gc(), ThreadPoolExecutor(WRITERS) as writers:
        pending = []
        addresses: dict[int, str | None] = {}
        for index, outcomes in _outcomes(grammar, job, ctx):
            for n, outcome in enumerate(outcomes):
                if outcome.encoded is not None:
                    addresses[id(outcome)] = _address(outcome)
                    pending.append(writers.submit(_write, outcome, job.spool / f"{job.tag}.{index}.{n}.json.tmp"))
                out.append(outcome)
        for done in pending:
            done.result()
    return Done(out, _stage_rows(job, out, addresses))


def _stage_rows(job: Job, out: list[SessionOutcome], addresses: dict[int, str | None]) -> datasets.BatchParts | None:
    """The dataset rows of the batch's documents as staged parts, each keyed by the path its id
    gives it (an id-less one gets its ordinal from the shard) and its sha256; the rows are then
    dropped from the outcomes, which go back to the shard without them."""
    documents = [(addresses.get(id(o)), o.spool_sha256, o.rows) for o in out if o.spool is not None]
    for o in out:
        o.rows = None
    if job.key is None or any(rows is None or rel is None for rel, _, rows in documents):
        return None  # the tables read these documents themselves
    return datasets.write_batch(job.spool.parent, batch_stem(job.key, job.entries[0][0]), documents)


_KEY_FIELD = b'"sessionKey": '


def _address(o: SessionOutcome) -> str | None:
    """Where the document of a conversation lands when its key has no other snapshot (its session
    key's address, read from the encoded envelope's ``sessionKey`` line); the shard re-keys the rows
    of one that lands elsewhere or not at all."""
    at = o.encoded.find(_KEY_FIELD)
    if at < 0:
        return None
    start = at + len(_KEY_FIELD)
    line = o.encoded[start:o.encoded.find(b"\n", start)].rstrip(b",")
    try:
        key = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return document_relpath(key, o.session_id) if isinstance(key, str) and key else None


def _outcomes(grammar, job: Job, ctx: RunContext) -> list[tuple[int, list[SessionOutcome]]]:
    """(index, its sessions) of each entry of a batch, in order: every entry parsed with its turns as
    columns, counted and accounted, then the batch's sessions assembled as one table
    (flows/core/batches.py). A batch the column route fails on has each conversation quarantined with the
    failure, never read by another route."""
    values = [(index, item if job.parsed else orjson.loads(item)) for index, item, *_ in job.entries]
    started = time.perf_counter()
    try:
        return _batched(grammar, values, job, ctx)
    except Exception as exc:
        detail = f"the column route failed on its batch: {failure(exc)}"
        return [(index, [_unreadable(f"{job.pointer}/{index}", value, Reason.INTERNAL, detail, started)])
                for index, value in values]


def _batched(grammar, values: list[tuple[int, Any]], job: Job, ctx: RunContext
             ) -> list[tuple[int, list[SessionOutcome]]]:
    """Every entry parsed with its turns as columns, counted and accounted; then the batch assembled."""
    done: list[tuple[int, list]] = []
    batch: list[tuple[int, batches.Pending, Owner]] = []
    owner = Owner(grammar, job.source, job.detection, None)
    for index, value in values:
        started, pointer = time.perf_counter(), f"{job.pointer}/{index}"
        try:
            prepared = [batches.prepare(_columns(parsed), grammar)
                        for parsed in grammar.parse_conversation(pointer, value, job.source, ctx.settings)]
        except ReconstructError as exc:
            done.append((index, [_unreadable(pointer, value, exc.reason, exc.detail, started)]))
            continue
        except Exception as exc:  # a grammar bug loses this conversation, not the file
            done.append((index, [_unreadable(pointer, value, Reason.PARSE_ERROR, _bug(grammar, exc), started)]))
            continue
        done.append((index, [len(batch) + i for i in range(len(prepared))]))
        batch.extend((0, p, owner) for p in prepared)
    judged = judge_batch(batch, ctx)
    return [(index, [judged[i] if isinstance(i, int) else i for i in items]) for index, items in done]


def _columns(parsed: ParsedSession) -> ParsedSession:
    """A session whose grammar built turn records (Hangouts, DeepSeek...), its turns held as columns as the
    whole read holds them (``batches.prepare_read``); a builder (ChatGPT, Claude) is kept as it is."""
    parsed.turns = TurnColumns.of(parsed.turns)
    return parsed


def _bug(grammar, exc: Exception) -> str:
    return f"{grammar.name} failed: {failure(exc)}"


def _write(outcome: SessionOutcome, path: Path) -> None:
    """The session's document into a temporary file, synced; the outcome then names the file."""
    lifeline.check()  # not a temporary more once the run is gone
    with open(path, "wb") as fh:
        fh.write(outcome.encoded)
        fh.flush()
        os.fsync(fh.fileno())
    outcome.spool, outcome.spool_sha256 = path, hashlib.sha256(outcome.encoded).hexdigest()
    outcome.encoded = None


def _unreadable(pointer: str, value: Any, reason: Reason, detail: str, started: float) -> SessionOutcome:
    raw = value.get("id") or value.get("uuid") if isinstance(value, dict) else None
    raw = raw if isinstance(raw, str) and raw else None
    return SessionOutcome(0, safe_id(raw), None, SessionStatus.QUARANTINED, [Reason(reason).value],
                          f"conversation {pointer} could not be read: {detail}", None, None, 0, 0, 0,
                          seconds=time.perf_counter() - started)


# --- back in the shard's process -----------------------------------------------------------------

class _Merger:
    """The sessions in order: ordinals, duplicate ids across batches, handed on one by one."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.sessions: list[SessionOutcome] = []
        self.seen: dict[str, int] = {}
        self.staged: list[Path] = []

    def add(self, done: Done) -> None:
        written: list[SessionOutcome] = []  # the sessions the worker staged rows for, in its order
        for s in done.sessions:
            s.ordinal = len(self.sessions) + 1
            staged = s.spool is not None
            if s.document is None and s.spool is None and s.encoded is None:
                pass  # an unreadable entry: no session id to hold
            elif s.session_id_raw is not None and s.session_id in self.seen:
                s = duplicate(s, self.seen[s.session_id])
            else:
                self.seen.setdefault(s.session_id, s.ordinal)
            self.emit(s)
            if staged:
                written.append(s)
            if s.encoded is not None or s.spool is not None:  # a quarantine record is written with its document
                s.document = None  # staged: only what the ledger records is kept
            self.sessions.append(s)
        if done.parts is not None:  # keyed by the shard once it knows where each document landed
            self.staged.append((done.parts, written))

    def outcome(self, source: SourceText, detection: Detection, broken: jsonsplit.SplitError | None,
                seconds: float, pointer: str) -> FileOutcome:
        sessions = self.sessions
        reasons, detail = [], ""
        if broken is not None:
            reasons, detail = [Reason(broken.reason).value], broken.loss(source.size, pointer)
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
                           detection, sessions, seconds, emitted=True, staged=self.staged)


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


def with_companions(source: SourceText, companions: dict[str, str]) -> SourceText:
    return replace(source, companions=companions) if companions else source
