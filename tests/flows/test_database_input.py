"""A SQLite chat database (iMessage chat.db) through the run: read whole whatever its size, its
write-ahead log ignored by rule and named in the documents."""

from __future__ import annotations

import shutil

import orjson

from audit.ledger import Ledger
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import ROOT

SAMPLE = ROOT / "sample_logs" / "imessage" / "chat.db"


def _run(folder, out, settings):
    summary = reconstruct([folder], out, settings)
    docs = sorted((out / "sessions").rglob("*.json"))
    return summary, [orjson.loads(p.read_bytes()) for p in docs]


def test_a_database_is_read_whole_even_above_the_stream_limits(tmp_path):
    folder = tmp_path / "messages"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "chat.db")
    small = Settings(stream_text_bytes=1024, stream_json_bytes=1024)
    summary, docs = _run(folder, tmp_path / "small", small)
    _, whole = _run(folder, tmp_path / "whole", Settings())
    assert summary.counts.sessions_ok == 1 and summary.counts.files_quarantined == 0
    assert docs == whole
    assert docs[0]["artifacts"]["ByggLogg"]["source"]["encoding"] == "sqlite3"


def test_the_write_ahead_log_beside_a_database_is_ignored_by_rule_and_named(tmp_path):
    folder = tmp_path / "messages"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "chat.db")
    (folder / "chat.db-wal").write_bytes(b"\x37\x7f\x06\x82" + b"\x00" * 60)
    out = tmp_path / "out"
    summary, docs = _run(folder, out, Settings())
    assert summary.counts.files_quarantined == 0
    assert any("write-ahead log" in w for w in docs[0]["artifacts"]["ByggLogg"]["warnings"])
    ledger = Ledger(out / "ledger.sqlite")
    try:
        rows = ledger.db.execute("SELECT status, detail FROM files WHERE source_path LIKE '%chat.db-wal'").fetchall()
    finally:
        ledger.close()
    assert [r[0] for r in rows] == ["ignored"] and "database" in rows[0][1]
