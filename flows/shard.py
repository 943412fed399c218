"""One shard of input files, end to end, without Prefect: read, process, write, report.

This is the unit a Prefect task runs (flows/pipeline.py) and what the benchmark times as the
core pipeline. It writes documents and quarantine records itself and returns the ledger rows;
the ledger is written by the flow's main process only.
"""

from __future__ import annotations

import errno
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import orjson

from models.errors import IngestError, Reason
from models.records import SourceText
from models.settings import Settings
from models.status import FileStatus, SessionStatus
from normalizers.assemble import RunContext
from normalizers.secrets import scrub_name
from parsers.text import input_sha256, sha256_text

from . import emit, ingest, revisions, spool
from .ledger import FileRow, Ledger, RevisionRow, SessionRow
from .process import DETECT_SAMPLE, FileOutcome, process_bytes, process_group, process_stream, quarantined_file


@dataclass(slots=True)
class ShardResult:
    files: list[FileRow] = field(default_factory=list)
    sessions: list[SessionRow] = field(default_factory=list)
    written: int = 0
    unchanged: int = 0
    revisions: list[RevisionRow] = field(default_factory=list)
    stopped: tuple[int, str] | None = None  # (errno, message) of a full or read-only disk: the run stops

    def merge(self, other: ShardResult) -> None:
        self.stopped = self.stopped or other.stopped
        self.files.extend(other.files)
        self.sessions.extend(other.sessions)
        self.written += other.written
        self.unchanged += other.unchanged
        self.revisions.extend(other.revisions)


# A disk that takes no more writes: the run stops (marked failed) instead of quarantining every document.
DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}

# Peak memory to process an input read whole, per input byte (decoded text, turns, documents).
MEMORY_PER_INPUT_BYTE = 16


def memory_budget(settings: Settings) -> int:
    """Bytes one worker may spend on one input: the setting, else this machine's memory shared
    between the workers and the main process."""
    if settings.memory_budget_bytes is not None:
        return settings.memory_budget_bytes
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 * 1024**3
    return total // (settings.workers + 1)


class ShardInputs:
    """The shard's reads: each zip opened once, each folder's companions read once."""

    def __init__(self, companions: dict[str, ingest.InputRef]) -> None:
        self.companions = companions
        self.zips = ingest.ZipCache()
        self._context: dict[PurePosixPath, tuple[dict[str, str], str | None]] = {}

    def read(self, ref: ingest.InputRef) -> bytes:
        return ingest.read(ref, self.zips)

    def context(self, ref: ingest.InputRef) -> tuple[dict[str, str], str | None]:
        """The companion texts for the input's folder and their combined hash (None without any)."""
        folder = PurePosixPath(ref.key).parent
        if folder not in self._context:
            texts = companions_for(ref, self.companions, self.read)
            digest = hashlib.sha256()
            for name in sorted(texts):
                digest.update(f"{name}\0{sha256_text(texts[name])}\0".encode())
            self._context[folder] = (texts, digest.hexdigest() if texts else None)
        return self._context[folder]

    def close(self) -> None:
        self.zips.close()


def companions_for(ref: ingest.InputRef, companions: dict[str, ingest.InputRef], read=ingest.read) -> dict[str, str]:
    """Companion texts (users.json...) from the input's folder or the nearest folder above it."""
    if not companions:
        return {}
    found: dict[str, str] = {}
    folder = PurePosixPath(ref.key).parent
    for parent in (folder, *folder.parents):
        for key, comp in companions.items():
            cpath = PurePosixPath(key)
            name = PurePosixPath(comp.name).name
            if cpath.parent == parent and name not in found:
                try:
                    found[name] = read(comp).decode("utf-8-sig", errors="replace")
                except IngestError:
                    continue
    return found


def _file_row(ref: ingest.InputRef, outcome: FileOutcome, context_sha: str | None = None) -> FileRow:
    return FileRow(ref.key, ref.name, outcome.sha256, outcome.size, outcome.grammar, FileStatus(outcome.status),
                   outcome.reasons, scrub_name(outcome.detail), len(outcome.sessions), round(outcome.seconds, 6),
                   context_sha)


def _note_row(ref: ingest.InputRef, status: FileStatus, detail: str, sha: str | None = None,
              context_sha: str | None = None) -> FileRow:
    return FileRow(ref.key, ref.name, sha, ref.size, None, status, [], detail, 0, 0.0, context_sha)


