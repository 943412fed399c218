"""One shard of input files, end to end, without Prefect: read, process, write, report.

This is the unit a Prefect task runs (flows/pipeline.py) and what the benchmark times as the
core pipeline. It writes documents and quarantine records itself and returns the ledger rows;
the ledger is written by the flow's main process only.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import sqlite3
import time
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

import orjson
import polars as pl

from audit.datasets import STAGED, STAGED_SESSIONS, DocumentRows, part_name, settle
from audit.ledger import (
    FileRow,
    Ledger,
    LedgerError,
    PriorRuns,
    ReconciliationRow,
    RevisionRow,
    SessionRow,
    SnapshotRow,
)
from audit.trail import ShardTrail
from flows import faults
from models.errors import IngestError, Reason, ReconstructError
from models.records import SourceText
from models.settings import Settings
from models.status import FileStatus, SessionStatus
from normalizers.assemble import RunContext
from normalizers.secrets import scrub_name
from parsers import registry
from parsers.text import decode, detection_sample, input_sha256, sha256_stream, sha256_text

from . import archives, emit, ingest, jsonstream, snapshots, spool
from .process import (
    DETECT_SAMPLE,
    Batch,
    FileOutcome,
    ReadWhole,
    finish,
    process_bytes,
    process_group,
    quarantined_file,
)
from .window import Loaded, Window


@dataclass(slots=True)
class ShardResult:
    files: list[FileRow] = field(default_factory=list)
    sessions: list[SessionRow] = field(default_factory=list)
    written: int = 0
    unchanged: int = 0
    revisions: list[RevisionRow] = field(default_factory=list)
    stopped: tuple[int, str] | None = None  # (errno, message) of a full or read-only disk: the run stops
    part: str = ""  # the file name of the shard's dataset part
    staged: list[str] = field(default_factory=list)  # staged parts: the shard's own, its streamed documents'
    snapshots: list[SnapshotRow] = field(default_factory=list)  # every keyed session's snapshot (#15)
    deferred: list[str] = field(default_factory=list)  # keys left to the merge phase
    reconciliation: list[ReconciliationRow] = field(default_factory=list)  # the merge phase's
    prints: list[snapshots.Prints] = field(default_factory=list)  # id-less sessions' message prints
    pending: list = field(default_factory=list)  # (ref, session) staged until the shard's keys are claimed
    unsettled: list = field(default_factory=list)  # (batch parts, their sessions) of streamed JSON inputs
    landed: dict = field(default_factory=dict)  # id(session) -> (path, sha256) where its document went

    def merge(self, other: ShardResult) -> None:
        self.stopped = self.stopped or other.stopped
        self.files.extend(other.files)
        self.sessions.extend(other.sessions)
        self.written += other.written
        self.unchanged += other.unchanged
        self.revisions.extend(other.revisions)
        self.part = self.part or other.part
        self.staged.extend(other.staged)
        self.snapshots.extend(other.snapshots)
        self.deferred.extend(other.deferred)
        self.reconciliation.extend(other.reconciliation)
        self.prints.extend(other.prints)

    def release(self) -> int:
        """Drop the rows once the run's main process has recorded them (ledger, dataset part, prints and
        deferred keys taken): whoever still holds the result (a finished future, Prefect's task state)
        then holds no per-file or per-session object, so the run's memory does not grow with the
        archive. Returns how many files the shard held, for the run's progress."""
        files = len(self.files)
        for rows in (self.files, self.sessions, self.revisions, self.staged, self.snapshots, self.deferred,
                     self.reconciliation, self.prints, self.pending, self.unsettled):
            rows.clear()
        self.landed.clear()
        return files


# A disk that takes no more writes: the run stops (marked failed) instead of quarantining every document.
DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def refused(exc: BaseException, out_root: Path) -> tuple[int, str] | None:
    """(errno, what) when ``exc`` is a full or read-only output refusing a write, else None: an OSError by
    its errno, or by the "(os error 28)" in its message when polars (Rust) raised it without one, a
    polars or SQLite error by its words (``faults.stops_writes``)."""
    if isinstance(exc, OSError) and exc.errno in DISK_FULL:
        return exc.errno, f"{exc.strerror} ({exc.filename or out_root})"
    return faults.stops_writes(exc)

# Peak memory to process an input read whole, per input byte (decoded text, turns, documents).
MEMORY_PER_INPUT_BYTE = 16


def memory_budget(settings: Settings) -> int:
    """Bytes one worker may spend on one input: the setting, else this machine's memory shared
    between the workers and the main process."""
    if settings.memory_budget_bytes is not None:
        return settings.memory_budget_bytes
    return _memory() // (settings.workers + 1)


@functools.cache
def _memory() -> int:
    """This machine's memory (asked once per process, not once per input)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 1024**3


class ShardInputs:
    """The shard's reads: each zip opened once, each folder's companions read once."""

    def __init__(self, companions: dict[str, ingest.InputRef]) -> None:
        self.companions = companion_index(companions)
        self.zips = archives.ArchiveCache()
        self._context: dict[PurePosixPath, tuple[dict[str, str], str | None]] = {}
        self._companion: dict[str, bytes] = {}  # a companion above many folders is read once, not once each
        self.raw: dict[str, str] = {}  # source key -> sha256 of the bytes read (recorded: a rerun proves by it)

    def read(self, ref: ingest.InputRef) -> bytes:
        data = ingest.read(ref, self.zips)
        self.raw[ref.key] = hashlib.sha256(data).hexdigest()
        return data

    def stream_sha256(self, ref: ingest.InputRef) -> tuple[str, int, str]:
        """``sha256_stream`` of an input read as a stream, its raw bytes' sha256 kept on the way."""
        raw = hashlib.sha256()
        with ingest.open_binary(ref, self.zips) as fp:
            found = sha256_stream(_hashed(iter(lambda: fp.read(1 << 20), b""), raw))
        self.raw[ref.key] = raw.hexdigest()
        return found

    def with_raw(self, rows: list[FileRow]) -> list[FileRow]:
        """The rows with the raw sha256 of the bytes their text's sha256 was taken of."""
        return [replace(f, raw_sha256=self.raw[f.source_key]) if f.sha256 and f.source_key in self.raw else f
                for f in rows]

    def context(self, ref: ingest.InputRef) -> tuple[dict[str, str], str | None]:
        """The companion texts for the input's folder and their combined hash (None without any)."""
        folder = PurePosixPath(ref.key).parent
        if folder not in self._context:
            texts = companions_for(ref, self.companions, self._read_companion)
            digest = hashlib.sha256()
            for name in sorted(texts):
                digest.update(f"{name}\0{sha256_text(texts[name])}\0".encode())
            self._context[folder] = (texts, digest.hexdigest() if texts else None)
        return self._context[folder]

    def _read_companion(self, ref: ingest.InputRef) -> bytes:
        if ref.key not in self._companion:
            self._companion[ref.key] = self.read(ref)
        return self._companion[ref.key]

    def close(self) -> None:
        self.zips.close()


def _hashed(chunks, digest):
    """The chunks as they are, each fed to ``digest`` on the way."""
    for chunk in chunks:
        digest.update(chunk)
        yield chunk


def companion_index(companions: dict[str, ingest.InputRef]) -> dict[PurePosixPath, list[ingest.InputRef]]:
    """The run's companions by folder (built once per shard: every input looks its folders up)."""
    index: dict[PurePosixPath, list[ingest.InputRef]] = {}
    for key, comp in companions.items():
        index.setdefault(PurePosixPath(key).parent, []).append(comp)
    return index


def companions_for(ref: ingest.InputRef, index: dict[PurePosixPath, list[ingest.InputRef]],
                   read=ingest.read) -> dict[str, str]:
    """Companion texts (users.json...) from the input's folder or the nearest folder above it."""
    found: dict[str, str] = {}
    folder = PurePosixPath(ref.key).parent
    for parent in (folder, *folder.parents):
        for comp in index.get(parent, ()):
            name = PurePosixPath(comp.name).name
            if name not in found:
                try:
                    found[name] = read(comp).decode("utf-8-sig", errors="replace")
                except IngestError:
                    continue
    return found


def _file_row(ref: ingest.InputRef, outcome: FileOutcome, context_sha: str | None = None) -> FileRow:
    return FileRow(ref.key, ref.recorded, outcome.sha256, outcome.size, outcome.grammar, FileStatus(outcome.status),
                   outcome.reasons, scrub_name(outcome.detail), len(outcome.sessions), round(outcome.seconds, 6),
                   context_sha)


def note_row(ref: ingest.InputRef, status: FileStatus, detail: str, sha: str | None = None,
              context_sha: str | None = None, raw_sha: str | None = None) -> FileRow:
    return FileRow(ref.key, ref.recorded, sha, ref.size, None, status, [], detail, 0, 0.0, context_sha, raw_sha)


SPILL_DOCUMENTS = 500
"""A shard writes its documents' dataset rows out once this many documents hold them (memory bound)."""
SPILL_TURNS = 50_000
"""... or once they hold this many turns (one large document is written out alone)."""


class RowSpill:
    """The dataset rows of a shard's documents, written out a batch at a time to the shard's own files
    (Arrow pieces under the staged parts' folder), then staged as the shard's part: the rows of a
    shard's documents are never all held in the worker, nor sent to the run's main process, which
    adopts the staged part as it adopts a streamed document's (``datasets.adopt``). The part holds
    the rows in the order the documents were written, as one part built in memory would."""

    def __init__(self, trail: ShardTrail, part: str) -> None:
        self.trail = trail
        self.part = part
        self.pieces: list[Path] = []
        self.turns = 0

    def added(self, turns: int) -> None:
        """A session was settled (``turns``: its interactions): write the rows out when enough are held."""
        self.turns += turns
        if len(self.trail.rows.sessions) >= SPILL_DOCUMENTS or self.turns >= SPILL_TURNS:
            self.spill()

    def spill(self) -> None:
        """The rows the trail holds, written out as one piece per table and let go."""
        self.turns = 0
        frames = self.trail.rows.take()
        if frames["sessions"].is_empty():
            return
        stem = f".{self.part}.{os.getpid()}.{len(self.pieces) // 2:05d}"
        for table, folder in (("sessions", STAGED_SESSIONS), ("turns", STAGED)):
            self.pieces.append(self.trail.out_root / folder / f"{stem}.arrow.tmp")
            self.pieces[-1].parent.mkdir(parents=True, exist_ok=True)
            frames[table].write_ipc(self.pieces[-1])

    def finish(self) -> list[Path]:
        """The pieces as the shard's staged part (turns first: ``datasets.adopt``'s order); none
        without rows. The pieces are removed."""
        self.spill()
        staged: list[Path] = []
        try:
            for folder in (STAGED, STAGED_SESSIONS):
                pieces = [p for p in self.pieces if p.parent == self.trail.out_root / folder]
                if pieces:
                    staged.append(self.trail.out_root / folder / f".{self.part}.tmp")
                    pl.scan_ipc(pieces).sink_parquet(staged[-1])  # streamed: a piece at a time
        except BaseException:
            for path in staged:
                path.unlink(missing_ok=True)
            raise
        finally:
            self.discard()
        return staged

    def discard(self) -> None:
        for piece in self.pieces:
            piece.unlink(missing_ok=True)
        self.pieces.clear()


class HeldSpill:
    """The staged sessions' bytes and dataset rows, written out a batch at a time until the shard's keys
    are claimed (they are claimed all at once, when every input is read): each session keeps only its
    counts, and the shard keeps its key and source sha256 (what the claim reads of it); it gets its bytes,
    rows and envelope back, a batch at a time, as the shard settles them (``restored``). A session whose
    rows are not columns (the record route's) is left as it is."""

    def __init__(self, out_root: Path, part: str) -> None:
        self.path = out_root / spool.SPOOL_DIR / f".{part}.{os.getpid()}.held.tmp"
        self.batches: list[tuple[int, int, Path, list]] = []  # (first, end) in the pending list, piece, places
        self.done = self.counted = 0  # the pending sessions written out (or left) and counted so far
        self.turns = 0
        # the written-out sessions' (key, source sha256), by place in the pending list: their envelopes go
        self.keys: dict[int, tuple[str | None, str]] = {}

    def key(self, i: int, s) -> str | None:
        """The key of the ``i``-th pending session (``snapshots.key_of``), written out or not."""
        return self.keys[i][0] if i in self.keys else snapshots.key_of(s)

    def source(self, i: int, s) -> str:
        """The source sha256 of the ``i``-th pending session (``snapshots.source_sha``), written out or not."""
        return self.keys[i][1] if i in self.keys else snapshots.source_sha(s)

    def hold(self, pending: list) -> None:
        """Write out the sessions staged since the last batch once they make a batch."""
        self.turns += sum(s.interactions for _, s in pending[self.counted:])
        self.counted = len(pending)
        if len(pending) - self.done >= SPILL_DOCUMENTS or self.turns >= SPILL_TURNS:
            self.spill(pending)

    def spill(self, pending: list) -> None:
        first, self.done, self.turns = self.done, len(pending), 0
        held = [(i, s) for i, (_, s) in enumerate(pending[first:], first)
                if s.encoded is not None and s.spool is None and s.rows is not None
                and isinstance(s.rows.turns, pl.DataFrame)]
        if not held:
            return
        for i, s in held:
            self.keys[i] = (snapshots.key_of(s), snapshots.source_sha(s))  # its envelope is read again when restored
        self.path.parent.mkdir(parents=True, exist_ok=True)
        piece = self.path.with_name(f"{self.path.name[:-4]}.{len(self.batches):05d}.arrow.tmp")
        places = []
        with open(self.path, "ab") as fh:
            for i, s in held:
                places.append((i, fh.tell(), len(s.encoded), s.rows.session, s.rows.turns.columns, s.rows.turns.height))
                fh.write(s.encoded)
        pl.concat([s.rows.turns for _, s in held], how="diagonal_relaxed").write_ipc(piece)
        for _, s in held:
            s.encoded = s.rows = s.document = None
        self.batches.append((first, self.done, piece, places))

    def restored(self, pending: list):
        """The pending (ref, session) pairs in order, each batch's bytes and rows given back as it is reached."""
        batches = iter(self.batches)
        batch = next(batches, None)
        for i, item in enumerate(pending):
            if batch is not None and i == batch[0]:
                self._restore(pending, batch)
                batch = next(batches, None)
            yield item

    def _restore(self, pending: list, batch) -> None:
        _, _, piece, places = batch
        turns = pl.read_ipc(piece.read_bytes())  # read, not mapped: the piece goes at once
        piece.unlink(missing_ok=True)
        at = 0
        with open(self.path, "rb") as fh:
            for i, offset, size, session, columns, height in places:
                s = pending[i][1]
                fh.seek(offset)
                s.encoded = fh.read(size)
                s.document = snapshots.envelope(s.encoded)
                s.rows = DocumentRows(session, turns.slice(at, height).select(columns))
                at += height

    def discard(self) -> None:
        for _, _, piece, _ in self.batches:
            piece.unlink(missing_ok=True)
        self.batches.clear()
        self.path.unlink(missing_ok=True)


HELD_INPUTS = 1000
"""Inputs recorded at the latest this many inputs after their sessions entered the batch (memory bound)."""


class Held:
    """The shard's batch (``process.Batch``: the sessions of many small inputs judged as one table) and
    what waits for it: each input's records, staged in input order once its sessions are judged."""

    def __init__(self, ctx: RunContext, after=None) -> None:
        self.batch = Batch(ctx)
        self.waiting: list[functools.partial] = []
        self.after = after  # called once the waiting records are staged (``HeldSpill.hold``)

    def later(self, record: functools.partial) -> None:
        """Stage an input's records once its sessions are judged (at once when none waits)."""
        self.waiting.append(record)
        if self.batch.idle or len(self.waiting) >= HELD_INPUTS:
            self.drain()

    def drain(self) -> None:
        self.batch.flush()
        waiting, self.waiting = self.waiting, []
        for record in waiting:
            record()
        if self.after is not None:
            self.after()


def run_shard(
    refs: list[ingest.InputRef],
    out_root: Path,
    settings: Settings,
    *,
    companions: dict[str, ingest.InputRef] | None = None,
    ledger_path: Path | None = None,
    force: bool = False,
    allow_shrink: bool = False,
    run_id: str | None = None,
) -> ShardResult:
    """Process every input of a shard; a broken input is quarantined and the shard goes on.

    Every write of the shard is made durable at its end, together (``ShardTrail.commit``), and
    so is what was written before an interruption or a full disk. ``allow_shrink`` lets a document
    replace an accepted one that held much more (the mass latch). Sessions are written once the
    shard's session keys are claimed in the run (``run_id``; flows/core/snapshots.py).
    """
    ctx = RunContext.from_settings(settings)
    prior = None
    if ledger_path is not None and not force and ledger_path.is_file():
        prior = _prior(ledger_path, refs)
    inputs = ShardInputs(companions or {})
    result = ShardResult(part=part_name(refs[0].key) if refs else "")
    trail = ShardTrail(out_root)
    spill = RowSpill(trail, result.part)
    keep = HeldSpill(out_root, result.part)
    held = Held(ctx, lambda: keep.hold(result.pending))
    ahead = _window(refs, ctx, prior, inputs)
    try:
        for index, ref in enumerate(refs):
            if emit.stop_requested(out_root):  # interrupted: what is done is returned and recorded
                break
            _one(ref, trail, ctx, prior, inputs, result, allow_shrink, held, ahead.take(index))
        held.drain()
        _settle(trail, result, settings, allow_shrink, ledger_path, run_id, spill, keep)
        _settle_rows(trail, result)
        result.files = inputs.with_raw(result.files)
    except (OSError, pl.exceptions.PolarsError, sqlite3.Error, LedgerError) as exc:
        result.stopped = refused(exc, out_root)  # a full or read-only output (or ledger): what was written is kept
        if result.stopped is None:
            _abandon(trail, spill)
            _discard_rows(result)
            raise
        _drop_unsettled(result)
        _discard_rows(result)
    except BaseException:
        _abandon(trail, spill)  # a retried or failed shard leaves no temporaries
        _discard_rows(result)
        raise
    finally:
        inputs.close()
        keep.discard()
    return _committed(trail, result, spill)


def _abandon(trail: ShardTrail, spill: RowSpill) -> None:
    trail.abandon()
    spill.discard()


def _prior(ledger_path: Path, refs: list[ingest.InputRef]) -> PriorRuns:
    """What the ledger knows of the shard's inputs, in one query per kind for all of them."""
    ledger = Ledger(ledger_path, read_only=True)
    try:
        return ledger.inputs.prior([key for ref in refs for key in (ref.key, *(p.key for p in ref.parts))])
    finally:
        ledger.close()


def _committed(trail: ShardTrail, result: ShardResult, spill: RowSpill | None = None) -> ShardResult:
    """Stage the shard's dataset part (``RowSpill``) and hand it over, then make its writes durable and
    hand their revisions over: nothing that can fail comes after the documents are in place (a shard
    that raised there would leave documents on disk that no ledger row names)."""
    spill = spill or RowSpill(trail, result.part)
    try:
        result.staged = [str(p) for p in (*trail.rows.staged, *_part(spill, result))]
        trail.commit()
    except BaseException:
        _abandon(trail, spill)
        raise
    result.revisions = trail.revisions
    return result


def _part(spill: RowSpill, result: ShardResult) -> list[Path]:
    """The shard's staged part; none when a full or read-only disk refuses it: the run stops (as at
    any write the disk refuses), and the tables read the shard's documents themselves."""
    try:
        return spill.finish()
    except (OSError, pl.exceptions.PolarsError) as exc:
        stopped = refused(exc, spill.trail.out_root)
        if stopped is None:
            raise
        result.stopped = result.stopped or stopped
        return []


def worker_died(ref: ingest.InputRef, out_root: Path) -> ShardResult:
    """The record of an input whose worker process died while processing it."""
    result = ShardResult()
    outcome = quarantined_file(ref.name, ref.size, Reason.WORKER_DIED,
                               f"the worker process died while processing this input ({ref.size} bytes); "
                               "killed for lack of memory?")
    trail = ShardTrail(out_root)
    _emit(ref, outcome, trail, result)
    return _committed(trail, result)


def _window(refs: list[ingest.InputRef], ctx: RunContext, prior, inputs: ShardInputs) -> Window:
    """The shard's inputs read whole, read and detected a window at a time (flows/core/window.py)."""
    def whole(ref: ingest.InputRef) -> bool:
        return (not (ref.ignored or ref.parts or ref.companion or ref.problem)
                and ref.size < stream_limit(ref, ctx.settings)
                and ref.size * MEMORY_PER_INPUT_BYTE <= memory_budget(ctx.settings))

    def unchanged(ref: ingest.InputRef, sha: str) -> bool:
        return prior is not None and prior.unchanged(ref.key, sha, ctx.fingerprint, inputs.context(ref)[1])

    return Window(refs, whole, inputs.read, unchanged, ctx.settings.detect_threshold, ctx.settings.format)


def _one(ref, trail: ShardTrail, ctx, prior, inputs: ShardInputs, result: ShardResult, allow_shrink: bool,
         held: Held, loaded: Loaded | None = None) -> None:
    noted = note_only(ref)
    if noted is not None:
        held.later(functools.partial(result.files.append, noted))
        return
    if ref.parts:
        _group(ref, trail, ctx, prior, inputs, result, allow_shrink, held)
        return
    context_sha = None
    if ref.problem:
        outcome = quarantined_file(ref.name, ref.size, ref.problem, ref.detail)
    else:
        texts, context_sha = inputs.context(ref)
        outcome = None
        if ref.size >= stream_limit(ref, ctx.settings):
            emitter = _emitter(ref, trail, result, ctx.settings, allow_shrink)
            outcome = _streamed(ref, ctx, prior, inputs, context_sha, trail.out_root, emitter)
        if outcome is None or isinstance(outcome, ReadWhole):
            outcome = _noted(_whole(ref, ctx, prior, inputs, texts, context_sha, held.batch, loaded), outcome)
        if isinstance(outcome, FileRow):  # unchanged since an earlier run: its row only
            held.later(functools.partial(result.files.append, outcome))
            return
    held.later(functools.partial(_emit, ref, outcome, trail, result, ctx.settings, allow_shrink, context_sha))


def note_only(ref: ingest.InputRef) -> FileRow | None:
    """The row of an input that is only noted, never read (ignored, or a companion), else None."""
    if ref.ignored:
        return note_row(ref, FileStatus.IGNORED, ref.ignored)
    if ref.companion and not ref.parts:
        return note_row(ref, FileStatus.COMPANION, "context file for its folder's inputs")
    return None


def stream_limit(ref: ingest.InputRef, settings: Settings) -> int:
    """The size from which an input is read as a stream (a JSON export's lower limit applies to .json files)."""
    limit = settings.stream_text_bytes
    return min(limit, settings.stream_json_bytes) if ref.name.lower().endswith(".json") else limit


def _noted(outcome: FileOutcome | FileRow, whole: ReadWhole | None) -> FileOutcome | FileRow:
    """A whole read's outcome with the reason it was not streamed, when a stream was refused up front."""
    if whole is not None and isinstance(outcome, FileOutcome):
        outcome.detail = "; ".join(x for x in (outcome.detail, whole.note()) if x)
    return outcome


def _group(ref, trail: ShardTrail, ctx, prior, inputs: ShardInputs, result: ShardResult,
           allow_shrink: bool, held: Held) -> None:
    """The files of one conversation (a Slack channel's day files) as one unit of work. Its sessions are
    recorded under the group's key (its folder); the ledger still gets one row per file. A group is read
    whole: above the streaming threshold its rows say so, above the memory budget it is quarantined."""
    size = sum(part.size for part in ref.parts)
    if size * MEMORY_PER_INPUT_BYTE > memory_budget(ctx.settings):
        held.later(functools.partial(result.files.extend, _too_large_group(ref, size, ctx.settings, inputs)))
        return
    datas: list[bytes | None] = []
    for part in ref.parts:
        if part.problem:
            datas.append(None)
            continue
        try:
            datas.append(inputs.read(part))
        except IngestError as exc:
            if exc.transient:
                raise  # Prefect retries the shard
            datas.append(None)
    shas = [input_sha256(d) if d is not None else None for d in datas]
    texts, context_sha = inputs.context(ref.parts[0])
    if (prior is not None and not prior.held(ref.key)
            and all(sha is not None and prior.unchanged(p.key, sha, ctx.fingerprint, context_sha)
                    for p, sha in zip(ref.parts, shas, strict=True))):
        held.later(functools.partial(result.files.extend, [
            note_row(part, FileStatus.SKIPPED, UNCHANGED, sha, context_sha)
            for part, sha in zip(ref.parts, shas, strict=True)]))
        return
    outcome = process_group([(d, p.name) for d, p in zip(datas, ref.parts, strict=True)], ref.name, ctx, texts,
                            held.batch)
    if outcome is None:  # its grammar reads each file on its own
        for part in ref.parts:
            _one(part, trail, ctx, prior, inputs, result, allow_shrink, held)
        return
    if size >= stream_limit(ref, ctx.settings):  # said in its rows: no silent hand-over to the whole read
        _noted(outcome, ReadWhole(f"a conversation over {len(ref.parts)} files is read whole"))
    held.later(functools.partial(_group_rows, ref, outcome, shas, trail, result, ctx.settings, allow_shrink,
                                 context_sha))


def _too_large_group(ref, size: int, settings: Settings, inputs: ShardInputs) -> list[FileRow]:
    """Each file of a conversation too large to read whole, quarantined ``too_large`` (hashed as a stream,
    never held)."""
    budget = memory_budget(settings)
    detail = (f"part of the conversation {ref.name} ({len(ref.parts)} files, {size} bytes), which would need about "
              f"{size * MEMORY_PER_INPUT_BYTE} bytes of memory read whole, more than the budget of {budget} "
              "(memory_budget_bytes)")
    rows = []
    for part in ref.parts:
        try:
            sha = inputs.stream_sha256(part)[0]
        except IngestError as exc:
            if exc.transient:
                raise  # Prefect retries the shard
            sha = None
        except OSError:
            sha = None  # its reason stays the size: it would not be read whole either way
        rows.append(FileRow(part.key, part.recorded, sha, part.size, None, FileStatus.QUARANTINED,
                            [Reason.TOO_LARGE.value], detail, 0, 0.0, None))
    return rows


def _group_rows(ref, outcome: FileOutcome, shas: list[str | None], trail: ShardTrail, result: ShardResult,
                settings: Settings, allow_shrink: bool, context_sha: str | None) -> None:
    """Stage a conversation's sessions under the group's key, and one ledger row per file."""
    _emit(ref, outcome, trail, result, settings, allow_shrink, context_sha)
    result.files.pop()  # the group's own row: one row per file instead
    share = round(outcome.seconds / len(ref.parts), 6)
    for i, (part, sha) in enumerate(zip(ref.parts, shas, strict=True)):
        own = part.detail
        status, reasons = FileStatus(outcome.status), outcome.reasons
        if not sha:  # not read: its problem from ingest, or the read's
            status, reasons = FileStatus.QUARANTINED, [part.problem or Reason.UNREADABLE.value]
        elif part.name in outcome.part_failures:  # read but not decoded: the conversation has a gap here
            (reason, own), status = outcome.part_failures[part.name], FileStatus.QUARANTINED
            reasons = [reason]
        detail = f"part of the conversation {ref.name} ({len(ref.parts)} files), whose sessions are recorded there"
        result.files.append(FileRow(part.key, part.recorded, sha, part.size, outcome.grammar, status, reasons,
                                    scrub_name("; ".join(x for x in (own, outcome.detail, detail) if x)),
                                    len(outcome.sessions) if i == 0 else 0, share, context_sha))


def _whole(ref, ctx, prior, inputs: ShardInputs, texts, context_sha, batch: Batch,
           loaded: Loaded | None = None) -> FileOutcome | FileRow:
    """An input read whole: quarantined when it would not fit the memory budget, its skipped row when
    unchanged, else processed into the shard's batch (``loaded``: read, decoded and detected by the
    shard's window)."""
    budget = memory_budget(ctx.settings)
    if ref.size * MEMORY_PER_INPUT_BYTE > budget:
        return quarantined_file(ref.name, ref.size, Reason.TOO_LARGE,
                                f"{ref.size} bytes would need about {ref.size * MEMORY_PER_INPUT_BYTE} bytes of "
                                f"memory read whole, more than the budget of {budget} (memory_budget_bytes)")
    if loaded is None:
        try:
            loaded = Loaded(inputs.read(ref), None, None)
        except IngestError as exc:
            if exc.transient:
                raise  # Prefect retries the shard
            return quarantined_file(ref.name, ref.size, exc.reason, str(exc))
    data, decoded = loaded.data, loaded.decoded
    if prior is not None:
        try:  # decoded once: the hash the ledger keys on is the decoded text's, and processing reads it
            decoded = decoded or decode(data, ref.name)
            sha = decoded.sha256
        except IngestError:
            sha = input_sha256(data)
        if prior.unchanged(ref.key, sha, ctx.fingerprint, context_sha):
            return note_row(ref, FileStatus.SKIPPED, UNCHANGED, sha, context_sha)
    return process_bytes(data, ref.name, ctx, texts, siblings=ref.siblings, decoded=decoded, batch=batch,
                         detection=loaded.detection)


UNCHANGED = "unchanged since an earlier run with the same settings"


def _streamed(ref, ctx, prior, inputs: ShardInputs, context_sha, out_root: Path,
              emitter) -> FileOutcome | FileRow | ReadWhole | None:
    """A large input through its grammar's streamed read (a JSON export's conversations, or text in
    chunks), its skipped row when unchanged, ``ReadWhole`` when it is read whole instead (why goes into its
    row: a database, a grammar with no streamed read, a stream refused up front), or None when no grammar
    is detected (the whole read records why). ``emitter`` stages a session as soon as it is done, for the
    routes that hand them on one by one."""
    from parsers import sqlite

    try:
        sha, size, encoding = inputs.stream_sha256(ref)
        if prior is not None and prior.unchanged(ref.key, sha, ctx.fingerprint, context_sha):
            return note_row(ref, FileStatus.SKIPPED, UNCHANGED, sha, context_sha)
        with ingest.open_binary(ref, inputs.zips) as fp:
            head = fp.read(DETECT_SAMPLE)
            if sqlite.is_sqlite(head):
                return ReadWhole("a database is read whole: its text is its tables, rendered")
            try:
                detection = registry.detect(detection_sample(head), ref.name, threshold=ctx.settings.detect_threshold,
                                            forced=ctx.settings.format)
            except ReconstructError:
                return None  # the whole read records why
            source = SourceText("", ref.name, sha, size, encoding, siblings=ref.siblings)
            streamed = None
            if size >= ctx.settings.stream_json_bytes:
                source_json = jsonstream.with_companions(source, inputs.context(ref)[0])
                streamed = jsonstream.stream_json_input(lambda: ingest.open_binary(ref, inputs.zips), source_json,
                                                        detection, ctx, out_root, emitter, ref.key)
            if streamed is None and size >= ctx.settings.stream_text_bytes:
                streamed = spool.stream_text_input(lambda: ingest.open_binary(ref, inputs.zips), source, detection,
                                                   ctx, out_root)
            if streamed is None:  # said in its ledger row: no silent hand-over to the whole read
                return ReadWhole(f"the {detection.grammar} grammar has no streamed read")
            return streamed
    except OSError as exc:
        if refused(exc, out_root) or _under(exc.filename, out_root):
            raise  # the output failed, not the input: the shard stops and records it
        return quarantined_file(ref.name, ref.size, Reason.UNREADABLE, f"reading it as a stream failed: {exc}")


def _under(name, root: Path) -> bool:
    """Whether an error's file name lies under ``root`` (the output root)."""
    return isinstance(name, str) and Path(name).is_relative_to(root)


def _mass(doc_bytes: bytes) -> tuple[int, int] | None:
    """(interactions, content characters) of an accepted document, None when it is not one."""
    try:
        interactions = orjson.loads(doc_bytes)["artifacts"]["Chatthistorik"]["interactions"]
        return len(interactions), sum(len(i["content"]) for i in interactions)
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def _latch(old: bytes, s, threshold: float) -> str | None:
    """Why replacing ``old`` with session ``s`` trips the mass latch (seed 003), or None."""
    return _latch_mass(_mass(old), s, threshold)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _emit(ref: ingest.InputRef, outcome: FileOutcome, trail: ShardTrail, result: ShardResult,
          settings: Settings | None = None, allow_shrink: bool = False, context_sha: str | None = None) -> None:
    """Stage the input's documents and records in the shard's batch, and its ledger rows."""
    started = time.perf_counter()
    finish(outcome)
    file_rel = emit.quarantine_relpath(ref.key, None)
    if not outcome.reasons:  # processed without a file-level failure: an old record would be stale
        _remove_stale(trail, file_rel)
    if outcome.status == FileStatus.QUARANTINED and not outcome.sessions:
        trail.batch.stage_changed(trail.resolve(file_rel), emit.quarantine_record({
            "status": FileStatus.QUARANTINED, "source": ref.name, "sha256": outcome.sha256,
            "reasons": outcome.reasons, "detail": scrub_name(outcome.detail),
            "grammarCandidates": outcome.detection.scores if outcome.detection else None,
        }))
    elif outcome.detail and outcome.reasons:
        trail.batch.stage_changed(trail.resolve(file_rel), emit.quarantine_record({
            "status": outcome.status, "source": ref.name, "sha256": outcome.sha256,
            "reasons": outcome.reasons, "detail": scrub_name(outcome.detail),
        }))
    result.pending.extend((ref, s) for s in (() if outcome.emitted else outcome.sessions))
    result.unsettled.extend(outcome.staged)  # the streamed batches' rows: keyed once their documents land
    outcome.seconds += time.perf_counter() - started
    result.files.append(_file_row(ref, outcome, context_sha))


def _settle(trail: ShardTrail, result: ShardResult, settings: Settings, allow_shrink: bool,
            ledger_path: Path | None, run_id: str | None, spill: RowSpill | None = None,
            keep: HeldSpill | None = None) -> None:
    """Write or defer the shard's staged sessions, their keys claimed all at once (flows/core/snapshots.py)."""
    pending = result.pending
    keys = [keep.key(i, s) if keep is not None else snapshots.key_of(s) for i, (_, s) in enumerate(pending)]
    resolved = snapshots.aliases(ledger_path, {k for k in keys if snapshots.is_scoped(k)})
    keys = [resolved.get(k, k) for k in keys]
    keyed: dict[str, list[str]] = {}  # each key's sessions, as their source sha256 (what the claim reads)
    for i, (key, (_, s)) in enumerate(zip(keys, pending, strict=True)):
        if key is not None:
            keyed.setdefault(key, []).append(keep.source(i, s) if keep is not None else snapshots.source_sha(s))
    settled = 0
    try:
        plan = snapshots.plan(keyed, ledger_path, run_id, result.part)
        # printed a batch at a time, before a streamed document moves
        # (a batch of written-out sessions gets its bytes and rows back as the prints reach it, before
        # the loop does: a print is only made of a session already taken from ``items``)
        items = keep.restored(pending) if keep is not None else iter(pending)
        found = snapshots.prints_in_batches((key, s) for key, (_, s) in zip(keys, items, strict=True))
        for key, (ref, s), prints in zip(keys, pending, found, strict=True):
            if key in plan.defer:
                _defer(ref, s, key, trail, result, prints)
            else:
                _emit_session(ref, s, trail, result, settings, allow_shrink, key, prints)
            settled += 1
            s.encoded = s.rows = None  # staged on disk: the shard no longer holds its bytes nor its rows
            if spill is not None:
                spill.added(s.interactions)
    finally:  # what did not land stays pending: a shard that stops drops its inputs' rows (_drop_unsettled)
        result.pending = pending[settled:]


def _drop_unsettled(result: ShardResult) -> None:
    """A shard that stops before its staged sessions land: the rows of their inputs go, so that no input
    is recorded done without its documents (the next run reads it again; a document that did land
    keeps its session row and is not written again)."""
    keys = {key for ref, _ in result.pending for key in (ref.key, *(part.key for part in ref.parts))}
    result.files = [f for f in result.files if f.source_key not in keys]
    result.pending.clear()


def _settle_rows(trail: ShardTrail, result: ShardResult) -> None:
    """The dataset rows the JSON stream's workers staged, keyed by where their documents landed (a
    deferred snapshot, a duplicate or a latched document: its rows are dropped; the merged document's
    rows come with it)."""
    unsettled, result.unsettled = result.unsettled, []
    for parts, sessions in unsettled:
        trail.rows.staged.extend(settle(parts, [result.landed.get(id(s)) for s in sessions]))
    result.landed.clear()


def _discard_rows(result: ShardResult) -> None:
    """A shard that stops before its sessions land leaves no staged rows of its streamed batches."""
    for parts, _ in result.unsettled:
        parts.discard()
    result.unsettled.clear()
    result.landed.clear()


def _session_row(ref: ingest.InputRef, s, rel: str | None, sha: str | None, key: str | None) -> SessionRow:
    return SessionRow(
        ref.key, s.ordinal, s.session_id, s.session_id_raw, SessionStatus(s.status), s.reasons,
        scrub_name(s.detail), rel, sha, s.interactions, s.source_turns, s.characters, round(s.seconds, 6),
        s.unaccounted, s.declared, s.drift, key,
    )


def _emit_session(ref: ingest.InputRef, s, trail: ShardTrail, result: ShardResult, settings: Settings | None,
                  allow_shrink: bool, key: str | None = None, found: snapshots.Prints | None = None) -> None:
    """Stage one session's document or record, and its ledger row (and its snapshot, when written;
    ``found``: its index prints, when its key is scoped)."""
    rel, sha = _session(ref, s, trail, result, settings, allow_shrink, key)
    result.landed[id(s)] = (rel, sha) if rel is not None and sha is not None else None
    if key is not None and sha is not None:
        snapshot = snapshots.snapshot_row(key, s, sha)
        result.snapshots.append(snapshot)
        # one snapshot: every message is new (the source's own count is its independent turn count)
        result.reconciliation.append(ReconciliationRow(key, snapshot.source_sha256, s.source_turns, s.interactions,
                                                       s.interactions, 0, 0, 0))
        if found is not None:
            result.prints.append(found)
    result.sessions.append(_session_row(ref, s, rel, sha, key))


def _defer(ref: ingest.InputRef, s, key: str, trail: ShardTrail, result: ShardResult,
           found: snapshots.Prints | None) -> None:
    """A session whose key has other snapshots: kept as a blob, its key merged after the shards."""
    rel = emit.document_relpath(key, s.session_id)
    if found is not None:
        result.prints.append(found)
    result.snapshots.append(snapshots.snapshot_row(key, s, snapshots.keep_snapshot(trail.out_root, s)))
    result.deferred.append(key)
    _migrate(ref, s, rel, trail)
    _remove_stale(trail, emit.quarantine_relpath(ref.key, s.ordinal))
    s.detail = "; ".join(x for x in (s.detail, "a snapshot of its key: merged with the others after the shards") if x)
    result.sessions.append(_session_row(ref, s, rel, None, key))


def _migrate(ref: ingest.InputRef, s, rel: str, trail: ShardTrail) -> str:
    """Move the session's document of the layout before keys (and its key's document under another
    session id) to ``rel`` as recorded revisions; returns the note for ``rel``."""
    old = emit.legacy_relpath(ref.key, s.session_id, s.ordinal)
    legacy = [old] if old != rel and os.path.isfile(os.path.join(trail.out_root, old)) else []
    others = [] if trail.absent(rel) else snapshots.others_in_folder(trail.out_root, rel)
    return snapshots.move_here(trail, rel, legacy + others)


def _emitter(ref: ingest.InputRef, trail: ShardTrail, result: ShardResult, settings: Settings, allow_shrink: bool):
    """Stage a session of one input, for a route that hands its sessions on as they are done."""
    return lambda s: result.pending.append((ref, s))


def _session(ref, s, trail: ShardTrail, result: ShardResult, settings: Settings | None,
             allow_shrink: bool, key: str | None = None) -> tuple[str | None, str | None]:
    """Stage one session's document (or its quarantine record); returns its (path, sha256) when written."""
    if s.spool is not None:
        return _spooled(ref, s, trail, result, settings, allow_shrink, key)
    record = emit.quarantine_relpath(ref.key, s.ordinal)
    if s.encoded is None:
        trail.batch.stage_changed(trail.resolve(record), emit.quarantine_record({
            "status": SessionStatus.QUARANTINED, "source": ref.name, "ordinal": s.ordinal, "sessionId": s.session_id,
            "reasons": s.reasons, "detail": scrub_name(s.detail), "failures": s.failures,
            "rejectedDocument": s.document,
        }))
        return record, None
    rel = emit.document_relpath(key, s.session_id)
    target = trail.resolve(rel)
    old = None if trail.absent(rel) else _read(target)
    note, latched = _migrate(ref, s, rel, trail), None
    if old is not None and old != s.encoded and settings is not None:
        latched = _latch(old, s, settings.latch_threshold(ref.key.split("/", 1)[0]))
        if latched and allow_shrink:
            # the override is on record: in the ledger detail and in the revision note
            note = "; ".join(x for x in (note, f"allow-shrink: {latched}") if x)
            s.detail = "; ".join(x for x in (s.detail, f"mass latch overridden (--allow-shrink): {latched}") if x)
            latched = None
    if latched:
        _hold_back(ref, s, trail, old, latched, trail.resolve(record), rel)
        return record, None
    try:
        sha, changed = trail.document(rel, s.encoded, old, note=note, rows=s.rows, target=target)
    except OSError as exc:
        if refused(exc, trail.out_root):
            raise
        s.status, s.reasons, s.detail = SessionStatus.QUARANTINED, [Reason.WRITE_ERROR.value], str(exc)
        return None, None
    _remove_stale(trail, record)
    result.written += changed
    result.unchanged += not changed
    return rel, sha


def _remove_stale(trail: ShardTrail, rel: str) -> None:
    """Remove a quarantine record its input no longer earns (the input was fixed) once the shard's
    writes are in place; most inputs have none, so the path is resolved only when it exists."""
    if os.path.exists(os.path.join(trail.out_root, rel)):
        trail.batch.remove_after(trail.resolve(rel))


def _hold_back(ref, s, trail: ShardTrail, old: bytes, latched: str, record: Path, rel: str) -> None:
    """The mass latch: the accepted document stays; the smaller one is kept aside with both masses."""
    before = _mass(old)
    trail.batch.stage_changed(record, emit.quarantine_record({
        "status": SessionStatus.QUARANTINED, "source": ref.name, "ordinal": s.ordinal, "sessionId": s.session_id,
        "reasons": [Reason.MASS_LATCH.value], "detail": latched,
        "acceptedDocument": rel,
        "mass": {"accepted": {"interactions": before[0], "characters": before[1]},
                 "rejected": {"interactions": s.interactions, "characters": s.characters}},
        "rejectedDocument": orjson.loads(s.encoded),
    }))
    s.status, s.reasons, s.detail = SessionStatus.QUARANTINED, [Reason.MASS_LATCH.value], latched


def _spooled(ref, s, trail: ShardTrail, result: ShardResult, settings: Settings | None,
             allow_shrink: bool, key: str) -> tuple[str | None, str | None]:
    """A streamed session's document, finished by the worker in a temporary file: staged as it is,
    never read into memory; the mass latch reads the accepted document line by line."""
    rel = emit.document_relpath(key, s.session_id)
    record = emit.quarantine_relpath(ref.key, s.ordinal)
    target = trail.resolve(rel)
    old_sha, sha = _file_sha(target), s.spool_sha256
    note, latched = _migrate(ref, s, rel, trail), None
    if old_sha not in (None, sha) and settings is not None:
        latched = _latch_mass(emit.document_mass(target), s, settings.latch_threshold(ref.key.split("/", 1)[0]))
        if latched and allow_shrink:
            note = "; ".join(x for x in (note, f"allow-shrink: {latched}") if x)
            s.detail = "; ".join(x for x in (s.detail, f"mass latch overridden (--allow-shrink): {latched}") if x)
            latched = None
    if latched:
        Path(s.spool).unlink(missing_ok=True)
        if s.turns is not None:
            s.turns.discard()
        trail.batch.stage_changed(trail.resolve(record), emit.quarantine_record({
            "status": SessionStatus.QUARANTINED, "source": ref.name, "ordinal": s.ordinal, "sessionId": s.session_id,
            "reasons": [Reason.MASS_LATCH.value], "detail": latched, "acceptedDocument": rel,
            "rejectedDocument": "not kept: a streamed document"}))
        s.status, s.reasons, s.detail = SessionStatus.QUARANTINED, [Reason.MASS_LATCH.value], latched
        return record, None
    warned = len(trail.warnings)
    changed = trail.document_file(rel, Path(s.spool), sha, old_sha, note=note, target=target, envelope=s.document,
                                  rows=s.turns)
    if len(trail.warnings) > warned:  # on the session's ledger row, not only in a log
        s.detail = "; ".join(x for x in (s.detail, *trail.warnings[warned:]) if x)
    _remove_stale(trail, record)
    result.written += changed
    result.unchanged += not changed
    return rel, sha


def _file_sha(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _latch_mass(before: tuple[int, int] | None, s, threshold: float) -> str | None:
    """``_latch`` with the accepted document's mass already known."""
    if before is None:
        return None
    (old_i, old_c), (new_i, new_c) = before, (s.interactions, s.characters)
    if (old_i and new_i < threshold * old_i) or (old_c and new_c < threshold * old_c):
        return (f"interactions {old_i}->{new_i}, characters {old_c}->{new_c}, "
                f"below {threshold:g} of the accepted document")
    return None
