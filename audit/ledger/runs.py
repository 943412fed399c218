"""Runs: started, finished, counted, listed (the ``runs`` table, and the counts of a run's rows)."""

from __future__ import annotations

import os
import socket
import sqlite3
from typing import Any

import orjson

from models.status import FileStatus, RunCounts, RunStatus, SessionStatus

from .rows import RunRecord, fetch
from .schema import FAILED, OWN_FAILURE


class Runs:
    """The runs of one ledger."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def start(self, run_id: str, started_at: str, args: dict[str, Any], fingerprint: str,
              pipeline_version: str) -> None:
        with self.db:
            self.db.execute(
                "INSERT INTO runs (run_id, started_at, status, args, config_fingerprint, pipeline_version) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, started_at, RunStatus.RUNNING, orjson.dumps(args, default=str).decode(), fingerprint,
                 pipeline_version),
            )

    def mark_interrupted(self) -> int:
        """Runs still 'running' whose process on this host is gone were killed: say so."""
        rows = self.db.execute("SELECT run_id, args FROM runs WHERE status=?", (RunStatus.RUNNING,)).fetchall()
        gone = []
        for run_id, args in rows:
            meta = orjson.loads(args)
            if meta.get("host") == socket.gethostname() and not _alive(meta.get("pid")):
                gone.append(run_id)
        with self.db:
            self.db.executemany("UPDATE runs SET status=? WHERE run_id=?",
                                [(RunStatus.INTERRUPTED, r) for r in gone])
        return len(gone)

    def finish(self, run_id: str, finished_at: str, status: RunStatus, seconds: float) -> RunCounts:
        counts = self.counts(run_id)
        with self.db:
            self.db.execute(
                "UPDATE runs SET finished_at=?, status=?, seconds=?, files=?, files_skipped=?, "
                "files_quarantined=?, sessions_ok=?, sessions_partial=?, sessions_quarantined=? WHERE run_id=?",
                (finished_at, str(status), seconds, counts.files, counts.files_skipped, counts.files_quarantined,
                 counts.sessions_ok, counts.sessions_partial, counts.sessions_quarantined, run_id),
            )
        return counts

    def counts(self, run_id: str) -> RunCounts:
        q = self.db.execute
        files = dict(q("SELECT status, COUNT(*) FROM files WHERE run_id=? GROUP BY status", (run_id,)).fetchall())
        # a file with a reason of its own (nothing read, or its grammar broke after some sessions)
        own = q(f"SELECT COUNT(*) FROM files f WHERE run_id=? AND {OWN_FAILURE}", (run_id,)).fetchone()[0]
        failed = q(f"SELECT COUNT(*) FROM files f WHERE run_id=? AND {FAILED}", (run_id,)).fetchone()[0]
        # a merged document's row (ordinal 0, flows/core/merge.py) is not one more session of the sources
        sess = dict(q("SELECT status, COUNT(*) FROM sessions WHERE run_id=? AND NOT (ordinal = 0 AND output_sha256 "
                      "IS NOT NULL) GROUP BY status", (run_id,)).fetchall())
        # each document once, as the run left it: a snapshot left to its key's merge has no document of
        # its own, and a key's document written by a shard and then merged counts as merged (#15); a key
        # resolved to another (its document moved there) counts in that one's
        turns = q("SELECT COALESCE(SUM(interactions), 0) FROM sessions WHERE rowid IN (SELECT MAX(rowid) FROM "
                  "sessions WHERE run_id=? AND status IN (?, ?) AND output_sha256 IS NOT NULL AND (session_key IS "
                  "NULL OR session_key NOT IN (SELECT session_key FROM aliases)) GROUP BY output_path)",
                  (run_id, SessionStatus.OK, SessionStatus.PARTIAL)).fetchone()[0]
        unaccounted = q("SELECT COUNT(*), COALESCE(SUM(unaccounted), 0) FROM sessions WHERE run_id=? "
                        "AND unaccounted > 0", (run_id,)).fetchone()
        drift = q("SELECT COUNT(DISTINCT item) FROM drift WHERE run_id=?", (run_id,)).fetchone()[0]
        return RunCounts(
            files=sum(files.values()),
            files_skipped=files.get(FileStatus.SKIPPED, 0),
            files_quarantined=own,
            files_failed=failed,
            files_companion=files.get(FileStatus.COMPANION, 0),
            files_ignored=files.get(FileStatus.IGNORED, 0),
            files_missing=files.get(FileStatus.MISSING, 0),
            sessions_ok=sess.get(SessionStatus.OK, 0),
            sessions_partial=sess.get(SessionStatus.PARTIAL, 0),
            sessions_quarantined=sess.get(SessionStatus.QUARANTINED, 0),
            interactions=turns,
            sessions_unaccounted=unaccounted[0],
            unaccounted_source=unaccounted[1],
            drift_items=drift,
        )

    def get(self, run_id: str) -> RunRecord | None:
        found = fetch(self.db, RunRecord, "SELECT * FROM runs WHERE run_id=?", (run_id,))
        return found[0] if found else None

    def recent(self, limit: int = 10) -> list[RunRecord]:
        """The latest ``limit`` runs (-1: all), newest first."""
        return fetch(self.db, RunRecord, "SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?", (limit,))

    def running(self) -> str | None:
        """The latest run still marked running (the one a shard belongs to)."""
        row = self.db.execute("SELECT run_id FROM runs WHERE status=? ORDER BY rowid DESC LIMIT 1",
                              (RunStatus.RUNNING,)).fetchone()
        return row[0] if row else None

    def latest_id(self) -> str | None:
        row = self.db.execute("SELECT run_id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def exists(self, run_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone() is not None


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
