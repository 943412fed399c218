"""Sessions: each run's session rows, the documents they were written to, and sessions by key."""

from __future__ import annotations

import sqlite3

from .rows import DriftItem, KeyCounts, KeyedSession, KeyListing, SessionRecord, SnapshotSummary, fetch
from .snapshots import Snapshots


class Sessions:
    """The sessions of one ledger's runs."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def of_run(self, run_id: str) -> list[SessionRecord]:
        return fetch(self.db, SessionRecord, "SELECT * FROM sessions WHERE run_id=? ORDER BY source_key, ordinal",
                     (run_id,))

    def drift(self, run_id: str) -> list[DriftItem]:
        """Format drift of a run: each unknown item with its count and the first place it was met."""
        return fetch(self.db, DriftItem,
                     "SELECT item, SUM(count) AS count, MIN(source_key || ' ' || first_pointer) AS first FROM drift "
                     "WHERE run_id=? GROUP BY item ORDER BY count DESC, item", (run_id,))

    def paths_for_id(self, session_id: str) -> list[str]:
        """Document paths a session id was written to (any run), for naming a document by its id."""
        rows = self.db.execute("SELECT DISTINCT output_path FROM sessions WHERE session_id=? AND output_path "
                               "LIKE 'sessions/%' ORDER BY 1", (session_id,)).fetchall()
        return [r[0] for r in rows]

    def writers(self) -> dict[tuple[str, str], str]:
        """(output_path, output_sha256) -> run id of the latest run that produced those bytes."""
        rows = self.db.execute(
            "SELECT s.output_path, s.output_sha256, s.run_id FROM sessions s JOIN runs r ON r.run_id=s.run_id "
            "WHERE s.output_sha256 IS NOT NULL ORDER BY r.started_at, r.rowid").fetchall()
        return {(p, h): run for p, h, run in rows}

    def document_keys(self) -> list[tuple[str, str, str]]:
        """(output path, output sha256, session key) of every document bytes a run wrote with a key."""
        return self.db.execute(
            "SELECT output_path, output_sha256, MAX(session_key) FROM sessions WHERE output_sha256 IS NOT NULL "
            "AND session_key IS NOT NULL GROUP BY output_path, output_sha256").fetchall()

    def keyed(self, key: str | None = None) -> list[KeyedSession]:
        """Each key's latest written document (key, output path, session id), in key order."""
        where = "AND s.session_key=?" if key is not None else ""
        return fetch(
            self.db, KeyedSession,
            "SELECT s.session_key, s.output_path, s.session_id, s.status FROM sessions s WHERE s.rowid IN "
            "(SELECT MAX(rowid) FROM sessions WHERE session_key IS NOT NULL AND output_sha256 IS NOT NULL "
            "AND output_path LIKE 'sessions/%' AND session_key NOT IN (SELECT session_key FROM aliases) "
            f"GROUP BY session_key) {where} ORDER BY s.session_key",
            (key,) if key is not None else ())

    def listing(self, key: str | None = None) -> list[KeyListing]:
        """Sessions by key (``reconstruct sessions``): each key's document, its snapshots and its counts
        (new and unchanged summed over its snapshots, edited likewise, absent: from the latest), in key order."""
        documents = {r.session_key: r for r in self.keyed(key)}
        snapshots = Snapshots(self.db)
        found = snapshots.of(documents)
        counts: dict[str, list] = {}
        for row in snapshots.reconciliation(key=key):
            counts.setdefault(row.session_key, []).append(row)
        out = []
        for k, doc in documents.items():
            rows = counts.get(k, [])
            out.append(KeyListing(
                k, doc.output_path, doc.session_id, doc.status,
                [SnapshotSummary(s.source_path, s.source_sha256, s.first_at, s.last_at, s.messages)
                 for s in found.get(k, [])],
                KeyCounts(sum(r.new for r in rows), sum(r.unchanged for r in rows), rows[-1].absent if rows else 0,
                          sum(r.edited for r in rows))))
        return out
