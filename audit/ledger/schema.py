"""The ledger's schema: its migrations, its version, and the SQL predicates several repositories share.

Versioned schema: ``meta.schema_version`` names the version; ``MIGRATIONS[n]`` takes a ledger from
version n to n+1, applied in order when a ledger is opened, so an old ledger is upgraded in place.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from models.errors import Reason

from .errors import LedgerError

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
    # 5 -> 6: "possibly the same conversation" links and a person's decisions on them (links.py)
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
    # 6 -> 7: the sha256 of each input's raw bytes, beside that of its canonical text: an unchanged rerun
    # proves an input by its size and raw bytes, without decoding it (a row without it: by decoding)
    """
    ALTER TABLE files ADD COLUMN raw_sha256 TEXT;
    """,
]

# The one predicate every "did this input fail?" query derives from: a file failed in a run when
# that run recorded a reason for it or for one of its sessions. Used as ``files f``.
FAILED = "EXISTS (SELECT 1 FROM reasons r WHERE r.run_id = f.run_id AND r.source_key = f.source_key)"
OWN_FAILURE = ("EXISTS (SELECT 1 FROM reasons r WHERE r.run_id = f.run_id AND r.source_key = f.source_key "
               "AND r.ordinal IS NULL)")
SCHEMA_VERSION = len(MIGRATIONS)


def version(db: sqlite3.Connection) -> int:
    """The schema version a ledger is at (0: empty, nothing created yet)."""
    has_meta = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
    if not has_meta:
        return 0
    row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    return int(row[0]) if row else 0


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Upgrade step by step, each step one write transaction. Two processes may open a new
    ledger at once (a scheduled run and a CLI command): the one that loses the race sees its
    step fail on what the other created, reads the version again and goes on from there."""
    while (at := version(db)) < SCHEMA_VERSION:
        try:
            db.executescript(f"BEGIN IMMEDIATE;\n{MIGRATIONS[at]}\n"
                             f"INSERT OR REPLACE INTO meta VALUES ('schema_version', '{at + 1}');\n"
                             "COMMIT;")
        except sqlite3.OperationalError:
            if db.in_transaction:
                db.rollback()
            if version(db) == at:  # nobody else upgraded: a real failure
                raise
    if at > SCHEMA_VERSION:
        raise LedgerError(Reason.LEDGER_UNUSABLE, f"ledger {path} has schema {at}, newer than this version knows")
