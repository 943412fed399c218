"""Companion files (Slack's users.json) are context for their folder, recorded in the ledger, never sessions."""

from __future__ import annotations

import shutil

import orjson

from audit.ledger import Ledger
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import GOLDEN, key_document


def test_slack_export_resolves_users_through_users_json(tmp_path):
    src = tmp_path / "slack-export"
    shutil.copytree(GOLDEN / "slack" / "workspace", src, ignore=shutil.ignore_patterns("*.expected.json"))
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings())
    assert summary.counts.files_companion == 1 and summary.counts.sessions_ok == 1
    doc = orjson.loads(key_document(out, "slack", name="general.json").read_bytes())
    speakers = [i["speakerName"] for i in doc["artifacts"]["Chatthistorik"]["interactions"]]
    assert "Bo Berg" in speakers and "U02BO" not in speakers
    ledger = Ledger(out / "ledger.sqlite")
    try:
        rows = dict(ledger.db.execute("SELECT source_path, status FROM files").fetchall())
    finally:
        ledger.close()
    assert rows["slack-export/users.json"] == "companion"
