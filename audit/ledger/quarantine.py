"""Quarantine: what failed in a run, each input or session with its reason codes, and which inputs
a rerun processes again (from ``reasons``, the one record of a failure)."""

from __future__ import annotations

import sqlite3

from .rows import FailedSource, QuarantineEntry, fetch
from .runs import Runs
from .schema import FAILED


class Quarantine:
    """The failures of one ledger's runs."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def of_run(self, run_id: str | None = None) -> list[QuarantineEntry]:
        """What failed in a run (default: the latest): one entry per file or session with reasons."""
        run_id = run_id or Runs(self.db).latest_id()
        return fetch(
            self.db, QuarantineEntry,
            "SELECT CASE WHEN r.ordinal IS NULL THEN 'file' ELSE 'session' END AS what, r.source_key, "
            "COALESCE(f.source_path, r.source_key) AS source_path, r.ordinal, s.session_id, "
            "GROUP_CONCAT(r.reason, ',') AS reasons, "
            "COALESCE(s.detail, f.detail) AS detail "  # a conversation over several files: its folder's key

            "FROM reasons r LEFT JOIN files f ON f.run_id=r.run_id AND f.source_key=r.source_key "
            "LEFT JOIN sessions s ON s.run_id=r.run_id AND s.source_key=r.source_key AND s.ordinal=r.ordinal "
            "WHERE r.run_id=? GROUP BY r.source_key, r.ordinal ORDER BY r.source_key, r.ordinal",
            (run_id,),
        )

    def failed_sources(self, run_id: str | None = None) -> list[FailedSource]:
        """Source keys and paths of a run (default: the latest) that failed, in key order."""
        run_id = run_id or Runs(self.db).latest_id()
        return fetch(
            self.db, FailedSource,
            f"SELECT source_key, source_path FROM files f WHERE run_id=? AND {FAILED} "
            # a conversation over several files records its sessions under its folder's key
            # (a session key's failed merge, under the key, is no input: it is merged again with its next snapshot)
            "UNION SELECT DISTINCT r.source_key, r.source_key FROM reasons r WHERE r.run_id=? AND NOT EXISTS "
            "(SELECT 1 FROM files f WHERE f.run_id=r.run_id AND f.source_key=r.source_key) "
            "AND instr(r.source_key, ':') = 0 ORDER BY 1",
            (run_id, run_id))
