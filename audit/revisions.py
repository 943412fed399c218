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

import orjson

from models.errors import Reason, ReconstructError

from .files import atomic_write, resolve_inside, temporary_for
from .ledger import Ledger, RevisionRecord

INDEX_VERSION = "LKv2.1"
BLOB_MODE = 0o444  # a blob never changes (and is often the very inode of its document)
INDEXED = "index_revisions"  # ledger meta: how many revisions index.json holds
EDITS = "edits"  # the dataset parts of revert and apply-diff, as a run's are under its run id


class RevisionError(ReconstructError):
    """A history, revert or verify request that cannot be carried out (the reason code says why)."""


class AmbiguousDocument(RevisionError):
    """A session id that names several documents; ``matches`` are their paths under OUT."""

    def __init__(self, session: str, matches: list[str]) -> None:
        self.session, self.matches = session, matches
        super().__init__(Reason.AMBIGUOUS_DOCUMENT, f"session id {session!r} names {len(matches)} documents, "
                         "give one path: " + ", ".join(matches))


def now() -> str:
    return f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"


def store_root(out_root: Path) -> Path:
    return out_root / ".revisions"


def index_path(out_root: Path) -> Path:
    return store_root(out_root) / "index.json"


def blobs(out_root: Path) -> Path:
    return store_root(out_root) / "blobs"


def blob_path(out_root: Path, sha256: str) -> Path:
    return blobs(out_root) / sha256


def keep(out_root: Path, source: Path, sha256: str) -> bool:
    """Keep the file ``source`` (whose content hashes to ``sha256``) as that revision's blob: a hard
    link to it, so the store holds no second copy of the bytes, or a copy where the file system
    cannot link (another device, no hard links). Documents are replaced by rename (a new inode),
    so the linked bytes never change. Race-free: same name, same bytes; False when present."""
    path = blob_path(out_root, sha256)
    if path.exists():
        return False
    try:
        _link(source, path)
    except FileExistsError:  # a parallel shard kept the same bytes first
        return False
    except OSError:  # no hard links here: a copy (the folder made first, as a link does not get that far)
        path.parent.mkdir(parents=True, exist_ok=True)
        _copy(source, path)
    return True


def store(out_root: Path, data: bytes) -> str:
    """Keep bytes that no document holds (a snapshot waiting for its key's merge, #15) as a blob;
    returns its sha256. Atomic and race-free like ``keep``."""
    sha = hashlib.sha256(data).hexdigest()
    path = blob_path(out_root, sha)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
        path.chmod(BLOB_MODE)
    return sha


def _link(source: Path, path: Path) -> None:
    """Hard-link ``path`` to ``source``, making the store's folder only when it is missing (once a
    store, not once a blob: a shard keeps thousands)."""
    try:
        os.link(source, path)
    except FileNotFoundError:
        if path.parent.is_dir():
            raise
        path.parent.mkdir(parents=True, exist_ok=True)
        os.link(source, path)


