"""The run ledger: an embedded SQLite database of runs, input files and sessions.

Versioned schema: ``meta.schema_version`` names the version; ``MIGRATIONS[n]`` takes a ledger from
version n to n+1, applied in order when a ledger is opened, so an old ledger is upgraded in place.
Only the flow's main process writes to it (shards return their records), so there is one writer.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from models.errors import EnvironmentFault, Reason
from models.status import DocumentMark, FileStatus, RunStatus, SessionStatus

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
    # 2 -> 3: reasons as rows (ordinal NULL: the file's own); the companions' hash in the skip key
    """
    CREATE TABLE reasons (
        run_id TEXT NOT NULL, source_key TEXT NOT NULL, ordinal INTEGER, reason TEXT NOT NULL
    );
    CREATE INDEX reasons_by_file ON reasons (run_id, source_key);
    CREATE INDEX reasons_by_key ON reasons (source_key, reason);
    CREATE TABLE marks (
        run_id TEXT NOT NULL, output_path TEXT NOT NULL, source_key TEXT NOT NULL, mark TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX marks_by_path ON marks (output_path);
    ALTER TABLE files ADD COLUMN context_sha256 TEXT;
    WITH RECURSIVE split(run_id, source_key, ordinal, rest, reason) AS (
        SELECT run_id, source_key, NULL, reasons || ',', NULL FROM files WHERE reasons != ''
        UNION ALL
        SELECT run_id, source_key, ordinal, reasons || ',', NULL FROM sessions WHERE reasons != ''
        UNION ALL
        SELECT run_id, source_key, ordinal, substr(rest, instr(rest, ',') + 1), substr(rest, 1, instr(rest, ',') - 1)
        FROM split WHERE rest != ''
    )
    INSERT INTO reasons SELECT run_id, source_key, ordinal, reason FROM split WHERE reason IS NOT NULL;
    """,
    # 3 -> 4: source accounting per session, and the format drift the grammars met
    """
    ALTER TABLE sessions ADD COLUMN unaccounted INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN declared INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE drift (
        run_id TEXT NOT NULL, source_key TEXT NOT NULL, ordinal INTEGER NOT NULL, item TEXT NOT NULL,
        count INTEGER NOT NULL, first_pointer TEXT NOT NULL
    );
    CREATE INDEX drift_by_run ON drift (run_id, item);
    """,
    # 4 -> 5: sessions by key (#15): the key of each session row, the snapshots of each key, the
    # claims that give a key one writer per run, the reconciliation of each merged key
    """
    ALTER TABLE sessions ADD COLUMN session_key TEXT;
    CREATE INDEX sessions_by_session_key ON sessions (session_key);
    CREATE TABLE snapshots (
        session_key TEXT NOT NULL, source_sha256 TEXT NOT NULL, source_path TEXT NOT NULL,
        blob_sha256 TEXT NOT NULL, first_at TEXT, last_at TEXT, messages INTEGER NOT NULL, run_id TEXT,
        PRIMARY KEY (session_key, source_sha256)
    );
    CREATE TABLE claims (
        run_id TEXT NOT NULL, session_key TEXT NOT NULL, shard TEXT NOT NULL, PRIMARY KEY (run_id, session_key)
    );
    CREATE TABLE reconciliation (
        run_id TEXT NOT NULL, session_key TEXT NOT NULL, source_sha256 TEXT NOT NULL, expected INTEGER,
        reconstructed INTEGER NOT NULL, new INTEGER NOT NULL, unchanged INTEGER NOT NULL,
        absent INTEGER NOT NULL, edited INTEGER NOT NULL
    );
    CREATE INDEX reconciliation_by_key ON reconciliation (session_key, run_id);
    CREATE TABLE prints (
        session_key TEXT NOT NULL, grammar TEXT NOT NULL, title TEXT NOT NULL, prints TEXT NOT NULL,
        PRIMARY KEY (session_key)
    );
    CREATE INDEX prints_by_chat ON prints (grammar, title);
    CREATE TABLE aliases (session_key TEXT PRIMARY KEY, canonical TEXT NOT NULL);
    """,
    # 1 -> 2: "possibly the same conversation" links and a person's decisions on them (audit/links.py)
    """
    CREATE TABLE links (
        key_a TEXT NOT NULL, key_b TEXT NOT NULL, evidence TEXT NOT NULL, run_id TEXT, PRIMARY KEY (key_a, key_b)
    );
    CREATE TABLE link_decisions (
        key_a TEXT NOT NULL, key_b TEXT NOT NULL, decision TEXT NOT NULL, who TEXT NOT NULL, at TEXT NOT NULL,
        why TEXT NOT NULL
    );
    CREATE TABLE link_pending (session_key TEXT PRIMARY KEY);
    """,
]

# The one predicate every "did this input fail?" query derives from: a file failed in a run when
# that run recorded a reason for it or for one of its sessions. Used as ``files f``.
FAILED = "EXISTS (SELECT 1 FROM reasons r WHERE r.run_id = f.run_id AND r.source_key = f.source_key)"
OWN_FAILURE = ("EXISTS (SELECT 1 FROM reasons r WHERE r.run_id = f.run_id AND r.source_key = f.source_key "
               "AND r.ordinal IS NULL)")
SCHEMA_VERSION = len(MIGRATIONS)
MOVED_TO = "moved to "  # the note that ends a moved document's history at its old path (#15)


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
    status: FileStatus
    reasons: list[str]
    detail: str
    sessions: int
    seconds: float
    context_sha256: str | None = None  # the companions' hash: a changed users.json is a change


@dataclass(frozen=True, slots=True)
class SessionRow:
    source_key: str
    ordinal: int
    session_id: str
    session_id_raw: str | None
    status: SessionStatus
    reasons: list[str]
    detail: str
    output_path: str | None
    output_sha256: str | None
    interactions: int
    source_turns: int
    characters: int
    seconds: float
    unaccounted: int = 0
    declared: int = 0
    drift: dict[str, dict[str, Any]] | None = None
    session_key: str | None = None


@dataclass(frozen=True, slots=True)
class SnapshotRow:
    """One session's document from one source (#15): the same key and source sha256 are one snapshot;
    ``blob_sha256`` names its single-snapshot document in the revision store."""

    session_key: str
    source_sha256: str
    source_path: str
    blob_sha256: str
    first_at: str | None
    last_at: str | None
    messages: int


@dataclass(frozen=True, slots=True)
class ReconciliationRow:
    """What one snapshot brought to its key's document (expected: the source's own counter, if any)."""

    session_key: str
    source_sha256: str
    expected: int | None
    reconstructed: int
    new: int
    unchanged: int
    absent: int
    edited: int


KEYS_PER_QUERY = 500  # source keys bound in one query (SQLite's variable limit is far above)


@dataclass(frozen=True, slots=True)
class PriorRuns:
    """What the ledger recorded of a set of inputs before this run (``Ledger.prior``)."""

    latest: dict[str, tuple]  # source key -> (sha256, fingerprint, context sha256, status, failed) of its last row
    latched: set[str]  # keys whose latest processing held a session back by the mass latch

    def unchanged(self, source_key: str, sha256: str, fingerprint: str, context_sha256: str | None = None) -> bool:
        """True when the latest record of this input is of these exact bytes (and companions), with
        these settings, and nothing in it failed (an input changed and changed back is processed),
        and no session of it is held by the mass latch (--allow-shrink may now decide otherwise)."""
        row = self.latest.get(source_key)
        return (row is not None and row == (sha256, fingerprint, context_sha256, row[3], 0)
                and row[3] in (FileStatus.OK, FileStatus.PARTIAL, FileStatus.SKIPPED)
                and source_key not in self.latched)

    def held(self, source_key: str) -> bool:
        return source_key in self.latched


class LedgerError(EnvironmentFault):
    """The ledger is missing, corrupt, newer than this version, or cannot be written: the environment
    failed the command, never an input; the reason code says how (``sqlite_reason``)."""


# SQLite says what failed only in words; these are its fixed messages (sqlite3.c, sqlite3ErrStr)
SQLITE_REASONS = {
    "database or disk is full": Reason.DISK_FULL,
    "attempt to write a readonly database": Reason.OUTPUT_READ_ONLY,
    "disk I/O error": Reason.OUTPUT_IO,
    "unable to open database file": Reason.LEDGER_UNUSABLE,
    "database disk image is malformed": Reason.LEDGER_CORRUPT,
    "file is not a database": Reason.LEDGER_CORRUPT,
}


def sqlite_reason(exc: sqlite3.Error) -> Reason | None:
    """The environment fault a SQLite error names, or None (a bug: bad SQL, a constraint)."""
    return next((reason for text, reason in SQLITE_REASONS.items() if text in str(exc)), None)


def _unusable(exc: sqlite3.Error, message: str, otherwise: Reason = Reason.LEDGER_UNUSABLE) -> LedgerError:
    return LedgerError(sqlite_reason(exc) or otherwise, message)


JOURNAL_MODE = "PERSIST"
"""A rollback journal kept between transactions, not WAL. WAL's index is a shared memory map of
``ledger.sqlite-shm``, and a write through a map the file system can no longer back (an output
gone read-only or away) kills the process with SIGBUS instead of returning an error; a rollback
journal is read and written with plain calls, so such a fault is an error the run can record. PERSIST
keeps the journal's blocks between transactions, so the last small writes of a run that filled the
disk (its status) reuse them (docs/faults.md has the measurements)."""
RESERVE_BYTES = 1 << 20
"""Space held beside the ledger and given back when the disk fills, so the rows of what was written
and the run's ``failed`` status still fit."""


