"""Audit datasets: one row per session and per interaction, provenance columns, every format."""

from __future__ import annotations

import polars as pl
from typer.testing import CliRunner

from flows.cli import app
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import ROOT


def test_every_run_writes_parquet_tables_matching_the_documents(tmp_path):
    summary = reconstruct([ROOT / "sample_logs"], tmp_path, Settings())
    sessions = pl.read_parquet(tmp_path / "datasets" / "sessions.parquet")
    turns = pl.read_parquet(tmp_path / "datasets" / "turns.parquet")
    assert sessions.height == summary["counts"]["sessions_ok"] + summary["counts"]["sessions_partial"]
    assert turns.height == summary["counts"]["interactions"] == sessions["interactions"].sum()
    assert sessions["source_sha256"].str.len_chars().min() == 64
    assert not turns["content"].str.contains("sk-proj-EXAMPLE").any()


def test_export_formats(tmp_path):
    reconstruct([ROOT / "sample_logs"], tmp_path, Settings())
    for fmt in ("csv", "jsonl", "parquet"):
        result = CliRunner().invoke(app, ["export", "--out", str(tmp_path), "--format", fmt, "--to",
                                          str(tmp_path / fmt)])
        assert result.exit_code == 0, result.output
        assert (tmp_path / fmt / f"turns.{fmt}").stat().st_size > 0
