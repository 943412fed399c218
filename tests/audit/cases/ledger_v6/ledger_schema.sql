CREATE INDEX drift_by_run ON drift (run_id, item);
CREATE INDEX files_by_key ON files (source_key, sha256);
CREATE INDEX marks_by_path ON marks (output_path);
CREATE INDEX prints_by_chat ON prints (grammar, title);
CREATE INDEX reasons_by_file ON reasons (run_id, source_key);
CREATE INDEX reasons_by_key ON reasons (source_key, reason);
CREATE INDEX reconciliation_by_key ON reconciliation (session_key, run_id);
CREATE INDEX sessions_by_key ON sessions (source_key);
CREATE INDEX sessions_by_session_key ON sessions (session_key);
CREATE INDEX sessions_by_status ON sessions (status);
CREATE TABLE aliases (session_key TEXT PRIMARY KEY, canonical TEXT NOT NULL);
CREATE TABLE claims (
        run_id TEXT NOT NULL, session_key TEXT NOT NULL, shard TEXT NOT NULL, PRIMARY KEY (run_id, session_key)
    );
CREATE TABLE drift (
        run_id TEXT NOT NULL, source_key TEXT NOT NULL, ordinal INTEGER NOT NULL, item TEXT NOT NULL,
        count INTEGER NOT NULL, first_pointer TEXT NOT NULL
    );
CREATE TABLE files (
        run_id TEXT NOT NULL REFERENCES runs(run_id), source_key TEXT NOT NULL, source_path TEXT NOT NULL,
        sha256 TEXT, size INTEGER, grammar TEXT, status TEXT NOT NULL, reasons TEXT NOT NULL,
        detail TEXT NOT NULL, sessions INTEGER NOT NULL, config_fingerprint TEXT NOT NULL, seconds REAL, context_sha256 TEXT,
        PRIMARY KEY (run_id, source_key)
    );
CREATE TABLE link_decisions (
        key_a TEXT NOT NULL, key_b TEXT NOT NULL, decision TEXT NOT NULL, who TEXT NOT NULL, at TEXT NOT NULL,
        why TEXT NOT NULL
    );
CREATE TABLE link_pending (session_key TEXT PRIMARY KEY);
CREATE TABLE links (
        key_a TEXT NOT NULL, key_b TEXT NOT NULL, evidence TEXT NOT NULL, run_id TEXT, PRIMARY KEY (key_a, key_b)
    );
CREATE TABLE marks (
        run_id TEXT NOT NULL, output_path TEXT NOT NULL, source_key TEXT NOT NULL, mark TEXT NOT NULL,
        detail TEXT NOT NULL
    );
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE prints (
        session_key TEXT NOT NULL, grammar TEXT NOT NULL, title TEXT NOT NULL, prints TEXT NOT NULL,
        PRIMARY KEY (session_key)
    );
CREATE TABLE reasons (
        run_id TEXT NOT NULL, source_key TEXT NOT NULL, ordinal INTEGER, reason TEXT NOT NULL
    );
CREATE TABLE reconciliation (
        run_id TEXT NOT NULL, session_key TEXT NOT NULL, source_sha256 TEXT NOT NULL, expected INTEGER,
        reconstructed INTEGER NOT NULL, new INTEGER NOT NULL, unchanged INTEGER NOT NULL,
        absent INTEGER NOT NULL, edited INTEGER NOT NULL
    );
CREATE TABLE revisions (
        output_path TEXT NOT NULL, rev INTEGER NOT NULL, sha256 TEXT NOT NULL, note TEXT NOT NULL,
        ts TEXT NOT NULL, run_id TEXT,
        PRIMARY KEY (output_path, rev)
    );
CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL,
        args TEXT NOT NULL, config_fingerprint TEXT NOT NULL, pipeline_version TEXT NOT NULL,
        files INTEGER DEFAULT 0, files_skipped INTEGER DEFAULT 0, files_quarantined INTEGER DEFAULT 0,
        sessions_ok INTEGER DEFAULT 0, sessions_partial INTEGER DEFAULT 0,
        sessions_quarantined INTEGER DEFAULT 0, seconds REAL
    );
CREATE TABLE sessions (
        run_id TEXT NOT NULL REFERENCES runs(run_id), source_key TEXT NOT NULL, ordinal INTEGER NOT NULL,
        session_id TEXT NOT NULL, session_id_raw TEXT, status TEXT NOT NULL, reasons TEXT NOT NULL,
        detail TEXT NOT NULL, output_path TEXT, output_sha256 TEXT, interactions INTEGER,
        source_turns INTEGER, characters INTEGER, seconds REAL, unaccounted INTEGER NOT NULL DEFAULT 0, declared INTEGER NOT NULL DEFAULT 0, session_key TEXT,
        PRIMARY KEY (run_id, source_key, ordinal)
    );
CREATE TABLE snapshots (
        session_key TEXT NOT NULL, source_sha256 TEXT NOT NULL, source_path TEXT NOT NULL,
        blob_sha256 TEXT NOT NULL, first_at TEXT, last_at TEXT, messages INTEGER NOT NULL, run_id TEXT,
        PRIMARY KEY (session_key, source_sha256)
    );