def run_shard(
    refs: list[ingest.InputRef],
    out_root: Path,
    settings: Settings,
    *,
    companions: dict[str, ingest.InputRef] | None = None,
    ledger_path: Path | None = None,
    force: bool = False,
    allow_shrink: bool = False,
) -> ShardResult:
    """Process every input of a shard; a broken input is quarantined and the shard goes on.

    ``allow_shrink`` lets a document replace an accepted one that held much more (the mass latch).
    """
    ctx = RunContext.from_settings(settings)
    ledger = Ledger(ledger_path, read_only=True) if (ledger_path is not None and not force
                                                     and ledger_path.is_file()) else None
    inputs = ShardInputs(companions or {})
    result = ShardResult()
    try:
        for ref in refs:
            if emit.stop_requested(out_root):  # interrupted: what is done is returned and recorded
                break
            _one(ref, out_root, ctx, ledger, inputs, result, allow_shrink)
    except OSError as exc:
        if exc.errno not in DISK_FULL:
            raise
        result.stopped = (exc.errno, f"{exc.strerror} ({exc.filename or out_root})")  # what was written is kept
    finally:
        inputs.close()
        if ledger is not None:
            ledger.close()
    return result


def worker_died(ref: ingest.InputRef, out_root: Path) -> ShardResult:
    """The record of an input whose worker process died while processing it."""
    result = ShardResult()
    outcome = quarantined_file(ref.name, ref.size, Reason.WORKER_DIED,
                               f"the worker process died while processing this input ({ref.size} bytes); "
                               "killed for lack of memory?")
    _emit(ref, outcome, out_root, result)
    return result


def _one(ref, out_root, ctx, ledger, inputs: ShardInputs, result: ShardResult, allow_shrink: bool) -> None:
    if ref.ignored:
        result.files.append(_note_row(ref, FileStatus.IGNORED, ref.ignored))
        return
    if ref.parts:
        _group(ref, out_root, ctx, ledger, inputs, result, allow_shrink)
        return
    if ref.companion:
        result.files.append(_note_row(ref, FileStatus.COMPANION, "context file for its folder's inputs"))
        return
    context_sha = None
    if ref.problem:
        outcome = quarantined_file(ref.name, ref.size, ref.problem, ref.detail)
    else:
        texts, context_sha = inputs.context(ref)
        outcome = None
        if ref.size >= min(ctx.settings.stream_bytes, ctx.settings.stream_text_bytes):
            outcome = _streamed(ref, ctx, ledger, inputs, context_sha, result, out_root)
        if outcome is None:
            outcome = _whole(ref, ctx, ledger, inputs, texts, context_sha, result)
        if outcome == "skipped":
            return
    _emit(ref, outcome, out_root, result, ctx.settings, allow_shrink, context_sha)


def _group(ref, out_root, ctx, ledger, inputs: ShardInputs, result: ShardResult, allow_shrink: bool) -> None:
    """The files of one conversation (a Slack channel's day files) as one unit of work. Its sessions are
    recorded under the group's key (its folder); the ledger still gets one row per file."""
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
    if (ledger is not None and not ledger.held_by_latch(ref.key)
            and all(sha is not None and ledger.done_before(p.key, sha, ctx.fingerprint, context_sha)
                    for p, sha in zip(ref.parts, shas, strict=True))):
        for part, sha in zip(ref.parts, shas, strict=True):
            result.files.append(_note_row(part, FileStatus.SKIPPED, UNCHANGED, sha, context_sha))
        return
    outcome = process_group([(d, p.name) for d, p in zip(datas, ref.parts, strict=True)], ref.name, ctx, texts)
    if outcome is None:  # its grammar reads each file on its own
        for part in ref.parts:
            _one(part, out_root, ctx, ledger, inputs, result, allow_shrink)
        return
    _emit(ref, outcome, out_root, result, ctx.settings, allow_shrink, context_sha)
    result.files.pop()  # the group's own row: one row per file instead
    share = round(outcome.seconds / len(ref.parts), 6)
    for i, (part, sha) in enumerate(zip(ref.parts, shas, strict=True)):
        status, reasons = ((FileStatus(outcome.status), outcome.reasons) if sha else
                           (FileStatus.QUARANTINED, [part.problem or Reason.UNREADABLE.value]))
        detail = f"part of the conversation {ref.name} ({len(ref.parts)} files), whose sessions are recorded there"
        result.files.append(FileRow(part.key, part.name, sha, part.size, outcome.grammar, status, reasons,
                                    scrub_name("; ".join(x for x in (outcome.detail, detail) if x)),
                                    len(outcome.sessions) if i == 0 else 0, share, context_sha))


