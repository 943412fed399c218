"""The run ledger: an embedded SQLite database of runs, input files and sessions.

Versioned schema: ``meta.schema_version`` names the version; ``MIGRATIONS[n]`` takes a ledger from
version n to n+1, applied in order when a ledger is opened, so an old ledger is upgraded in place.
Only the flow's main process writes to it (shards return their records), so there is one writer.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from models.settings import Settings

MIGRATIONS: list[str] = [
    # 0 -> 1
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL,
        args TEXT NOT NULL, config_fingerprint TEXT NOT NULL, pipeline_version TEXT NOT NULL,
        files INTEGER DEFAULT 0, files_skipped INTEGER DEFAULT 0, files_quarantined INTEGER DEFAULT 0,
        sessions_ok INTEGER DEFAULT 0, sessions_partial INTEGER DEFAULT 0,
        sessions_quarantined INTEGER DEFAULT 0, seconds REAL
    );
    CREATE TABLE files (
        run_id TEXT NOT NULL REFERENCES runs(run_id), source_key TEXT NOT NULL, source_path TEXT NOT NULL,
        sha256 TEXT, size INTEGER, grammar TEXT, status TEXT NOT NULL, reasons TEXT NOT NULL,
        detail TEXT NOT NULL, sessions INTEGER NOT NULL, config_fingerprint TEXT NOT NULL, seconds REAL,
        PRIMARY KEY (run_id, source_key)
    );
    CREATE TABLE sessions (
        run_id TEXT NOT NULL REFERENCES runs(run_id), source_key TEXT NOT NULL, ordinal INTEGER NOT NULL,
        session_id TEXT NOT NULL, session_id_raw TEXT, status TEXT NOT NULL, reasons TEXT NOT NULL,
        detail TEXT NOT NULL, output_path TEXT, output_sha256 TEXT, interactions INTEGER,
        source_turns INTEGER, characters INTEGER, seconds REAL,
        PRIMARY KEY (run_id, source_key, ordinal)
    );
    CREATE INDEX files_by_key ON files (source_key, sha256);
    CREATE INDEX sessions_by_status ON sessions (status);
    """,
    # 1 -> 2: the revision index of the output documents (seed 001); blobs live under OUT/.revisions
    """
    CREATE TABLE revisions (
        output_path TEXT NOT NULL, rev INTEGER NOT NULL, sha256 TEXT NOT NULL, note TEXT NOT NULL,
        ts TEXT NOT NULL, run_id TEXT,
        PRIMARY KEY (output_path, rev)
    );
    -- the mass-latch check of an unchanged input looks up its latest sessions by key
    CREATE INDEX sessions_by_key ON sessions (source_key);
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True, slots=True)
class RevisionRow:
    """A document a shard wrote (or found already written): a revision unless the index already
    ends with this sha256. ``previous_sha256`` is what the file held before, if anything."""

    output_path: str
    sha256: str
    note: str
    ts: str
    previous_sha256: str | None = None


@dataclass(frozen=True, slots=True)
class FileRow:
    source_key: str
    source_path: str
    sha256: str | None
    size: int
    grammar: str | None
    status: str
    reasons: list[str]
    detail: str
    sessions: int
    seconds: float


@dataclass(frozen=True, slots=True)
class SessionRow:
    source_key: str
    ordinal: int
    session_id: str
    session_id_raw: str | None
    status: str
    reasons: list[str]
    detail: str
    output_path: str | None
    output_sha256: str | None
    interactions: int
    source_turns: int
    characters: int
    seconds: float


class Ledger:
    """A connection to the ledger with the queries the CLI and the flow need."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(path, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self._migrate()

    def close(self) -> None:
        self.db.close()

    def _version(self) -> int:
        has_meta = self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            return 0
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        version = self._version()
        if version > SCHEMA_VERSION:
            raise RuntimeError(f"ledger {self.path} has schema {version}, newer than this version knows")
        for step in range(version, SCHEMA_VERSION):
            with self.db:
                self.db.executescript(MIGRATIONS[step])
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(step + 1),))

    # -- writing ---------------------------------------------------------------------------------
    def start_run(self, run_id: str, started_at: str, args: dict[str, Any], fingerprint: str,
                  pipeline_version: str) -> None:
        with self.db:
            self.db.execute(
                "INSERT INTO runs (run_id, started_at, status, args, config_fingerprint, pipeline_version) "
                "VALUES (?, ?, 'running', ?, ?, ?)",
                (run_id, started_at, orjson.dumps(args, default=str).decode(), fingerprint, pipeline_version),
            )

    def record(self, run_id: str, fingerprint: str, files: Iterable[FileRow], sessions: Iterable[SessionRow]) -> None:
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run_id, f.source_key, f.source_path, f.sha256, f.size, f.grammar, f.status,
                  ",".join(f.reasons), f.detail, f.sessions, fingerprint, f.seconds) for f in files],
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run_id, s.source_key, s.ordinal, s.session_id, s.session_id_raw, s.status,
                  ",".join(s.reasons), s.detail, s.output_path, s.output_sha256, s.interactions,
                  s.source_turns, s.characters, s.seconds) for s in sessions],
            )

    def add_revisions(self, rows: Iterable[RevisionRow], run_id: str | None = None) -> list[tuple[str, int]]:
        """Append each row as the next revision of its document unless the index already ends with
        that sha256; returns (output_path, rev) of what was appended.

        A document with no history whose file held other bytes before (written before the store
        existed) gets those as v0 first, so every replaced content stays reachable.
        """
        added = []
        with self.db:
            for r in rows:
                last = self.db.execute("SELECT rev, sha256 FROM revisions WHERE output_path=? ORDER BY rev DESC "
                                       "LIMIT 1", (r.output_path,)).fetchone()
                if last is not None and last[1] == r.sha256:
                    continue
                rev = 0 if last is None else last[0] + 1
                note = r.note or "rerun"
                if last is None and r.previous_sha256 and r.previous_sha256 != r.sha256:
                    self.db.execute("INSERT INTO revisions VALUES (?,?,?,?,?,?)",
                                    (r.output_path, 0, r.previous_sha256, "init|found before the revision store",
                                     r.ts, None))
                    rev = 1
                elif last is None:
                    note = f"init|{r.note}" if r.note else "init"
                self.db.execute("INSERT INTO revisions VALUES (?,?,?,?,?,?)",
                                (r.output_path, rev, r.sha256, note, r.ts, run_id))
                added.append((r.output_path, rev))
        return added

    def mark_interrupted(self) -> int:
        """Runs still 'running' whose process on this host is gone were killed: say so."""

        rows = self.db.execute("SELECT run_id, args FROM runs WHERE status='running'").fetchall()
        gone = []
        for run_id, args in rows:
            meta = orjson.loads(args)
            if meta.get("host") == socket.gethostname() and not _alive(meta.get("pid")):
                gone.append(run_id)
        with self.db:
            self.db.executemany("UPDATE runs SET status='interrupted' WHERE run_id=?", [(r,) for r in gone])
        return len(gone)

    def finish_run(self, run_id: str, finished_at: str, status: str, seconds: float) -> dict[str, int]:
        counts = self.run_counts(run_id)
        with self.db:
            self.db.execute(
                "UPDATE runs SET finished_at=?, status=?, seconds=?, files=?, files_skipped=?, "
                "files_quarantined=?, sessions_ok=?, sessions_partial=?, sessions_quarantined=? WHERE run_id=?",
                (finished_at, status, seconds, counts["files"], counts["files_skipped"],
                 counts["files_quarantined"], counts["sessions_ok"], counts["sessions_partial"],
                 counts["sessions_quarantined"], run_id),
            )
        return counts

    # -- reading ---------------------------------------------------------------------------------
    def run_counts(self, run_id: str) -> dict[str, int]:
        q = self.db.execute
        files = dict(q("SELECT status, COUNT(*) FROM files WHERE run_id=? GROUP BY status", (run_id,)).fetchall())
        # A file whose grammar broke after some sessions is partial, and its remainder quarantined.
        broken = q("SELECT COUNT(*) FROM files WHERE run_id=? AND status='partial' AND reasons != ''",
                   (run_id,)).fetchone()[0]
        sess = dict(q("SELECT status, COUNT(*) FROM sessions WHERE run_id=? GROUP BY status", (run_id,)).fetchall())
        turns = q("SELECT COALESCE(SUM(interactions), 0) FROM sessions WHERE run_id=? AND status IN ('ok','partial')",
                  (run_id,)).fetchone()[0]
        return {
            "files": sum(files.values()),
            "files_skipped": files.get("skipped", 0),
            "files_quarantined": files.get("quarantined", 0) + broken,
            "files_companion": files.get("companion", 0),
            "sessions_ok": sess.get("ok", 0),
            "sessions_partial": sess.get("partial", 0),
            "sessions_quarantined": sess.get("quarantined", 0),
            "interactions": turns,
        }

    def held_by_latch(self, source_key: str) -> bool:
        """True when the latest run that processed this input held a session back by the mass
        latch: such an input is not 'unchanged', since --allow-shrink may now decide otherwise."""
        row = self.db.execute(
            "SELECT 1 FROM sessions WHERE source_key=? AND reasons LIKE '%mass_latch%' AND run_id = "
            "(SELECT run_id FROM sessions WHERE source_key=? ORDER BY rowid DESC LIMIT 1) LIMIT 1",
            (source_key, source_key)).fetchone()
        return row is not None

    def revisions(self, output_path: str | None = None) -> list[dict[str, Any]]:
        """Revisions of one document (or all), oldest first, in (output_path, rev) order."""
        where, args = ("WHERE output_path=?", (output_path,)) if output_path is not None else ("", ())
        cur = self.db.execute(f"SELECT output_path, rev, sha256, note, ts, run_id FROM revisions {where} "
                              "ORDER BY output_path, rev", args)
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def latest_revisions(self) -> dict[str, str]:
        """output_path -> sha256 of its newest revision."""
        rows = self.db.execute("SELECT output_path, sha256 FROM revisions r WHERE rev = "
                               "(SELECT MAX(rev) FROM revisions WHERE output_path=r.output_path)").fetchall()
        return dict(rows)

    def paths_for_session_id(self, session_id: str) -> list[str]:
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

    def session_rows(self, run_id: str) -> list[dict[str, Any]]:
        cur = self.db.execute("SELECT * FROM sessions WHERE run_id=? ORDER BY source_key, ordinal", (run_id,))
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def file_rows(self, run_id: str) -> list[dict[str, Any]]:
        cur = self.db.execute("SELECT * FROM files WHERE run_id=? ORDER BY source_key", (run_id,))
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def run(self, run_id: str) -> dict[str, Any] | None:
        cur = self.db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,))
        row = cur.fetchone()
        return dict(zip([c[0] for c in cur.description], row, strict=True)) if row else None

    def done_before(self, source_key: str, sha256: str, fingerprint: str) -> bool:
        """True when this exact input was processed with these settings and nothing in it failed."""
        row = self.db.execute(
            "SELECT status FROM files WHERE source_key=? AND sha256=? AND config_fingerprint=? "
            "AND status IN ('ok','partial','skipped') ORDER BY rowid DESC LIMIT 1",
            (source_key, sha256, fingerprint),
        ).fetchone()
        return row is not None

    def runs(self, limit: int = 10) -> list[dict[str, Any]]:
        cur = self.db.execute("SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?", (limit,))
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def latest_run_id(self) -> str | None:
        row = self.db.execute("SELECT run_id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def quarantined(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Quarantined files and sessions of a run (default: the latest), with their reasons."""
        run_id = run_id or self.latest_run_id()
        rows = self.db.execute(
            "SELECT 'file' AS what, source_key, source_path, NULL AS ordinal, NULL AS session_id, reasons, detail "
            "FROM files WHERE run_id=? AND (status='quarantined' OR (status='partial' AND reasons != '')) "
            "UNION ALL "
            "SELECT 'session', s.source_key, f.source_path, s.ordinal, s.session_id, s.reasons, s.detail "
            "FROM sessions s JOIN files f ON f.run_id=s.run_id AND f.source_key=s.source_key "
            "WHERE s.run_id=? AND s.status='quarantined' ORDER BY 2, 4",
            (run_id, run_id),
        )
        cols = [c[0] for c in rows.description]
        return [dict(zip(cols, r, strict=True)) for r in rows.fetchall()]

    def failed_sources(self, run_id: str | None = None) -> list[str]:
        """Source paths of a run (default: the latest) with a quarantined or failed file or session."""
        run_id = run_id or self.latest_run_id()
        rows = self.db.execute(
            "SELECT DISTINCT source_path FROM files WHERE run_id=? AND (status IN ('quarantined','failed') "
            "OR source_key IN (SELECT source_key FROM sessions WHERE run_id=? AND status IN "
            "('quarantined','failed'))) ORDER BY 1",
            (run_id, run_id),
        )
        return [r[0] for r in rows.fetchall()]


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


def ledger_path_for(out_root: Path, settings: Settings) -> Path:
    """Where the ledger of an output root lives (``settings.ledger_path`` or OUT/ledger.sqlite)."""
    return settings.ledger_path or (out_root / "ledger.sqlite")
