"""The revision store of the output documents (seed 001): blobs by sha256, an index of v0..vN.

``OUT/.revisions/blobs/<sha256>`` holds the exact bytes of every revision ever written. Blobs are
content-addressed, so parallel shards may write them without coordination (atomic write, skipped
when present). The index has one writer: the ledger's ``revisions`` table, filled by the flow's
main process from the rows the shards return (and by revert / apply-diff), exported after every
change to ``OUT/.revisions/index.json`` in seed 001's schema.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from . import emit
from .ledger import Ledger, RevisionRow

INDEX_VERSION = "LKv2.1"


class RevisionError(Exception):
    """A history, revert or verify request that cannot be carried out (message says why)."""


def now() -> str:
    return f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"


def store_root(out_root: Path) -> Path:
    return out_root / ".revisions"


def blob_path(out_root: Path, sha256: str) -> Path:
    return store_root(out_root) / "blobs" / sha256


def put_blob(out_root: Path, data: bytes) -> str:
    """Keep ``data`` under its sha256; race-free: same name means same bytes, so skip if present."""
    sha = hashlib.sha256(data).hexdigest()
    path = blob_path(out_root, sha)
    if not path.exists():
        emit.atomic_write(path, data)
    return sha


def put_blob_file(out_root: Path, source: Path, sha256: str) -> str:
    """Keep a file already hashed (a streamed document) as a blob, without reading it into memory:
    a hard link when the file system allows one (documents are only ever replaced by rename, never
    written in place), else a copy through a synced temporary file."""
    path = blob_path(out_root, sha256)
    if path.exists():
        return sha256
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
    os.replace(tmp, path)
    return sha256


def get_blob(out_root: Path, sha256: str) -> bytes:
    path = blob_path(out_root, sha256)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RevisionError(f"blob {sha256} is missing from {path.parent}") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise RevisionError(f"blob {sha256} does not match its name (corrupted store)")
    return data


def keep_write(out_root: Path, rel: str, data: bytes, note: str) -> RevisionRow:
    """Before a document at ``rel`` is (re)written: keep the bytes it holds now and the new bytes
    as blobs, and return the revision row for the main process to index."""
    target = emit.resolve_inside(out_root, rel)
    previous = None
    try:
        old = target.read_bytes()
    except FileNotFoundError:
        old = None
    if old is not None:
        previous = put_blob(out_root, old)
    return RevisionRow(rel, put_blob(out_root, data), note, now(), previous)


def write_index(out_root: Path, ledger: Ledger) -> Path:
    """Export the index in seed 001's schema: files by path, history by revision (deterministic)."""
    files: dict[str, list[dict[str, str]]] = {}
    for r in ledger.revisions():
        files.setdefault(r["output_path"], []).append(
            {"rev": f"v{r['rev']}", "sha256": r["sha256"], "note": r["note"], "ts": r["ts"]})
    payload = {"version": INDEX_VERSION, "files": [{"file": f, "history": h} for f, h in sorted(files.items())]}
    path = store_root(out_root) / "index.json"
    emit.atomic_write(path, orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n")
    return path


def resolve(ledger: Ledger, out_root: Path, session: str) -> str:
    """A document path relative to OUT, from that path or a session id naming one document."""
    indexed = set(ledger.latest_revisions())
    rel = session.strip().removeprefix("./")
    if rel in indexed or (rel.startswith("sessions/") and (out_root / rel).is_file()):
        return rel
    by_id = set(ledger.paths_for_session_id(session)) | {p for p in indexed if Path(p).stem == session}
    if len(by_id) == 1:
        return by_id.pop()
    if not by_id:
        raise RevisionError(f"no document {session!r}: give a path relative to the output root "
                            "(sessions/...) or a session id")
    raise RevisionError(f"session id {session!r} names {len(by_id)} documents, give one path: "
                        + ", ".join(sorted(by_id)))


def history(ledger: Ledger, rel: str) -> list[dict[str, Any]]:
    """Revisions of a document, newest first."""
    rows = ledger.revisions(rel)
    if not rows:
        raise RevisionError(f"{rel} has no revisions")
    return list(reversed(rows))


def parse_rev(rev: str) -> int:
    text = rev.strip().lower().removeprefix("v")
    if not text.isdigit():
        raise RevisionError(f"{rev!r} is not a revision (v0, v1, ...)")
    return int(text)


def revision(ledger: Ledger, rel: str, rev: str) -> dict[str, Any]:
    n = parse_rev(rev)
    for row in ledger.revisions(rel):
        if row["rev"] == n:
            return row
    raise RevisionError(f"{rel} has no revision v{n}")


def check_current(ledger: Ledger, out_root: Path, rel: str) -> dict[str, Any]:
    """The latest revision of ``rel``, refusing when the file on disk is not that revision
    (changed outside the store: replacing it would lose bytes no blob holds)."""
    rows = ledger.revisions(rel)
    if not rows:
        raise RevisionError(f"{rel} has no revisions")
    latest = rows[-1]
    try:
        on_disk = hashlib.sha256(emit.resolve_inside(out_root, rel).read_bytes()).hexdigest()
    except FileNotFoundError:
        on_disk = None
    if on_disk != latest["sha256"]:
        raise RevisionError(f"{rel} on disk ({on_disk or 'missing'}) is not its latest revision "
                            f"v{latest['rev']} ({latest['sha256']}); see `reconstruct verify`")
    return latest


def commit(ledger: Ledger, out_root: Path, rel: str, data: bytes, note: str) -> int:
    """Write ``data`` as the next revision of ``rel`` (blob first, then the document, then the
    index); returns the new revision number."""
    row = keep_write(out_root, rel, data, note)
    emit.atomic_write(emit.resolve_inside(out_root, rel), data)
    added = ledger.add_revisions([row])
    write_index(out_root, ledger)
    return added[0][1] if added else ledger.revisions(rel)[-1]["rev"]


def revert(ledger: Ledger, out_root: Path, rel: str, rev: str) -> int:
    """Make revision ``rev`` the content of ``rel`` again, as a new revision 'revert->vK'."""
    target = revision(ledger, rel, rev)
    check_current(ledger, out_root, rel)
    data = get_blob(out_root, target["sha256"])
    return commit(ledger, out_root, rel, data, f"revert->v{target['rev']}")


def verify(ledger: Ledger, out_root: Path) -> list[str]:
    """Every mismatch between documents, index and blobs (empty when all agree)."""
    problems: list[str] = []
    latest = ledger.latest_revisions()
    sessions = out_root / "sessions"
    on_disk = {str(p.relative_to(out_root)): p for p in sessions.rglob("*.json") if p.is_file()} \
        if sessions.is_dir() else {}
    for rel in sorted(set(on_disk) | set(latest)):
        if rel not in latest:
            problems.append(f"{rel}: document not in the revision index")
        elif rel not in on_disk:
            problems.append(f"{rel}: indexed (latest {latest[rel]}) but the document is missing")
        else:
            sha = hashlib.sha256(on_disk[rel].read_bytes()).hexdigest()
            if sha != latest[rel]:
                problems.append(f"{rel}: document sha256 {sha} differs from the latest revision {latest[rel]}")
    blobs = store_root(out_root) / "blobs"
    present = set()
    if blobs.is_dir():
        for blob in sorted(blobs.iterdir()):
            if blob.name.startswith("."):
                continue  # a temporary of an interrupted write
            present.add(blob.name)
            sha = hashlib.sha256(blob.read_bytes()).hexdigest()
            if sha != blob.name:
                problems.append(f".revisions/blobs/{blob.name}: content sha256 is {sha}")
    for r in ledger.revisions():
        if r["sha256"] not in present:
            problems.append(f"{r['output_path']} v{r['rev']}: blob {r['sha256']} is missing")
    return problems
