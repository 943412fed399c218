"""The ledger's repositories over one schema: a ledger written before they existed opens and reads the
same through them, the schema is the one it always was, and rows come back typed.

``cases/ledger_v6/`` was made by the single-class ``Ledger`` (commit 6de1ddb): two runs over a ChatGPT
export, a Claude Code transcript (edited between the runs), a WhatsApp chat and its shorter copy, a
broken and an empty file, the ChatGPT export removed before the second run; then an alias, a possible
link and a person's decision. ``ledger_reads.json`` holds what every reading method returned then,
``ledger_schema.sql`` the schema it had.
"""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import asdict
from pathlib import Path

import orjson
import pytest

from audit.ledger import (
    SCHEMA_VERSION,
    Failed,
    FileRecord,
    Ledger,
    QuarantineEntry,
    RunRecord,
    SessionRecord,
)
from models.status import DocumentMark, FileStatus, RunStatus, SessionStatus

CASE = Path(__file__).parent / "cases" / "ledger_v6"


def _schema(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return "".join(f"{sql};\n" for (sql,) in db.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name"))
    finally:
        db.close()


@pytest.fixture
def old(tmp_path) -> Path:
    path = tmp_path / "ledger.sqlite"
    shutil.copy(CASE / "ledger.sqlite", path)
    return path


def _joined(row) -> dict:
    """A typed row as the old API's dict: reasons comma-joined as the column holds them."""
    out = asdict(row)
    if "reasons" in out:
        out["reasons"] = ",".join(row.reasons)
    return out


def _before_raw(row: FileRecord) -> dict:
    """A file row as the ledger before raw hashes had it: its rows have none after the migration."""
    assert row.raw_sha256 is None
    out = _joined(row)
    del out["raw_sha256"]
    return out


def _reads(ledger: Ledger) -> dict:
    """Everything the old API's reading methods returned, through the repositories."""
    runs = ledger.runs.recent(limit=-1)
    ids = [r.run_id for r in runs]
    aliased = [k for (k,) in ledger.db.execute("SELECT session_key FROM aliases")]
    keys = sorted({s.session_key for s in ledger.snapshots.all()} | set(aliased))
    known = ledger.inputs.known()
    prior = ledger.inputs.prior(known)
    said = ledger.links.decisions()
    last = ledger.inputs.of_run(ids[-1])
    return {
        "runs": runs, "latest_run_id": ledger.runs.latest_id(), "running_run": ledger.runs.running(),
        "run": {r: ledger.runs.get(r) for r in ids}, "run_counts": {r: ledger.runs.counts(r) for r in ids},
        "session_rows": {r: [_joined(s) for s in ledger.sessions.of_run(r)] for r in ids},
        "file_rows": {r: [_before_raw(f) for f in ledger.inputs.of_run(r)] for r in ids},
        "quarantined": {r: [_joined(q) for q in ledger.quarantine.of_run(r)] for r in ids},
        "failed_sources": {r: ledger.quarantine.failed_sources(r) for r in ids},
        "drift": {r: ledger.sessions.drift(r) for r in ids},
        "revisions": ledger.revisions.history(), "revision_count": ledger.revisions.count(),
        "latest_revisions": ledger.revisions.latest(),
        "writers": [[list(k), v] for k, v in ledger.sessions.writers().items()], "flags": ledger.revisions.flags(),
        "known_inputs": known, "document_keys": ledger.sessions.document_keys(),
        "keyed_sessions": ledger.sessions.keyed(), "snapshots": ledger.snapshots.all(),
        "snapshots_of": ledger.snapshots.of(keys),
        "snapshot_shas": {k: sorted(v) for k, v in ledger.snapshots.shas(keys).items()},
        "reconciliation": ledger.snapshots.reconciliation(),
        "reconciliation_by_run": {r: ledger.snapshots.reconciliation(r) for r in ids},
        "aliases_of": ledger.aliases.of(keys), "aliased_documents": ledger.aliases.documents(keys),
        "prints": [[list(k), v] for k, v in ledger.aliases.prints([("whatsapp", "Allotment Crew")]).items()],
        "listing": ledger.sessions.listing(),
        "prior": {"latest": prior.latest, "latched": sorted(prior.latched)},
        "previous_outputs": {k: sorted(ledger.inputs.previous_outputs(k, ids[0])) for k in known},
        "sources_with_sha": {f.sha256: ledger.inputs.read_at(f.sha256) for f in last if f.sha256},
        "paths_for_session_id": {s.session_id: ledger.sessions.paths_for_id(s.session_id)
                                 for s in ledger.sessions.of_run(ids[-1])},
        "meta": {k: ledger.meta.get(k) for k in ("schema_version", "index_revisions")},
        "possible": ledger.links.possible(),
        "decisions": {"same": said.same, "different": sorted(said.different)},
    }


def test_a_ledger_written_before_the_repositories_reads_the_same(old):
    expected = orjson.loads((CASE / "ledger_reads.json").read_bytes())
    expected["meta"]["schema_version"] = str(SCHEMA_VERSION)  # upgraded on opening: schema 7 adds raw hashes
    ledger = Ledger(old, read_only=True)
    try:
        got = orjson.loads(orjson.dumps(_reads(ledger), option=orjson.OPT_SORT_KEYS))
    finally:
        ledger.close()
    assert got.keys() == expected.keys()
    for name in expected:
        assert got[name] == expected[name], name


def test_the_schema_is_the_old_one_and_the_raw_hash(old, tmp_path):
    """Schema 7 is schema 6 and the raw bytes' sha256 of each input row; an old ledger is upgraded to it."""
    before = (CASE / "ledger_schema.sql").read_text()
    now = before.replace("context_sha256 TEXT,\n", "context_sha256 TEXT, raw_sha256 TEXT,\n")
    assert now != before
    Ledger(old).close()  # opened for writing: migrated from 6 to 7
    assert _schema(old) == now
    fresh = tmp_path / "fresh" / "ledger.sqlite"
    Ledger(fresh).close()
    assert _schema(fresh) == now
    ledger = Ledger(fresh, read_only=True)
    try:
        assert ledger.meta.get("schema_version") == str(SCHEMA_VERSION)
    finally:
        ledger.close()


def test_rows_come_back_typed(old):
    ledger = Ledger(old, read_only=True)
    try:
        run = ledger.runs.recent(1)[0]
        assert isinstance(run, RunRecord) and type(run.status) is RunStatus
        files = ledger.inputs.of_run(run.run_id)
        assert files and all(isinstance(f, FileRecord) and type(f.status) is FileStatus for f in files)
        assert all(type(f.reasons) is tuple for f in files)
        first = ledger.runs.recent(-1)[-1].run_id
        sessions = ledger.sessions.of_run(first)
        assert sessions and all(isinstance(s, SessionRecord) and type(s.status) is SessionStatus for s in sessions)
        failed = ledger.quarantine.of_run(first)
        assert {q.what for q in failed} == {Failed.FILE}
        assert all(isinstance(q, QuarantineEntry) and q.reasons and all(q.reasons) for q in failed)
        assert set(ledger.revisions.flags().values()) == {DocumentMark.SOURCE_MISSING}
        assert all(type(k.status) is SessionStatus for k in ledger.sessions.keyed())
    finally:
        ledger.close()


def test_each_repository_shares_the_ledger_s_one_connection(old):
    ledger = Ledger(old)
    try:
        repositories = [ledger.runs, ledger.inputs, ledger.sessions, ledger.quarantine, ledger.revisions,
                        ledger.snapshots, ledger.aliases, ledger.links, ledger.meta]
        assert all(r.db is ledger.db for r in repositories)
        ledger.meta.set("probe", "1")
        assert ledger.db.execute("SELECT value FROM meta WHERE key='probe'").fetchone() == ("1",)
    finally:
        ledger.close()
