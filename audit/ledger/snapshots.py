"""Snapshots by session key (#15): each key's snapshots, the claims that give a key one writer per
run, and the reconciliation of what each snapshot brought to its key's document."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from .rows import ReconciliationRecord, ReconciliationRow, SnapshotRecord, SnapshotRow, chunks, fetch, marks


class Snapshots:
    """The snapshots, claims and reconciliation of one ledger."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def add(self, rows: Iterable[SnapshotRow], run_id: str) -> None:
        """Index snapshots; the same key and source sha256 stay one snapshot, the copy with the
        smallest source path kept (the same set of files gives the same snapshots in any order)."""
        with self.db:
            self.db.executemany(
                "INSERT INTO snapshots VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (session_key, source_sha256) DO UPDATE "
                "SET source_path=excluded.source_path, blob_sha256=excluded.blob_sha256, first_at=excluded.first_at, "
                "last_at=excluded.last_at, messages=excluded.messages, run_id=excluded.run_id "
                "WHERE excluded.source_path < snapshots.source_path",
                [(r.session_key, r.source_sha256, r.source_path, r.blob_sha256, r.first_at, r.last_at, r.messages,
                  run_id) for r in rows])

    def claim(self, run_id: str, shard: str, keys: Iterable[str]) -> dict[str, str]:
        """Claim session keys for a shard (one transaction for them all: the first shard to claim a
        key is its one writer in the run); returns key -> the shard that holds it."""
        keys = sorted(set(keys))
        owners: dict[str, str] = {}
        with self.db:
            self.db.executemany("INSERT OR IGNORE INTO claims VALUES (?,?,?)", [(run_id, k, shard) for k in keys])
            for chunk in chunks(keys):
                owners.update(self.db.execute(
                    f"SELECT session_key, shard FROM claims WHERE run_id=? AND session_key IN ({marks(chunk)})",
                    (run_id, *chunk)).fetchall())
        return owners

    def shas(self, keys: Iterable[str]) -> dict[str, set[str]]:
        """key -> the source sha256 of every snapshot known for it (one query per 500 keys)."""
        found: dict[str, set[str]] = {}
        for chunk in chunks(keys):
            for key, sha in self.db.execute(
                    f"SELECT session_key, source_sha256 FROM snapshots WHERE session_key IN ({marks(chunk)})", chunk):
                found.setdefault(key, set()).add(sha)
        return found

    def of(self, keys: Iterable[str]) -> dict[str, list[SnapshotRecord]]:
        """key -> its snapshots (``all`` order), one query per 500 keys."""
        found: dict[str, list[SnapshotRecord]] = {}
        for chunk in chunks(keys):
            for row in fetch(self.db, SnapshotRecord,
                             f"SELECT * FROM snapshots WHERE session_key IN ({marks(chunk)}) "
                             "ORDER BY session_key, COALESCE(first_at, ''), source_sha256", chunk):
                found.setdefault(row.session_key, []).append(row)
        return found

    def all(self, key: str | None = None) -> list[SnapshotRecord]:
        """Snapshots of one key (or all), in (key, first time, source sha256) order."""
        where, args = ("WHERE session_key=?", (key,)) if key is not None else ("", ())
        return fetch(self.db, SnapshotRecord, f"SELECT * FROM snapshots {where} ORDER BY session_key, "
                     "COALESCE(first_at, ''), source_sha256", args)

    def reconcile(self, run_id: str, rows: Iterable[ReconciliationRow]) -> None:
        """A key's reconciliation in a run, replacing what the run recorded of that key before (a key a
        shard wrote alone and the merge phase then merged is reconciled once, as merged)."""
        rows = list(rows)
        with self.db:
            self.db.executemany("DELETE FROM reconciliation WHERE run_id=? AND session_key=?",
                                [(run_id, k) for k in sorted({r.session_key for r in rows})])
            self.db.executemany("INSERT INTO reconciliation VALUES (?,?,?,?,?,?,?,?,?)",
                                [(run_id, r.session_key, r.source_sha256, r.expected, r.reconstructed, r.new,
                                  r.unchanged, r.absent, r.edited) for r in rows])

    def reconciliation(self, run_id: str | None = None, key: str | None = None) -> list[ReconciliationRecord]:
        """Reconciliation rows of a run (default: each key's latest run that reconciled it), one per
        snapshot in the order the merge ranked them (oldest first), keys in order."""
        if run_id is not None:
            return fetch(self.db, ReconciliationRecord,
                         "SELECT * FROM reconciliation WHERE run_id=? ORDER BY session_key, rowid", (run_id,))
        where = ("WHERE r.session_key=?" if key is not None
                 else "WHERE r.session_key NOT IN (SELECT session_key FROM aliases)")  # an alias counts in its key
        return fetch(
            self.db, ReconciliationRecord,
            "SELECT r.* FROM reconciliation r JOIN (SELECT session_key, MAX(rowid) AS last FROM reconciliation "
            "GROUP BY session_key) l ON l.session_key=r.session_key JOIN reconciliation x ON x.rowid=l.last "
            f"AND x.run_id=r.run_id {where} ORDER BY r.session_key, r.rowid", (key,) if key is not None else ())
