"""Audit datasets: one row per session and per interaction, provenance columns, every format."""

from __future__ import annotations

import polars as pl
from typer.testing import CliRunner

from audit.datasets import tables
from flows.cli.app import app
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import ROOT


def test_every_run_gives_tables_matching_the_documents(tmp_path):
    summary = reconstruct([ROOT / "sample_logs"], tmp_path, Settings())
    sessions, turns = tables(tmp_path)
    assert sessions.height == summary.counts.sessions_ok + summary.counts.sessions_partial
    assert turns.height == summary.counts.interactions == sessions["interactions"].sum()
    assert sessions["source_sha256"].str.len_chars().min() == 64
    assert not turns["content"].str.contains("sk-proj-EXAMPLE").any()


def test_export_formats(tmp_path):
    reconstruct([ROOT / "sample_logs"], tmp_path, Settings())
    for fmt in ("csv", "jsonl", "parquet"):
        result = CliRunner().invoke(app, ["export", "--out", str(tmp_path), "--format", fmt, "--to",
                                          str(tmp_path / fmt)])
        assert result.exit_code == 0, result.output
        assert (tmp_path / fmt / f"turns.{fmt}").stat().st_size > 0


def test_provenance_columns_and_deterministic_order(tmp_path):
    summary = reconstruct([ROOT / "sample_logs"], tmp_path, Settings())
    sessions, turns = tables(tmp_path)
    assert sessions["output_path"].to_list() == sorted(sessions["output_path"].to_list())
    assert turns.select("output_path", "ordinal").rows() == sorted(turns.select("output_path", "ordinal").rows())
    assert set(sessions["run_id"].to_list()) == {summary.run_id}
    assert sessions["redaction_types"].str.contains("openai_api_key").any()
    for col in ("source_path", "source_sha256", "grammar", "status", "session_id", "output_path"):
        assert sessions[col].null_count() == 0, col
    for col in ("ordinal", "role", "kind", "speaker_name", "provider", "model_name", "model_version", "speaker",
                "content", "source_path"):
        assert turns[col].null_count() == 0, col
    # a later run that skips everything keeps the run that wrote each document
    later = reconstruct([ROOT / "sample_logs"], tmp_path, Settings())
    assert later.counts.files_skipped + later.counts.files_companion == later.counts.files
    again = tables(tmp_path)[0]
    assert set(again["run_id"].to_list()) == {summary.run_id}


def test_export_one_table_to_a_file(tmp_path):
    reconstruct([ROOT / "sample_logs"], tmp_path, Settings())
    target = tmp_path / "x" / "turns.csv"
    result = CliRunner().invoke(app, ["export", "--out", str(tmp_path), "--format", "csv", "--table", "turns",
                                      "--out-file", str(target)])
    assert result.exit_code == 0, result.output
    assert pl.read_csv(target).height == tables(tmp_path)[1].height
    bad = CliRunner().invoke(app, ["export", "--out", str(tmp_path), "--format", "xml"])
    assert bad.exit_code != 0
