"""Inputs: what each run recorded of each input file and its sessions (``files``, ``sessions``,
``reasons``, ``drift`` as one shard writes them), and what earlier runs knew of an input."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from models.errors import Reason
from models.status import FileStatus

from .rows import FileRecord, FileRow, PriorRuns, SessionRow, SourceSeen, chunks, fetch, marks
from .schema import FAILED


class Inputs:
    """The input files of one ledger, run by run."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def record(self, run_id: str, fingerprint: str, files: Iterable[FileRow], sessions: Iterable[SessionRow]) -> None:
        """A shard's rows: its files, their sessions, the reasons of both and the sessions' drift, in
        one transaction."""
        files, sessions = list(files), list(sessions)
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run_id, f.source_key, f.source_path, f.sha256, f.size, f.grammar, str(f.status),
                  ",".join(f.reasons), f.detail, f.sessions, fingerprint, f.seconds, f.context_sha256,
                  f.raw_sha256)
                 for f in files],
            )
            self.db.executemany(
                "INSERT INTO reasons VALUES (?,?,?,?)",
                [(run_id, f.source_key, None, str(r)) for f in files for r in f.reasons]
                + [(run_id, s.source_key, s.ordinal, str(r)) for s in sessions for r in s.reasons],
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run_id, s.source_key, s.ordinal, s.session_id, s.session_id_raw, str(s.status),
                  ",".join(s.reasons), s.detail, s.output_path, s.output_sha256, s.interactions,
                  s.source_turns, s.characters, s.seconds, s.unaccounted, s.declared, s.session_key)
                 for s in sessions],
            )
            self.db.executemany(
                "INSERT INTO drift VALUES (?,?,?,?,?,?)",
                [(run_id, s.source_key, s.ordinal, item, d["count"], d["first"])
                 for s in sessions for item, d in (s.drift or {}).items()],
            )

    def prior(self, keys: Iterable[str]) -> PriorRuns:
        """What earlier runs recorded of these inputs: each one's latest file record (its size, its raw bytes'
        sha256 when recorded) and
        whether its latest processing held a session back by the mass latch, in one query per kind for
        them all (a shard asks once, not once per input)."""
        latest: dict[str, tuple] = {}
        sizes: dict[str, int | None] = {}
        raw: dict[str, str] = {}
        latched: set[str] = set()
        for chunk in chunks(keys):
            for row in self.db.execute(
                    "SELECT source_key, sha256, config_fingerprint, context_sha256, status, "
                    f"{FAILED}, size, raw_sha256 "
                    f"FROM files f WHERE rowid IN (SELECT MAX(rowid) FROM files WHERE source_key IN ({marks(chunk)}) "
                    "GROUP BY source_key)", chunk):
                latest[row[0]] = tuple(row[1:6])
                sizes[row[0]] = row[6]
                if row[7] is not None:
                    raw[row[0]] = row[7]
            latched.update(r[0] for r in self.db.execute(
                "SELECT s.source_key FROM sessions s WHERE s.rowid IN (SELECT MAX(rowid) FROM sessions "
                f"WHERE source_key IN ({marks(chunk)}) GROUP BY source_key) AND EXISTS (SELECT 1 FROM reasons r "
                "WHERE r.source_key = s.source_key AND r.run_id = s.run_id AND r.reason = ?)",
                (*chunk, Reason.MASS_LATCH)))
        return PriorRuns(latest, latched, sizes, raw)

    def known(self) -> dict[str, tuple[FileStatus, str]]:
        """source key -> (status, source path) of its latest ledger row, for every input ever seen."""
        rows = self.db.execute("SELECT source_key, status, source_path FROM files WHERE rowid IN "
                               "(SELECT MAX(rowid) FROM files GROUP BY source_key)").fetchall()  # not every run's
        return {k: (FileStatus(s), p) for k, s, p in rows}

    def of_run(self, run_id: str) -> list[FileRecord]:
        """A run's inputs, in key order."""
        return fetch(self.db, FileRecord, "SELECT * FROM files WHERE run_id=? ORDER BY source_key", (run_id,))

    def slowest(self, run_id: str, n: int) -> list[FileRecord]:
        """A run's ``n`` slowest inputs, slowest first (ties in key order)."""
        return fetch(self.db, FileRecord, "SELECT * FROM files WHERE run_id=? AND seconds IS NOT NULL "
                     "ORDER BY seconds DESC, source_key LIMIT ?", (run_id, n))

    def read_at(self, sha256: str) -> list[SourceSeen]:
        """Where inputs with these bytes were read: source path and the run that read it, newest first."""
        return fetch(self.db, SourceSeen, "SELECT DISTINCT f.source_path, f.run_id, r.args FROM files f JOIN runs r "
                     "USING (run_id) WHERE f.sha256=? ORDER BY r.started_at DESC, r.rowid DESC", (sha256,))

    def previous_outputs(self, source_key: str, run_id: str) -> set[str]:
        """Document paths the latest earlier run that processed this input wrote for it."""
        rows = self.db.execute(
            "SELECT output_path FROM sessions WHERE source_key=? AND output_path LIKE 'sessions/%' AND run_id = "
            "(SELECT run_id FROM sessions WHERE source_key=? AND run_id != ? ORDER BY rowid DESC LIMIT 1)",
            (source_key, source_key, run_id)).fetchall()
        return {r[0] for r in rows}
