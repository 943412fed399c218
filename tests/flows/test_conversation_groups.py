"""A conversation over several files (a Slack channel's day files) is one session; the ledger keeps every file."""

from __future__ import annotations

import shutil

import orjson

from audit.ledger import Ledger
from flows import ingest
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import ROOT


def _export(tmp_path):
    src = tmp_path / "acme-export"
    shutil.copytree(ROOT / "sample_logs" / "slack-export", src)
    return src


def _interactions(path):
    return orjson.loads(path.read_bytes())["artifacts"]["Chatthistorik"]["interactions"]


def test_ingest_groups_a_channel_folders_day_files(tmp_path):
    refs = ingest.discover([_export(tmp_path)], Settings())
    groups = {r.key: [p.key for p in r.parts] for r in refs if r.parts}
    assert groups == {
        "acme-export/design": ["acme-export/design/2024-04-02.json"],
        "acme-export/general": ["acme-export/general/2024-04-01.json", "acme-export/general/2024-04-02.json"],
    }
    assert sorted(r.key for r in refs if not r.parts) == ["acme-export/channels.json", "acme-export/users.json"]


def test_a_channel_is_one_session_with_a_thread_reply_from_a_later_day_beside_its_parent(tmp_path):
    out = tmp_path / "out"
    summary = reconstruct([_export(tmp_path)], out, Settings())
    assert summary["counts"]["sessions_ok"] == 2 and summary["counts"]["files"] == 5
    turns = _interactions(out / "sessions" / "acme-export" / "general" / "C01GENERAL.json")
    assert [t["content"][:12] for t in turns] == ["<@U02OSKAR> ", "Welcome Oska", "Thanks, read", "Ping me if a",
                                                  "Deployed web", "Is the all-h", "15:00, room "]
    assert turns[3]["source"]["pointer"] == "/2024-04-02.json/0"
    ledger = Ledger(out / "ledger.sqlite")
    try:
        files = dict(ledger.db.execute("SELECT source_key, status FROM files").fetchall())
        sessions = ledger.db.execute("SELECT source_key, session_id, interactions FROM sessions").fetchall()
    finally:
        ledger.close()
    assert files["acme-export/general/2024-04-01.json"] == files["acme-export/general/2024-04-02.json"] == "ok"
    assert ("acme-export/general", "C01GENERAL", 7) in sessions
    again = reconstruct([tmp_path / "acme-export"], out, Settings())
    assert again["counts"]["files_skipped"] == 3


def test_a_broken_day_file_makes_the_channel_partial_and_names_the_file(tmp_path):
    src = _export(tmp_path)
    (src / "general" / "2024-04-03.json").write_text('[{"type": "message", "user": "U01MAJA", "te', encoding="utf-8")
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings())
    assert summary["counts"]["sessions_partial"] == 1
    doc = orjson.loads((out / "sessions" / "acme-export" / "general" / "C01GENERAL.json").read_bytes())
    assert "2024-04-03.json" in doc["artifacts"]["Chatthistorik"]["coverageReason"]


def test_date_named_files_of_a_format_that_does_not_group_are_read_one_by_one(tmp_path):
    folder = tmp_path / "dce" / "general"
    folder.mkdir(parents=True)
    for day in ("2024-06-10", "2024-06-11"):
        shutil.copy(ROOT / "sample_logs" / "discord" / "design-reviews.json", folder / f"{day}.json")
    out = tmp_path / "out"
    summary = reconstruct([tmp_path / "dce"], out, Settings())
    assert summary["counts"]["sessions_ok"] == 2 and summary["counts"]["files"] == 2
    assert len(list((out / "sessions" / "dce" / "general").rglob("*.json"))) == 2


def test_a_day_file_too_large_to_read_is_a_gap_in_its_channel(tmp_path):
    src = _export(tmp_path)
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings(max_file_bytes=700))
    assert summary["counts"]["sessions_partial"] >= 1
    doc = orjson.loads((out / "sessions" / "acme-export" / "general" / "C01GENERAL.json").read_bytes())
    assert "2024-04-01.json" in doc["artifacts"]["Chatthistorik"]["coverageReason"]
    ledger = Ledger(out / "ledger.sqlite")
    try:
        row = ledger.db.execute("SELECT status, reasons FROM files WHERE source_key=?",
                                ("acme-export/general/2024-04-01.json",)).fetchone()
    finally:
        ledger.close()
    assert row == ("quarantined", "too_large")