def _whole(ref, ctx, ledger, inputs: ShardInputs, texts, context_sha, result: ShardResult):
    """An input read whole: quarantined when it would not fit the memory budget, skipped when
    unchanged, else processed."""
    budget = memory_budget(ctx.settings)
    if ref.size * MEMORY_PER_INPUT_BYTE > budget:
        return quarantined_file(ref.name, ref.size, Reason.TOO_LARGE,
                                f"{ref.size} bytes would need about {ref.size * MEMORY_PER_INPUT_BYTE} bytes of "
                                f"memory read whole, more than the budget of {budget} (memory_budget_bytes)")
    try:
        data = inputs.read(ref)
    except IngestError as exc:
        if exc.transient:
            raise  # Prefect retries the shard
        return quarantined_file(ref.name, ref.size, exc.reason, str(exc))
    if ledger is not None:
        sha = input_sha256(data)
        if ledger.done_before(ref.key, sha, ctx.fingerprint, context_sha) and not ledger.held_by_latch(ref.key):
            result.files.append(_note_row(ref, FileStatus.SKIPPED, UNCHANGED, sha, context_sha))
            return "skipped"
    return process_bytes(data, ref.name, ctx, texts, siblings=ref.siblings)


UNCHANGED = "unchanged since an earlier run with the same settings"


def _streamed(ref, ctx, ledger, inputs: ShardInputs, context_sha, result: ShardResult, out_root: Path):
    """A large input through its grammar's streaming parser, or None to read it whole."""
    from parsers.text import sha256_stream

    try:
        with ingest.open_binary(ref, inputs.zips) as fp:
            sha, size, encoding = sha256_stream(iter(lambda: fp.read(1 << 20), b""))
        if (ledger is not None and ledger.done_before(ref.key, sha, ctx.fingerprint, context_sha)
                and not ledger.held_by_latch(ref.key)):
            result.files.append(_note_row(ref, FileStatus.SKIPPED, UNCHANGED, sha, context_sha))
            return "skipped"
        with ingest.open_binary(ref, inputs.zips) as fp:
            sample = fp.read(DETECT_SAMPLE).decode("utf-8-sig", errors="ignore")
            fp.seek(0)
            source = SourceText("", ref.name, sha, size, encoding, siblings=ref.siblings)
            text = None
            if size >= ctx.settings.stream_text_bytes:
                text = spool.stream_text_input(lambda: ingest.open_binary(ref, inputs.zips), source, sample, ctx,
                                               out_root)
            if text is None and size >= ctx.settings.stream_bytes:
                text = process_stream(fp, source, sample, ctx)
            return text
    except OSError:
        return None


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


def _emit(ref: ingest.InputRef, outcome: FileOutcome, out_root: Path, result: ShardResult,
          settings: Settings | None = None, allow_shrink: bool = False, context_sha: str | None = None) -> None:
    started = time.perf_counter()
    if not outcome.reasons:  # processed without a file-level failure: an old record would be stale
        emit.remove_stale(out_root, emit.quarantine_relpath(ref.key, None))
    if outcome.status == FileStatus.QUARANTINED and not outcome.sessions:
        rel = emit.quarantine_relpath(ref.key, None)
        emit.atomic_write(emit.resolve_inside(out_root, rel), emit.quarantine_record({
            "status": "quarantined", "source": ref.name, "sha256": outcome.sha256,
            "reasons": outcome.reasons, "detail": scrub_name(outcome.detail),
            "grammarCandidates": outcome.detection.scores if outcome.detection else None,
        }))
    elif outcome.detail and outcome.reasons:
        rel = emit.quarantine_relpath(ref.key, None)
        emit.atomic_write(emit.resolve_inside(out_root, rel), emit.quarantine_record({
            "status": outcome.status, "source": ref.name, "sha256": outcome.sha256,
            "reasons": outcome.reasons, "detail": scrub_name(outcome.detail),
        }))
    for s in outcome.sessions:
        latched = None
        if s.spool is not None:
            _emit_spooled(ref, s, out_root, result, settings, allow_shrink)
            continue
        if s.encoded is not None:
            rel = emit.document_relpath(ref.key, s.session_id, s.ordinal)
            target = emit.resolve_inside(out_root, rel)
            old = _read(target)
            note = ""
            if old is not None and old != s.encoded and settings is not None:
                dataset = ref.key.split("/", 1)[0]
                latched = _latch(old, s, settings.latch_threshold(dataset))
                if latched and allow_shrink:
                    # the override is on record: in the ledger detail and in the revision note
                    note = f"allow-shrink: {latched}"
                    override = f"mass latch overridden (--allow-shrink): {latched}"
                    s.detail = "; ".join(x for x in (s.detail, override) if x)
                    latched = None
        if latched:
            # the accepted document stays; the smaller one is kept aside with both masses
            before = _mass(old)
            rel = emit.quarantine_relpath(ref.key, s.ordinal)
            emit.atomic_write(emit.resolve_inside(out_root, rel), emit.quarantine_record({
                "status": "quarantined", "source": ref.name, "ordinal": s.ordinal, "sessionId": s.session_id,
                "reasons": [Reason.MASS_LATCH.value], "detail": latched,
                "acceptedDocument": emit.document_relpath(ref.key, s.session_id, s.ordinal),
                "mass": {"accepted": {"interactions": before[0], "characters": before[1]},
                         "rejected": {"interactions": s.interactions, "characters": s.characters}},
                "rejectedDocument": orjson.loads(s.encoded),
            }))
            s.status, s.reasons, s.detail = SessionStatus.QUARANTINED, [Reason.MASS_LATCH.value], latched
            sha = None
        elif s.encoded is not None:
            try:
                # blobs first (the old bytes, then the new): a revision is never indexed without them
                previous = revisions.put_blob(out_root, old) if old is not None and old != s.encoded else None
                sha = revisions.put_blob(out_root, s.encoded)
                changed = emit.atomic_write(target, s.encoded)
            except OSError as exc:
                if exc.errno in DISK_FULL:
                    raise
                s.status, s.reasons, s.detail = SessionStatus.QUARANTINED, [Reason.WRITE_ERROR.value], str(exc)
                rel, sha = None, None
            else:
                emit.remove_stale(out_root, emit.quarantine_relpath(ref.key, s.ordinal))
                result.written += changed
                result.unchanged += not changed
                result.revisions.append(RevisionRow(rel, sha, note, revisions.now(), previous))
        else:
            rel = emit.quarantine_relpath(ref.key, s.ordinal)
            emit.atomic_write(emit.resolve_inside(out_root, rel), emit.quarantine_record({
                "status": "quarantined", "source": ref.name, "ordinal": s.ordinal, "sessionId": s.session_id,
                "reasons": s.reasons, "detail": scrub_name(s.detail), "failures": s.failures,
                "rejectedDocument": s.document,
            }))
            sha = None
        result.sessions.append(_session_row(ref, s, rel, sha))
    outcome.seconds += time.perf_counter() - started
    result.files.append(_file_row(ref, outcome, context_sha))


