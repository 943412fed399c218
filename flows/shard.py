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

import orjson

from models.errors import IngestError, Reason
from models.records import SourceText
from models.settings import Settings
from normalizers.assemble import RunContext

from . import emit, ingest, revisions
from .ledger import FileRow, Ledger, RevisionRow, SessionRow
from .process import DETECT_SAMPLE, FileOutcome, process_bytes, process_group, process_stream, quarantined_file


@dataclass(slots=True)
class ShardResult:
    files: list[FileRow] = field(default_factory=list)
    sessions: list[SessionRow] = field(default_factory=list)
    written: int = 0
    unchanged: int = 0
    revisions: list[RevisionRow] = field(default_factory=list)


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
    allow_shrink: bool = False,
) -> ShardResult:
    """Process every input of a shard; a broken input is quarantined and the shard goes on.

    ``allow_shrink`` lets a document replace an accepted one that held much more (the mass latch).
    """
    ctx = RunContext.from_settings(settings)
    fingerprint = ctx.fingerprint
    ledger = Ledger(ledger_path) if (ledger_path is not None and not force) else None
    result = ShardResult()
    try:
        for ref in refs:
            _one(ref, out_root, ctx, fingerprint, ledger, companions or {}, result, allow_shrink)
    finally:
        if ledger is not None:
            ledger.close()
    return result


def _one(ref, out_root, ctx, fingerprint, ledger, companions, result: ShardResult, allow_shrink: bool) -> None:
    if ref.parts:
        _group(ref, out_root, ctx, fingerprint, ledger, companions, result, allow_shrink)
        return
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
    _emit(ref, outcome, out_root, result, ctx.settings, allow_shrink)


def _group(ref, out_root, ctx, fingerprint, ledger, companions, result: ShardResult, allow_shrink: bool) -> None:
    """The files of one conversation (a Slack channel's day files) as one unit of work. Its sessions are
    recorded under the group's key (its folder); the ledger still gets one row per file."""
    datas: list[bytes | None] = []
    for part in ref.parts:
        if part.problem:
            datas.append(None)
            continue
        try:
            datas.append(ingest.read(part))
        except IngestError as exc:
            if exc.transient:
                raise  # Prefect retries the shard
            datas.append(None)
    shas = [_quick_sha(d) if d is not None else None for d in datas]
    if (ledger is not None and not ledger.held_by_latch(ref.key)
            and all(sha is not None and ledger.done_before(p.key, sha, fingerprint) for p, sha in zip(
                ref.parts, shas, strict=True))):
        for part, sha in zip(ref.parts, shas, strict=True):
            result.files.append(FileRow(part.key, part.name, sha, part.size, None, "skipped", [],
                                        "unchanged since an earlier run with the same settings", 0, 0.0))
        return
    outcome = process_group([(d, p.name) for d, p in zip(datas, ref.parts, strict=True)], ref.name, ctx,
                            companions_for(ref.parts[0], companions))
    if outcome is None:  # its grammar reads each file on its own
        for part in ref.parts:
            _one(part, out_root, ctx, fingerprint, ledger, companions, result, allow_shrink)
        return
    _emit(ref, outcome, out_root, result, ctx.settings, allow_shrink)
    result.files.pop()  # the group's own row: one row per file instead
    share = round(outcome.seconds / len(ref.parts), 6)
    for i, (part, sha) in enumerate(zip(ref.parts, shas, strict=True)):
        status, reasons = ((outcome.status, outcome.reasons) if sha else
                           ("quarantined", [part.problem or Reason.UNREADABLE.value]))
        detail = f"part of the conversation {ref.name} ({len(ref.parts)} files), whose sessions are recorded there"
        result.files.append(FileRow(part.key, part.name, sha, part.size, outcome.grammar, status, reasons,
                                    "; ".join(x for x in (outcome.detail, detail) if x),
                                    len(outcome.sessions) if i == 0 else 0, share))


def _streamed(ref, ctx, ledger, fingerprint, result: ShardResult):
    """A large input through its grammar's streaming parser, or None to read it whole."""
    from parsers.text import sha256_stream

    try:
        with ingest.open_binary(ref) as fp:
            sha, size, encoding = sha256_stream(iter(lambda: fp.read(1 << 20), b""))
        if ledger is not None and ledger.done_before(ref.key, sha, fingerprint) and not ledger.held_by_latch(ref.key):
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
    return ledger.done_before(ref.key, _quick_sha(data), fingerprint) and not ledger.held_by_latch(ref.key)


def _mass(doc_bytes: bytes) -> tuple[int, int] | None:
    """(interactions, content characters) of an accepted document, None when it is not one."""
    try:
        interactions = orjson.loads(doc_bytes)["artifacts"]["Chatthistorik"]["interactions"]
        return len(interactions), sum(len(i["content"]) for i in interactions)
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def _latch(old: bytes, s, threshold: float) -> str | None:
    """Why replacing ``old`` with session ``s`` trips the mass latch (seed 003), or None."""
    before = _mass(old)
    if before is None:
        return None
    (old_i, old_c), (new_i, new_c) = before, (s.interactions, s.characters)
    if (old_i and new_i < threshold * old_i) or (old_c and new_c < threshold * old_c):
        return (f"interactions {old_i}->{new_i}, characters {old_c}->{new_c}, "
                f"below {threshold:g} of the accepted document")
    return None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _emit(ref: ingest.InputRef, outcome: FileOutcome, out_root: Path, result: ShardResult,
          settings: Settings | None = None, allow_shrink: bool = False) -> None:
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
        latched = None
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
            s.status, s.reasons, s.detail = "quarantined", [Reason.MASS_LATCH.value], latched
            sha = None
        elif s.encoded is not None:
            try:
                # blobs first (the old bytes, then the new): a revision is never indexed without them
                previous = revisions.put_blob(out_root, old) if old is not None and old != s.encoded else None
                sha = revisions.put_blob(out_root, s.encoded)
                changed = emit.atomic_write(target, s.encoded)
            except OSError as exc:
                s.status, s.reasons, s.detail = "quarantined", [Reason.WRITE_ERROR.value], str(exc)
                rel, sha = None, None
            else:
                result.written += changed
                result.unchanged += not changed
                result.revisions.append(RevisionRow(rel, sha, note, revisions.now(), previous))
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
