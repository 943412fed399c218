"""The current tables each run publishes under OUT/datasets/current, typed, with the columns an audit asks first."""

from __future__ import annotations

import shutil

import polars as pl

from audit import current, publication
from audit.ledger import Ledger
from tests.audit.conftest import CHAT, KEY

UTC = pl.Datetime("us", "UTC")


def _published(out) -> dict[str, pl.DataFrame]:
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        files = publication.published(out, ledger)
    finally:
        ledger.close()
    assert files is not None
    return {t: pl.concat([pl.read_parquet(f) for f in files[t]]).sort(pl.all()) for t in current.TABLES}


def test_each_run_publishes_the_six_tables(audited):
    tables = _published(audited)
    sessions, turns = tables["sessions"], tables["turns"]
    assert sessions.schema["created_at"] == UTC and sessions.schema["first_at"] == UTC
    assert turns.schema["date"] == UTC and tables["runs"].schema["started_at"] == UTC
    chat = sessions.filter(pl.col("output_path") == CHAT).row(0, named=True)
    assert (chat["platform"], chat["session_key"], chat["grammar"]) == ("transcript", KEY, "transcript")
    assert chat["revisions"] == 2 and chat["interactions"] == 4
    assert set(turns["platform"]) == {"irc", "transcript"} and turns["run_id"].null_count() == 0
    assert turns.filter(pl.col("output_path") == CHAT)["session_key"].unique().to_list() == [KEY]
    words = tables["terms"]
    assert words.filter(pl.col("term") == "deploy")["output_path"].to_list() == [CHAT]  # once per document
    assert words["term"].to_list() == sorted(words["term"].to_list()) and "assistant" in words["term"].to_list()


def test_quarantine_and_runs_are_tables(audited):
    tables = _published(audited)
    runs, quarantine = tables["runs"], tables["quarantine"]
    assert runs.height == 2 and set(runs["status"]) == {"completed"}
    assert quarantine.height == 2 and set(quarantine["run_id"]) == set(runs["run_id"])
    row = quarantine.row(0, named=True)
    assert row["source_path"].endswith("broken.json") and row["reasons"] == ["binary"]
    assert "control bytes" in row["detail"] and row["rerun"].startswith("reconstruct rerun --out ")
    assert tables["revisions"].filter(pl.col("output_path") == CHAT)["rev"].to_list() == [0, 1]


def test_published_tables_stale_once_the_ledger_moves_on(audited, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(audited, out)
    ledger = Ledger(out / "ledger.sqlite")
    try:
        assert publication.published(out, ledger) is not None
        ledger.db.execute("INSERT INTO revisions VALUES (?, 2, 'x', 'revert', '2026-01-01T00:00:00Z', NULL)", (CHAT,))
        ledger.db.commit()
        assert publication.published(out, ledger) is None  # a revert since: readers build from the ledger
    finally:
        ledger.close()


def test_a_run_whose_tables_cannot_be_written_says_so(tmp_path, monkeypatch):
    from flows.pipeline import reconstruct
    from models.settings import Settings

    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("Session: a\nUser: hi\nAssistant: hello\n")

    def refuse(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(publication, "publish", refuse)
    summary = reconstruct([src], tmp_path / "out", Settings(workers=1))
    assert "No space left" in summary.datasets_unpublished
    ledger = Ledger(tmp_path / "out" / "ledger.sqlite", read_only=True)
    try:
        assert "No space left" in ledger.meta.get(f"datasets_unpublished:{summary.run_id}")
    finally:
        ledger.close()