def _session_row(ref: ingest.InputRef, s, rel: str | None, sha: str | None) -> SessionRow:
    return SessionRow(
        ref.key, s.ordinal, s.session_id, s.session_id_raw, SessionStatus(s.status), s.reasons,
        scrub_name(s.detail), rel, sha, s.interactions, s.source_turns, s.characters, round(s.seconds, 6),
        s.unaccounted, s.declared, s.drift,
    )


def _emit_spooled(ref: ingest.InputRef, s, out_root: Path, result: ShardResult, settings: Settings | None,
                  allow_shrink: bool) -> None:
    """A streamed session's document, finished in a temporary file: renamed into place (kept as a
    revision blob first), never read into memory; the mass latch reads the old document line by line."""
    rel = emit.document_relpath(ref.key, s.session_id, s.ordinal)
    target = emit.resolve_inside(out_root, rel)
    old_sha = _file_sha(target)
    note, sha = "", s.spool_sha256
    latched = None
    if old_sha is not None and old_sha != sha and settings is not None:
        latched = _latch_mass(emit.document_mass(target), s, settings.latch_threshold(ref.key.split("/", 1)[0]))
        if latched and allow_shrink:
            note = f"allow-shrink: {latched}"
            s.detail = "; ".join(x for x in (s.detail, f"mass latch overridden (--allow-shrink): {latched}") if x)
            latched = None
    if latched:
        Path(s.spool).unlink(missing_ok=True)
        emit.atomic_write(emit.resolve_inside(out_root, emit.quarantine_relpath(ref.key, s.ordinal)),
                          emit.quarantine_record({
                              "status": "quarantined", "source": ref.name, "ordinal": s.ordinal,
                              "sessionId": s.session_id, "reasons": [Reason.MASS_LATCH.value], "detail": latched,
                              "acceptedDocument": rel, "rejectedDocument": "not kept: a streamed document"}))
        s.status, s.reasons, s.detail = SessionStatus.QUARANTINED, [Reason.MASS_LATCH.value], latched
        result.sessions.append(_session_row(ref, s, None, None))
        return
    previous = revisions.put_blob_file(out_root, target, old_sha) if old_sha not in (None, sha) else None
    revisions.put_blob_file(out_root, Path(s.spool), sha)
    changed = emit.place_file(Path(s.spool), target) if old_sha != sha else False
    Path(s.spool).unlink(missing_ok=True)
    emit.remove_stale(out_root, emit.quarantine_relpath(ref.key, s.ordinal))
    result.written += changed
    result.unchanged += not changed
    result.revisions.append(RevisionRow(rel, sha, note, revisions.now(), previous))
    result.sessions.append(_session_row(ref, s, rel, sha))


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
