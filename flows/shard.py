"""One shard of input files, end to end, without Prefect: read, process, write, report.

This is the unit a Prefect task runs (flows/pipeline.py) and what the benchmark times as the
core pipeline. It writes documents and quarantine records itself and returns the ledger rows;
the ledger is written by the flow's main process only.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from models.errors import IngestError, Reason
from models.records import SourceText
from models.settings import Settings
from normalizers.assemble import RunContext

from . import emit, ingest
from .ledger import FileRow, Ledger, SessionRow
from .process import DETECT_SAMPLE, FileOutcome, process_bytes, process_stream, quarantined_file


@dataclass(slots=True)
class ShardResult:
    files: list[FileRow] = field(default_factory=list)
    sessions: list[SessionRow] = field(default_factory=list)
    written: int = 0
    unchanged: int = 0


def companions_for(ref: ingest.InputRef, companions: dict[str, ingest.InputRef]) -> dict[str, str]:
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
                    found[name] = ingest.read(comp).decode("utf-8-sig", errors="replace")
                except IngestError:
                    continue
    return found


def _file_row(ref: ingest.InputRef, outcome: FileOutcome) -> FileRow:
    return FileRow(ref.key, ref.name, outcome.sha256, outcome.size, outcome.grammar, outcome.status,
                   outcome.reasons, outcome.detail, len(outcome.sessions), round(outcome.seconds, 6))


def run_shard(
    refs: list[ingest.InputRef],
    out_root: Path,
    settings: Settings,
    *,
    companions: dict[str, ingest.InputRef] | None = None,
    ledger_path: Path | None = None,
    force: bool = False,
) -> ShardResult:
    """Process every input of a shard; a broken input is quarantined and the shard goes on."""
    ctx = RunContext.from_settings(settings)
    fingerprint = ctx.fingerprint
    ledger = Ledger(ledger_path) if (ledger_path is not None and not force) else None
    result = ShardResult()
    try:
        for ref in refs:
            _one(ref, out_root, ctx, fingerprint, ledger, companions or {}, result)
    finally:
        if ledger is not None:
            ledger.close()
    return result


def _one(ref, out_root, ctx, fingerprint, ledger, companions, result: ShardResult) -> None:
    if ref.companion:
        result.files.append(FileRow(ref.key, ref.name, None, ref.size, None, "companion", [],
                                    "context file for its folder's inputs", 0, 0.0))
        return
    if ref.problem:
        outcome = quarantined_file(ref.name, ref.size, ref.problem, ref.detail)
    elif ref.size >= ctx.settings.stream_bytes and (streamed := _streamed(ref, ctx, ledger, fingerprint, result)):
        if streamed == "skipped":
            return
        outcome = streamed
    else:
        try:
            data = ingest.read(ref)
        except IngestError as exc:
            if exc.transient:
                raise  # Prefect retries the shard
            outcome = quarantined_file(ref.name, ref.size, exc.reason, str(exc))
        else:
            if ledger is not None and _unchanged(ledger, ref, data, fingerprint):
                result.files.append(FileRow(ref.key, ref.name, _quick_sha(data), len(data), None, "skipped", [],
                                            "unchanged since an earlier run with the same settings", 0, 0.0))
                return
            outcome = process_bytes(data, ref.name, ctx, companions_for(ref, companions))
    _emit(ref, outcome, out_root, result)


def _streamed(ref, ctx, ledger, fingerprint, result: ShardResult):
    """A large input through its grammar's streaming parser, or None to read it whole."""
    from parsers.text import sha256_stream

    try:
        with ingest.open_binary(ref) as fp:
            sha, size, encoding = sha256_stream(iter(lambda: fp.read(1 << 20), b""))
        if ledger is not None and ledger.done_before(ref.key, sha, fingerprint):
            result.files.append(FileRow(ref.key, ref.name, sha, size, None, "skipped", [],
                                        "unchanged since an earlier run with the same settings", 0, 0.0))
            return "skipped"
        with ingest.open_binary(ref) as fp:
            sample = fp.read(DETECT_SAMPLE).decode("utf-8-sig", errors="ignore")
            fp.seek(0)
            source = SourceText("", ref.name, sha, size, encoding)
            return process_stream(fp, source, sample, ctx)
    except OSError:
        return None


def _quick_sha(data: bytes) -> str:
    from parsers.text import canonicalize, sha256_text

    try:
        return sha256_text(canonicalize(data.decode("utf-8-sig")))
    except UnicodeDecodeError:
        return hashlib.sha256(data).hexdigest()


def _unchanged(ledger: Ledger, ref, data: bytes, fingerprint: str) -> bool:
    return ledger.done_before(ref.key, _quick_sha(data), fingerprint)


def _emit(ref: ingest.InputRef, outcome: FileOutcome, out_root: Path, result: ShardResult) -> None:
    started = time.perf_counter()
    if outcome.status == "quarantined" and not outcome.sessions:
        rel = emit.quarantine_relpath(ref.key, None)
        emit.atomic_write(emit.resolve_inside(out_root, rel), emit.quarantine_record({
            "status": "quarantined", "source": ref.name, "sha256": outcome.sha256,
            "reasons": outcome.reasons, "detail": outcome.detail,
            "grammarCandidates": outcome.detection.scores if outcome.detection else None,
        }))
    elif outcome.detail and outcome.reasons:
        rel = emit.quarantine_relpath(ref.key, None)
        emit.atomic_write(emit.resolve_inside(out_root, rel), emit.quarantine_record({
            "status": outcome.status, "source": ref.name, "sha256": outcome.sha256,
            "reasons": outcome.reasons, "detail": outcome.detail,
        }))
    for s in outcome.sessions:
        if s.encoded is not None:
            rel = emit.document_relpath(ref.key, s.session_id, s.ordinal)
            try:
                changed = emit.atomic_write(emit.resolve_inside(out_root, rel), s.encoded)
            except OSError as exc:
                s.status, s.reasons, s.detail = "quarantined", [Reason.WRITE_ERROR.value], str(exc)
                rel, sha = None, None
            else:
                sha = hashlib.sha256(s.encoded).hexdigest()
                result.written += changed
                result.unchanged += not changed
        else:
            rel = emit.quarantine_relpath(ref.key, s.ordinal)
            emit.atomic_write(emit.resolve_inside(out_root, rel), emit.quarantine_record({
                "status": "quarantined", "source": ref.name, "ordinal": s.ordinal, "sessionId": s.session_id,
                "reasons": s.reasons, "detail": s.detail, "failures": s.failures, "rejectedDocument": s.document,
            }))
            sha = None
        result.sessions.append(SessionRow(
            ref.key, s.ordinal, s.session_id, s.session_id_raw, s.status, s.reasons, s.detail,
            rel, sha, s.interactions, s.source_turns, s.characters, round(s.seconds, 6),
        ))
    outcome.seconds += time.perf_counter() - started
    result.files.append(_file_row(ref, outcome))