class Ledger:
    """A connection to the ledger with the queries the CLI and the flow need."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        """Open (and upgrade) the ledger; ``read_only`` opens an existing one for reading only,
        which works on a read-only output and never creates or migrates anything."""
        self.path = path
        self.read_only = read_only
        if read_only:
            if not path.is_file():
                raise LedgerError(Reason.LEDGER_UNUSABLE, f"no ledger at {path}: nothing has run into {path.parent}")
            self._open_read_only()
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=30)
        try:
            self._prepare()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise _unusable(exc, f"ledger {path} cannot be used: {exc}") from None

    def _prepare(self, patience: float = 30.0) -> None:
        """The journal mode (``JOURNAL_MODE``) and the schema. Switching the journal mode is refused at
        once, without waiting, while another process opens or closes the same ledger, so a lock here
        is waited out; so is an I/O error that a switch racing another process's switch back can report (seen when two
        processes create one ledger together). Past ``patience`` the error is raised."""
        deadline = time.monotonic() + patience
        while True:
            try:
                self.db.execute(f"PRAGMA journal_mode={JOURNAL_MODE}")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self._migrate()
                return
            except sqlite3.OperationalError as exc:
                if not any(w in str(exc) for w in ("locked", "disk I/O error")) or time.monotonic() > deadline:
                    raise
                if self.db.in_transaction:
                    self.db.rollback()
                time.sleep(0.05)

    def _open_read_only(self) -> None:
        self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            version = self._version()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise _unusable(exc, f"ledger {self.path} cannot be read: {exc}") from None
        if version < SCHEMA_VERSION and os.access(self.path.parent, os.W_OK):
            self.db.close()
            Ledger(self.path).close()  # an older ledger is upgraded first, when it can be
            self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
            version = self._version()
        if version != SCHEMA_VERSION:
            self.db.close()
            raise LedgerError(Reason.LEDGER_UNUSABLE, f"ledger {self.path} has schema {version}, this version "
                              f"reads {SCHEMA_VERSION}; a run upgrades it")

    def check(self) -> None:
        """``PRAGMA quick_check`` (every page and index, not the cross-checks): a damaged ledger is
        refused at the start of a run, naming the file, instead of failing somewhere inside it."""
        try:
            problems = [row[0] for row in self.db.execute("PRAGMA quick_check(5)")]
        except sqlite3.DatabaseError as exc:
            raise _unusable(exc, f"ledger {self.path} is damaged: {exc}", Reason.LEDGER_CORRUPT) from exc
        if problems != ["ok"]:
            raise LedgerError(Reason.LEDGER_CORRUPT, f"ledger {self.path} is damaged: {'; '.join(problems)}")

    def reserve_path(self) -> Path:
        return self.path.with_name(f"{self.path.name}-reserve")

    def hold_reserve(self) -> None:
        """Hold ``RESERVE_BYTES`` beside the ledger (once; nothing when the disk has no room for it)."""
        path = self.reserve_path()
        if path.exists():
            return
        try:
            with path.open("wb") as fh:
                fh.truncate(0)
                fh.write(bytes(RESERVE_BYTES))
                fh.flush()
                os.fsync(fh.fileno())
        except OSError:
            path.unlink(missing_ok=True)

    def release_reserve(self) -> None:
        """Give the reserve back to the file system (at a fault: the ledger's last writes need it)."""
        with contextlib.suppress(OSError):
            self.reserve_path().unlink(missing_ok=True)

    def close(self) -> None:
        if not self.read_only:
            try:  # back to a rollback journal when no one else reads: then read-only opens create no files
                self.db.execute("PRAGMA busy_timeout=0")
                self.db.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.OperationalError:
                pass  # another connection is open; it is left in WAL mode
        self.db.close()

    def _version(self) -> int:
        has_meta = self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            return 0
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        """Upgrade step by step, each step one write transaction. Two processes may open a new
        ledger at once (a scheduled run and a CLI command): the one that loses the race sees its
        step fail on what the other created, reads the version again and goes on from there."""
        while (version := self._version()) < SCHEMA_VERSION:
            try:
                self.db.executescript(f"BEGIN IMMEDIATE;\n{MIGRATIONS[version]}\n"
                                      f"INSERT OR REPLACE INTO meta VALUES ('schema_version', '{version + 1}');\n"
                                      "COMMIT;")
            except sqlite3.OperationalError:
                if self.db.in_transaction:
                    self.db.rollback()
                if self._version() == version:  # nobody else upgraded: a real failure
                    raise
        if version > SCHEMA_VERSION:
            raise LedgerError(Reason.LEDGER_UNUSABLE,
                              f"ledger {self.path} has schema {version}, newer than this version knows")

    # -- writing ---------------------------------------------------------------------------------
    def start_run(self, run_id: str, started_at: str, args: dict[str, Any], fingerprint: str,
                  pipeline_version: str) -> None:
        with self.db:
            self.db.execute(
                "INSERT INTO runs (run_id, started_at, status, args, config_fingerprint, pipeline_version) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, started_at, RunStatus.RUNNING, orjson.dumps(args, default=str).decode(), fingerprint,
                 pipeline_version),
            )

    def record(self, run_id: str, fingerprint: str, files: Iterable[FileRow], sessions: Iterable[SessionRow]) -> None:
        files, sessions = list(files), list(sessions)
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run_id, f.source_key, f.source_path, f.sha256, f.size, f.grammar, str(f.status),
                  ",".join(f.reasons), f.detail, f.sessions, fingerprint, f.seconds, f.context_sha256)
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
                if last is not None and last[1] == r.sha256 and not r.note.startswith(MOVED_TO):
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

    def add_snapshots(self, rows: Iterable[SnapshotRow], run_id: str) -> None:
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
            for chunk in _chunks(keys):
                owners.update(self.db.execute(
                    f"SELECT session_key, shard FROM claims WHERE run_id=? AND session_key IN ({_marks(chunk)})",
                    (run_id, *chunk)).fetchall())
        return owners

    def snapshot_shas(self, keys: Iterable[str]) -> dict[str, set[str]]:
        """key -> the source sha256 of every snapshot known for it (one query per 500 keys)."""
        found: dict[str, set[str]] = {}
        for chunk in _chunks(sorted(set(keys))):
            for key, sha in self.db.execute(
                    f"SELECT session_key, source_sha256 FROM snapshots WHERE session_key IN ({_marks(chunk)})", chunk):
                found.setdefault(key, set()).add(sha)
        return found

    def snapshots_of(self, keys: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """key -> its snapshots (``snapshots`` order), one query per 500 keys."""
        found: dict[str, list[dict[str, Any]]] = {}
        for chunk in _chunks(sorted(set(keys))):
            for row in self._dicts(f"SELECT * FROM snapshots WHERE session_key IN ({_marks(chunk)}) "
                                   "ORDER BY session_key, COALESCE(first_at, ''), source_sha256", tuple(chunk)):
                found.setdefault(row["session_key"], []).append(row)
        return found

    def snapshots(self, key: str | None = None) -> list[dict[str, Any]]:
        """Snapshots of one key (or all), in (key, first time, source sha256) order."""
        where, args = ("WHERE session_key=?", (key,)) if key is not None else ("", ())
        return self._dicts(f"SELECT * FROM snapshots {where} ORDER BY session_key, COALESCE(first_at, ''), "
                           "source_sha256", args)

    def add_reconciliation(self, run_id: str, rows: Iterable[ReconciliationRow]) -> None:
        """A key's reconciliation in a run, replacing what the run recorded of that key before (a key a
        shard wrote alone and the merge phase then merged is reconciled once, as merged)."""
        rows = list(rows)
        with self.db:
            self.db.executemany("DELETE FROM reconciliation WHERE run_id=? AND session_key=?",
                                [(run_id, k) for k in sorted({r.session_key for r in rows})])
            self.db.executemany("INSERT INTO reconciliation VALUES (?,?,?,?,?,?,?,?,?)",
                                [(run_id, r.session_key, r.source_sha256, r.expected, r.reconstructed, r.new,
                                  r.unchanged, r.absent, r.edited) for r in rows])

    def reconciliation(self, run_id: str | None = None, key: str | None = None) -> list[dict[str, Any]]:
        """Reconciliation rows of a run (default: each key's latest run that reconciled it), one per
        snapshot in the order the merge ranked them (oldest first), keys in order."""
        if run_id is not None:
            return self._dicts("SELECT * FROM reconciliation WHERE run_id=? ORDER BY session_key, rowid", (run_id,))
        where = ("WHERE r.session_key=?" if key is not None
                 else "WHERE r.session_key NOT IN (SELECT session_key FROM aliases)")  # an alias counts in its key
        return self._dicts(
            "SELECT r.* FROM reconciliation r JOIN (SELECT session_key, MAX(rowid) AS last FROM reconciliation "
            "GROUP BY session_key) l ON l.session_key=r.session_key JOIN reconciliation x ON x.rowid=l.last "
            f"AND x.run_id=r.run_id {where} ORDER BY r.session_key, r.rowid", (key,) if key is not None else ())

    def add_prints(self, rows: Iterable[tuple[str, str, str, list[str]]]) -> None:
        """The message prints of id-less sessions (key, grammar, title, prints), the longest kept."""
        with self.db:
            self.db.executemany(
                "INSERT INTO prints VALUES (?,?,?,?) ON CONFLICT (session_key) DO UPDATE SET prints=excluded.prints "
                "WHERE length(excluded.prints) > length(prints.prints)",
                [(k, g, t, orjson.dumps(p).decode()) for k, g, t, p in rows])

    def prints(self, chats: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[tuple[str, list[str]]]]:
        """(grammar, title) -> [(key, prints)] of the known id-less sessions of these chats, in key order."""
        found: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}
        for grammar, title in sorted(set(chats)):
            for key, prints in self.db.execute("SELECT session_key, prints FROM prints WHERE grammar=? AND title=? "
                                               "ORDER BY session_key", (grammar, title)):
                found.setdefault((grammar, title), []).append((key, orjson.loads(prints)))
        return found

    def aliases_of(self, keys: Iterable[str]) -> dict[str, str]:
        """key -> the key it was resolved to (an id-less session found to be another's continuation)."""
        found: dict[str, str] = {}
        for chunk in _chunks(sorted(set(keys))):
            found.update(self.db.execute(
                f"SELECT session_key, canonical FROM aliases WHERE session_key IN ({_marks(chunk)})", chunk).fetchall())
        return found

    def remove_alias(self, key: str, sources: Iterable[str]) -> None:
        """Undo ``add_alias`` for ``key``: the snapshots of these sources (sha256) go back to it."""
        with self.db:
            canonical = self.db.execute("SELECT canonical FROM aliases WHERE session_key=?", (key,)).fetchone()
            if canonical is None:
                return
            for sha in sources:
                self.db.execute("UPDATE OR IGNORE snapshots SET session_key=? WHERE session_key=? AND source_sha256=?",
                                (key, canonical[0], sha))
            self.db.execute("DELETE FROM aliases WHERE session_key=?", (key,))

    def add_alias(self, key: str, canonical: str) -> None:
        """Resolve ``key`` to ``canonical``: its snapshots become the canonical key's (one per source
        sha256), and keys resolved to it before follow."""
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO snapshots SELECT ?, source_sha256, source_path, blob_sha256, "
                            "first_at, last_at, messages, run_id FROM snapshots WHERE session_key=?", (canonical, key))
            self.db.execute("DELETE FROM snapshots WHERE session_key=?", (key,))
            self.db.execute("UPDATE aliases SET canonical=? WHERE canonical=?", (canonical, key))
            self.db.execute("INSERT OR REPLACE INTO aliases VALUES (?, ?)", (key, canonical))

    def aliased_documents(self, keys: Iterable[str]) -> dict[str, list[str]]:
        """canonical key -> the document paths its aliases were written at (to be moved to its own)."""
        found: dict[str, list[str]] = {}
        for chunk in _chunks(sorted(set(keys))):
            for canonical, path in self.db.execute(
                    "SELECT a.canonical, s.output_path FROM aliases a JOIN sessions s ON s.session_key=a.session_key "
                    f"WHERE a.canonical IN ({_marks(chunk)}) AND s.output_sha256 IS NOT NULL "
                    "AND s.output_path LIKE 'sessions/%' GROUP BY a.canonical, s.output_path ORDER BY 1, 2", chunk):
                found.setdefault(canonical, []).append(path)
        return found

    def keyed_sessions(self, key: str | None = None) -> list[dict[str, Any]]:
        """Each key's latest written document (key, output path, session id), in key order."""
        where = "AND s.session_key=?" if key is not None else ""
        return self._dicts(
            "SELECT s.session_key, s.output_path, s.session_id, s.status FROM sessions s WHERE s.rowid IN "
            "(SELECT MAX(rowid) FROM sessions WHERE session_key IS NOT NULL AND output_sha256 IS NOT NULL "
            "AND output_path LIKE 'sessions/%' AND session_key NOT IN (SELECT session_key FROM aliases) "
            f"GROUP BY session_key) {where} ORDER BY s.session_key",
            (key,) if key is not None else ())

    def document_keys(self) -> list[tuple[str, str, str]]:
        """(output path, output sha256, session key) of every document bytes a run wrote with a key."""
        return self.db.execute(
            "SELECT output_path, output_sha256, MAX(session_key) FROM sessions WHERE output_sha256 IS NOT NULL "
            "AND session_key IS NOT NULL GROUP BY output_path, output_sha256").fetchall()

    def sources_with_sha(self, sha256: str) -> list[dict[str, Any]]:
        """Where inputs with these bytes were read: source path and the run that read it, newest first."""
        return self._dicts("SELECT DISTINCT f.source_path, f.run_id, r.args FROM files f JOIN runs r USING (run_id) "
                           "WHERE f.sha256=? ORDER BY r.started_at DESC, r.rowid DESC", (sha256,))

    def listing(self, key: str | None = None) -> list[dict[str, Any]]:
        """Sessions by key (``reconstruct sessions``): each key's document, its snapshots and its counts
        (new and unchanged summed over its snapshots, edited likewise, absent: from the latest), in key order."""
        documents = {r["session_key"]: r for r in self.keyed_sessions(key)}
        snaps = self.snapshots_of(documents)
        counts: dict[str, list[dict[str, Any]]] = {}
        for row in self.reconciliation(key=key):
            counts.setdefault(row["session_key"], []).append(row)
        out = []
        for k, doc in documents.items():
            rows = counts.get(k, [])
            out.append({
                "key": k, "path": doc["output_path"], "session_id": doc["session_id"], "status": doc["status"],
                "snapshots": [{"source_path": s["source_path"], "sha256": s["source_sha256"], "first": s["first_at"],
                               "last": s["last_at"], "messages": s["messages"]} for s in snaps.get(k, [])],
                "counts": {"new": sum(r["new"] for r in rows), "unchanged": sum(r["unchanged"] for r in rows),
                           "absent": rows[-1]["absent"] if rows else 0, "edited": sum(r["edited"] for r in rows)},
            })
        return out

    def _dicts(self, sql: str, args: tuple = ()) -> list[dict[str, Any]]:
        cur = self.db.execute(sql, args)
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

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

    def finish_run(self, run_id: str, finished_at: str, status: RunStatus, seconds: float) -> dict[str, int]:
        counts = self.run_counts(run_id)
        with self.db:
            self.db.execute(
                "UPDATE runs SET finished_at=?, status=?, seconds=?, files=?, files_skipped=?, "
                "files_quarantined=?, sessions_ok=?, sessions_partial=?, sessions_quarantined=? WHERE run_id=?",
                (finished_at, str(status), seconds, counts["files"], counts["files_skipped"],
                 counts["files_quarantined"], counts["sessions_ok"], counts["sessions_partial"],
                 counts["sessions_quarantined"], run_id),
            )
        return counts

    # -- reading ---------------------------------------------------------------------------------
    def run_counts(self, run_id: str) -> dict[str, int]:
        q = self.db.execute
        files = dict(q("SELECT status, COUNT(*) FROM files WHERE run_id=? GROUP BY status", (run_id,)).fetchall())
        # a file with a reason of its own (nothing read, or its grammar broke after some sessions)
        own = q(f"SELECT COUNT(*) FROM files f WHERE run_id=? AND {OWN_FAILURE}", (run_id,)).fetchone()[0]
        failed = q(f"SELECT COUNT(*) FROM files f WHERE run_id=? AND {FAILED}", (run_id,)).fetchone()[0]
        # a merged document's row (ordinal 0, flows/merge.py) is not one more session of the sources
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
        return {
            "files": sum(files.values()),
            "files_skipped": files.get(FileStatus.SKIPPED, 0),
            "files_quarantined": own,
            "files_failed": failed,
            "files_companion": files.get(FileStatus.COMPANION, 0),
            "files_ignored": files.get(FileStatus.IGNORED, 0),
            "files_missing": files.get(FileStatus.MISSING, 0),
            "sessions_ok": sess.get(SessionStatus.OK, 0),
            "sessions_partial": sess.get(SessionStatus.PARTIAL, 0),
            "sessions_quarantined": sess.get(SessionStatus.QUARANTINED, 0),
            "interactions": turns,
            "sessions_unaccounted": unaccounted[0],
            "unaccounted_source": unaccounted[1],
            "drift_items": drift,
        }

    def drift(self, run_id: str) -> list[dict[str, Any]]:
        """Format drift of a run: each unknown item with its count and the first place it was met."""
        rows = self.db.execute(
            "SELECT item, SUM(count) AS count, MIN(source_key || ' ' || first_pointer) AS first FROM drift "
            "WHERE run_id=? GROUP BY item ORDER BY count DESC, item", (run_id,))
        cols = [c[0] for c in rows.description]
        return [dict(zip(cols, r, strict=True)) for r in rows.fetchall()]

    def revisions(self, output_path: str | None = None) -> list[dict[str, Any]]:
        """Revisions of one document (or all), oldest first, in (output_path, rev) order."""
        where, args = ("WHERE output_path=?", (output_path,)) if output_path is not None else ("", ())
        cur = self.db.execute(f"SELECT output_path, rev, sha256, note, ts, run_id FROM revisions {where} "
                              "ORDER BY output_path, rev", args)
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def revision_count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM revisions").fetchone()[0]

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def latest_revisions(self) -> dict[str, str]:
        """output_path -> sha256 of its newest revision, for the documents that are still at their path
        (a document moved to its key's address ends its old path's history with "moved to ...")."""
        rows = self.db.execute("SELECT output_path, sha256 FROM revisions r WHERE rev = "
                               "(SELECT MAX(rev) FROM revisions WHERE output_path=r.output_path) "
                               "AND note NOT LIKE ?", (MOVED_TO + "%",)).fetchall()
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

    def prior(self, keys: Iterable[str]) -> PriorRuns:
        """What earlier runs recorded of these inputs: each one's latest file record and whether its
        latest processing held a session back by the mass latch, in one query per kind for them all
        (a shard asks once, not once per input)."""
        keys = sorted(set(keys))
        latest: dict[str, tuple] = {}
        latched: set[str] = set()
        for start in range(0, len(keys), KEYS_PER_QUERY):
            chunk = keys[start:start + KEYS_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            for row in self.db.execute(
                    f"SELECT source_key, sha256, config_fingerprint, context_sha256, status, {FAILED} FROM files f "
                    f"WHERE rowid IN (SELECT MAX(rowid) FROM files WHERE source_key IN ({marks}) "
                    "GROUP BY source_key)", chunk):
                latest[row[0]] = tuple(row[1:])
            latched.update(r[0] for r in self.db.execute(
                "SELECT s.source_key FROM sessions s WHERE s.rowid IN (SELECT MAX(rowid) FROM sessions "
                f"WHERE source_key IN ({marks}) GROUP BY source_key) AND EXISTS (SELECT 1 FROM reasons r "
                "WHERE r.source_key = s.source_key AND r.run_id = s.run_id AND r.reason = ?)",
                (*chunk, Reason.MASS_LATCH)))
        return PriorRuns(latest, latched)

    def runs(self, limit: int = 10) -> list[dict[str, Any]]:
        cur = self.db.execute("SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?", (limit,))
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def running_run(self) -> str | None:
        """The latest run still marked running (the one a shard belongs to)."""
        row = self.db.execute("SELECT run_id FROM runs WHERE status=? ORDER BY rowid DESC LIMIT 1",
                              (RunStatus.RUNNING,)).fetchone()
        return row[0] if row else None

    def latest_run_id(self) -> str | None:
        row = self.db.execute("SELECT run_id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def quarantined(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """What failed in a run (default: the latest): one row per file or session with reasons."""
        run_id = run_id or self.latest_run_id()
        rows = self.db.execute(
            "SELECT CASE WHEN r.ordinal IS NULL THEN 'file' ELSE 'session' END AS what, r.source_key, "
            "COALESCE(f.source_path, r.source_key) AS source_path, r.ordinal, s.session_id, "
            "GROUP_CONCAT(r.reason, ',') AS reasons, "
            "COALESCE(s.detail, f.detail) AS detail "  # a conversation over several files: its folder's key

            "FROM reasons r LEFT JOIN files f ON f.run_id=r.run_id AND f.source_key=r.source_key "
            "LEFT JOIN sessions s ON s.run_id=r.run_id AND s.source_key=r.source_key AND s.ordinal=r.ordinal "
            "WHERE r.run_id=? GROUP BY r.source_key, r.ordinal ORDER BY r.source_key, r.ordinal",
            (run_id,),
        )
        cols = [c[0] for c in rows.description]
        return [dict(zip(cols, r, strict=True)) for r in rows.fetchall()]

    def failed_sources(self, run_id: str | None = None) -> list[dict[str, str]]:
        """Source keys and paths of a run (default: the latest) that failed, in key order."""
        run_id = run_id or self.latest_run_id()
        rows = self.db.execute(
            f"SELECT source_key, source_path FROM files f WHERE run_id=? AND {FAILED} "
            # a conversation over several files records its sessions under its folder's key
            # (a session key's failed merge, under the key, is no input: it is merged again with its next snapshot)
            "UNION SELECT DISTINCT r.source_key, r.source_key FROM reasons r WHERE r.run_id=? AND NOT EXISTS "
            "(SELECT 1 FROM files f WHERE f.run_id=r.run_id AND f.source_key=r.source_key) "
            "AND instr(r.source_key, ':') = 0 ORDER BY 1",
            (run_id, run_id))
        return [{"source_key": k, "source_path": p} for k, p in rows.fetchall()]

    def previous_outputs(self, source_key: str, run_id: str) -> set[str]:
        """Document paths the latest earlier run that processed this input wrote for it."""
        rows = self.db.execute(
            "SELECT output_path FROM sessions WHERE source_key=? AND output_path LIKE 'sessions/%' AND run_id = "
            "(SELECT run_id FROM sessions WHERE source_key=? AND run_id != ? ORDER BY rowid DESC LIMIT 1)",
            (source_key, source_key, run_id)).fetchall()
        return {r[0] for r in rows}

    def known_inputs(self) -> dict[str, tuple[str, str]]:
        """source key -> (status, source path) of its latest ledger row, for every input ever seen."""
        rows = self.db.execute("SELECT source_key, status, source_path FROM files ORDER BY rowid").fetchall()
        return {k: (s, p) for k, s, p in rows}

    def mark(self, run_id: str, rows: Iterable[tuple[str, str, DocumentMark, str]]) -> None:
        """Flag documents (output_path, source_key, mark, detail) that stay on disk but lost their source."""
        with self.db:
            self.db.executemany("INSERT INTO marks VALUES (?,?,?,?,?)",
                                [(run_id, p, k, str(m), d) for p, k, m, d in rows])

    def flags(self) -> dict[str, str]:
        """output_path -> mark, for documents marked after the last run that wrote them."""
        rows = self.db.execute(
            "SELECT m.output_path, m.mark FROM marks m JOIN runs r ON r.run_id = m.run_id WHERE NOT EXISTS ("
            "SELECT 1 FROM sessions s JOIN runs w ON w.run_id = s.run_id WHERE s.output_path = m.output_path "
            "AND s.output_sha256 IS NOT NULL AND w.rowid >= r.rowid) ORDER BY r.rowid").fetchall()
        return dict(rows)

    def has_run(self, run_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone() is not None


def _chunks(keys: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(keys), KEYS_PER_QUERY):
        yield keys[start:start + KEYS_PER_QUERY]


def _marks(chunk: list[str]) -> str:
    return ",".join("?" * len(chunk))


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
