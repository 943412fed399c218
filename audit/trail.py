"""The audit trail of one shard's writes: documents with their revisions and dataset rows.

A shard (flows/core/shard.py) hands every document it accepts to a ``ShardTrail``; the trail stages
the bytes in the shard's write batch, keeps each new revision in the store as a hard link to the
written file (no second copy), and keeps the document's rows of the sessions and turns tables as
they were taken from the assembled document (``datasets.DocumentRows``), so nothing is read back.
``commit`` makes the batch durable and visible; the main process then indexes the revisions and
writes the rows as a dataset part.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from pathlib import Path
from typing import Any

import polars as pl

from . import datasets, revisions
from .files import Batch, resolve_inside
from .ledger import RevisionRow

LOG = logging.getLogger(__name__)
DOCUMENT_MODE = 0o444  # a document shares its inode with its latest blob: not to be edited in place


def sha256_of(data: bytes | Path) -> str:
    """The sha256 of bytes, or of a file's content read in chunks."""
    if not isinstance(data, Path):
        return hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256()
    with data.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class ShardTrail:
    """What one shard wrote: its write batch, the revision rows and the dataset rows."""

    def __init__(self, out_root: Path) -> None:
        self.out_root = out_root
        self.batch = Batch()
        self.revisions: list[RevisionRow] = []
        self.rows = datasets.Rows()
        self._blobs: list[tuple[Path, str]] = []  # (temporary, sha256): kept once fsynced
        self.warnings: list[str] = []
        """What went wrong without failing a document (its dataset rows not written), each naming it."""
        self._base: str | None = None  # the output root's real path: resolved once per shard
        self._plain: set[str] = set()  # folders under the root known to be no links (or not there yet)
        self._absent: set[str] = set()  # of those, the ones not there when first looked at (``absent``)

    def resolve(self, rel: str) -> Path:
        """``resolve_inside(out_root, rel)`` with the output root's real path taken once per shard and
        ``rel`` checked lexically under it: a path of plain names (no ``..``, ``.`` or empty part) whose
        folders and leaf are no links is the root's real path joined with it, inside by construction;
        each folder is looked at once per shard (one ``lstat``), the leaf once per call. Any other path
        (a link on the way, a ``..``) is resolved in full and refused if it escapes."""
        parts = rel.split("/")
        if self._base is None:
            self._base = os.path.realpath(self.out_root)
        if any(part in ("", ".", "..") for part in parts):
            return resolve_inside(self.out_root, rel)
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in self._plain:
                if self._is_link(folder):
                    return resolve_inside(self.out_root, rel)
                self._plain.add(folder)
        target = os.path.join(self._base, rel)
        if not self.absent(rel) and os.path.islink(target):
            return resolve_inside(self.out_root, rel)
        return Path(target)

    def _is_link(self, folder: str) -> bool:
        """Whether ``folder`` is a link; one not there (or under one not there) is noted as absent."""
        if folder.rpartition("/")[0] in self._absent:
            self._absent.add(folder)
            return False
        try:
            return stat.S_ISLNK(os.lstat(os.path.join(self._base, folder)).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            self._absent.add(folder)
            return False

    def absent(self, rel: str) -> bool:
        """Whether the folder of ``rel`` (resolved by this trail) was not there when the shard first looked:
        nothing of it is on disk before the shard commits (its writes are temporaries until then), so
        its files need not be looked for one by one (a new session key's folder)."""
        return rel.rpartition("/")[0] in self._absent

    def document(self, rel: str, data: bytes | Path, old: bytes | None, *, note: str = "",
                 rows: datasets.DocumentRows | None = None, target: Path | None = None) -> tuple[str, bool]:
        """Stage the document ``rel`` (``old``: what its file holds now, None when absent;
        ``rows``: its dataset rows, none for a document the tables must read themselves;
        ``target``: its resolved path, when known); returns (sha256, changed). An unchanged
        document is not touched."""
        target = target or self.resolve(rel)
        sha = sha256_of(data)
        previous = hashlib.sha256(old).hexdigest() if old is not None else None
        if previous is not None and previous != sha:
            revisions.keep(self.out_root, target, previous)  # the file as it is, if the store lacks it
        changed = previous != sha
        if changed:
            self._blobs.append((self.batch.stage(target, data, mode=DOCUMENT_MODE), sha))
        else:
            revisions.keep(self.out_root, target, sha)  # a store that lost it (a run killed mid-way)
        self.revisions.append(RevisionRow(rel, sha, note, revisions.now(),
                                          previous if previous != sha else None))
        if rows is not None:
            self.rows.add(rel, sha, rows)
        return sha, changed

    def document_file(self, rel: str, tmp: Path, sha: str, previous: str | None, *, note: str = "",
                      target: Path | None = None, envelope: dict[str, Any] | None = None,
                      rows: datasets.StreamedRows | None = None) -> bool:
        """Stage a document the worker finished in a temporary file (a streamed session), its sha256
        known; neither it nor the file it replaces is read. ``previous``: the sha256 of what the file
        holds now. Its dataset rows come from its ``envelope`` and the row pieces its ranges wrote
        (``rows``); without an envelope it has none and the tables read the document itself. Rows
        that cannot be written leave the document to the tables too, with a warning (``warnings``).
        Returns whether the file changes."""
        target = target or self.resolve(rel)
        changed = previous != sha
        if previous is not None and changed:
            revisions.keep(self.out_root, target, previous)
        if changed:
            self._blobs.append((self.batch.stage(target, tmp, mode=DOCUMENT_MODE), sha))
        else:
            tmp.unlink(missing_ok=True)
            revisions.keep(self.out_root, target, sha)
        self.revisions.append(RevisionRow(rel, sha, note, revisions.now(), previous if changed else None))
        if envelope is not None and rows is not None:  # else, or when this fails, the tables read the document
            try:
                self.rows.add_streamed(self.out_root, rel, sha, envelope, rows)
            except (KeyError, TypeError, OSError, pl.exceptions.PolarsError) as exc:
                self.warn(f"{rel}: its dataset rows were not written ({type(exc).__name__}: {exc}); "
                          "the datasets read the document instead")
        return changed

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        LOG.warning(message)

    def commit(self) -> None:
        """fsync every staged file, keep the new revisions (hard links), rename everything into
        place and fsync each folder once."""
        self.batch.sync()
        for tmp, sha in self._blobs:
            revisions.keep(self.out_root, tmp, sha)
        stored = [revisions.blobs(self.out_root)] if self._blobs else []
        self._blobs.clear()
        self.batch.publish(extra_folders=stored)

    def abandon(self) -> None:
        self.batch.abandon()
        self.rows.discard()
        self._blobs.clear()