def _copy(source: Path, path: Path) -> None:
    """The copy ``keep`` falls back to: streamed through a temporary, fsynced, renamed, read-only."""
    tmp = temporary_for(path)
    tmp.unlink(missing_ok=True)
    try:
        with source.open("rb") as src, open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, BLOB_MODE), "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
            dst.flush()
            os.fsync(dst.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def get_blob(out_root: Path, sha256: str) -> bytes:
    path = blob_path(out_root, sha256)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RevisionError(Reason.STORE_CORRUPT, f"blob {sha256} is missing from {path.parent}") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise RevisionError(Reason.STORE_CORRUPT, f"blob {sha256} does not match its name (corrupted store)")
    return data


def write_index(out_root: Path, ledger: Ledger) -> Path:
    """Export the index in seed 001's schema: files by path, history by revision (deterministic)."""
    files: dict[str, list[dict[str, str]]] = {}
    for r in ledger.revisions.history():
        files.setdefault(r.output_path, []).append({"rev": f"v{r.rev}", "sha256": r.sha256, "note": r.note, "ts": r.ts})
    payload = {"version": INDEX_VERSION, "files": [{"file": f, "history": h} for f, h in sorted(files.items())]}
    path = index_path(out_root)
    atomic_write(path, orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n")
    ledger.meta.set(INDEXED, str(sum(len(h) for h in files.values())))
    return path


def refresh_index(out_root: Path, ledger: Ledger) -> bool:
    """Export the index unless it already holds every revision of the ledger (an unchanged rerun
    does not rewrite a file proportional to the whole output); True when written."""
    if index_path(out_root).is_file() and ledger.meta.get(INDEXED) == str(ledger.revisions.count()):
        return False
    write_index(out_root, ledger)
    return True


def resolve(ledger: Ledger, out_root: Path, session: str) -> str:
    """A document path relative to OUT, from that path, the path as a shell completes it (relative to
    the working folder, or absolute, inside OUT) or a session id naming one document."""
    indexed = set(ledger.revisions.latest())
    rel = _under(out_root, session.strip())
    if rel in indexed or (rel.startswith("sessions/") and (out_root / rel).is_file()):
        return rel
    by_id = set(ledger.sessions.paths_for_id(session)) | {p for p in indexed if Path(p).stem == session}
    if len(by_id) == 1:
        return by_id.pop()
    if not by_id:
        raise RevisionError(Reason.UNKNOWN_DOCUMENT, f"no document {session!r}: give a path relative to the "
                            "output root (sessions/...), a path to the document, or a session id")
    raise AmbiguousDocument(session, sorted(by_id))


def _under(out_root: Path, given: str) -> str:
    """``given`` relative to OUT when it names a file inside OUT from the working folder (or absolutely);
    else as given, without a leading ``./``."""
    path = Path(given)
    if path.is_file():
        try:
            return path.resolve().relative_to(out_root.resolve()).as_posix()
        except ValueError:
            pass
    return given.removeprefix("./")


def history(ledger: Ledger, rel: str) -> list[RevisionRecord]:
    """Revisions of a document, newest first."""
    rows = ledger.revisions.history(rel)
    if not rows:
        raise RevisionError(Reason.UNKNOWN_DOCUMENT, f"{rel} has no revisions")
    return list(reversed(rows))


def parse_rev(rev: str) -> int:
    text = rev.strip().lower().removeprefix("v")
    if not text.isdigit():
        raise RevisionError(Reason.REVISION_SYNTAX, f"{rev!r} is not a revision (v0, v1, ...)")
    return int(text)


def revision(ledger: Ledger, rel: str, rev: str) -> RevisionRecord:
    n = parse_rev(rev)
    for row in ledger.revisions.history(rel):
        if row.rev == n:
            return row
    raise RevisionError(Reason.UNKNOWN_REVISION, f"{rel} has no revision v{n}")


def check_current(ledger: Ledger, out_root: Path, rel: str) -> RevisionRecord:
    """The latest revision of ``rel``, refusing when the file on disk is not that revision
    (changed outside the store: replacing it would lose bytes no blob holds)."""
    rows = ledger.revisions.history(rel)
    if not rows:
        raise RevisionError(Reason.UNKNOWN_DOCUMENT, f"{rel} has no revisions")
    latest = rows[-1]
    try:
        on_disk = hashlib.sha256(resolve_inside(out_root, rel).read_bytes()).hexdigest()
    except FileNotFoundError:
        on_disk = None
    if on_disk != latest.sha256:
        raise RevisionError(Reason.DOCUMENT_CHANGED, f"{rel} on disk ({on_disk or 'missing'}) is not its "
                            f"latest revision v{latest.rev} ({latest.sha256}); see `reconstruct verify`")
    return latest


def commit(ledger: Ledger, out_root: Path, rel: str, data: bytes, note: str) -> int:
    """Write ``data`` as the next revision of ``rel`` (blob first, then the document, then the
    index and the document's dataset rows); returns the new revision number."""
    from .datasets import DocumentRows, part_name, write_part
    from .trail import ShardTrail

    target = resolve_inside(out_root, rel)
    trail = ShardTrail(out_root)
    try:
        old = target.read_bytes()
    except FileNotFoundError:
        old = None
    try:  # an edit is not assembled: its rows come from its bytes (none when it is not a session document)
        rows = DocumentRows.of(orjson.loads(data))
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        rows = None
    sha, _ = trail.document(rel, data, old, note=note, rows=rows)
    trail.commit()
    added = ledger.revisions.add(trail.revisions)
    write_index(out_root, ledger)
    write_part(out_root, EDITS, part_name(f"{rel}\0{sha}"), trail.rows.frames())
    return added[0][1] if added else ledger.revisions.history(rel)[-1].rev


def revert(ledger: Ledger, out_root: Path, rel: str, rev: str) -> int:
    """Make revision ``rev`` the content of ``rel`` again, as a new revision 'revert->vK'."""
    target = revision(ledger, rel, rev)
    check_current(ledger, out_root, rel)
    data = get_blob(out_root, target.sha256)
    return commit(ledger, out_root, rel, data, f"revert->v{target.rev}")


def verify(ledger: Ledger, out_root: Path) -> list[str]:
    """Every mismatch between documents, index and blobs (empty when all agree)."""
    problems: list[str] = []
    latest = ledger.revisions.latest()
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
    for r in ledger.revisions.history():
        if r.sha256 not in present:
            problems.append(f"{r.output_path} v{r.rev}: blob {r.sha256} is missing")
    for s in ledger.snapshots.all():  # a session key's snapshots are merged from their blobs (#15)
        if s.blob_sha256 not in present:
            problems.append(f"snapshot {s.source_path} of {s.session_key}: blob {s.blob_sha256} is missing")
    return problems
