"""``reconstruct export``: every current table as one file, with the columns and types of OUT/datasets/current."""

from __future__ import annotations

from contextlib import closing

import orjson
import polars as pl
from typer.testing import CliRunner

from audit import current, publication
from audit.ledger import Ledger
from flows.cli.app import app
from tests.audit.conftest import CHAT

runner = CliRunner()


def _current(out) -> dict[str, pl.DataFrame]:
    with closing(Ledger(out / "ledger.sqlite", read_only=True)) as ledger:
        return {name: frame.collect() for name, frame in publication.tables(out, ledger).items()}


def test_parquet_export_is_every_current_table_typed(audited, tmp_path):
    said = runner.invoke(app, ["export", "--out", str(audited), "--to", str(tmp_path)])
    assert said.exit_code == 0, said.output
    tables = _current(audited)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{t}.parquet" for t in current.TABLES)
    for name, frame in tables.items():
        exported = pl.read_parquet(tmp_path / f"{name}.parquet")
        assert exported.schema == frame.schema, name
        assert exported.sort(pl.all()).equals(frame.sort(pl.all())), name
    sessions = pl.read_parquet(tmp_path / "sessions.parquet")
    assert sessions.schema["created_at"] == current.UTC and isinstance(sessions.schema["status"], pl.Enum)
    assert {"platform", "session_key", "grammar", "run_id", "title"} <= set(sessions.columns)
    assert isinstance(pl.read_parquet(tmp_path / "runs.parquet").schema["status"], pl.Enum)
    assert pl.read_parquet(tmp_path / "quarantine.parquet")["reasons"].to_list() == [["binary"], ["binary"]]


def test_text_exports_write_utc_timestamps_and_lists(audited, tmp_path):
    for fmt in ("csv", "jsonl"):
        said = runner.invoke(app, ["export", "--out", str(audited), "--format", fmt, "--to", str(tmp_path / fmt)])
        assert said.exit_code == 0, said.output
        assert len(list((tmp_path / fmt).iterdir())) == len(current.TABLES)
    quarantine = pl.read_csv(tmp_path / "csv" / "quarantine.csv")
    assert quarantine["reasons"].to_list() == ['["binary"]', '["binary"]']
    assert quarantine["started_at"].str.contains(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$").all()
    rows = [orjson.loads(line) for line in (tmp_path / "jsonl" / "sessions.jsonl").read_bytes().splitlines()]
    chat = next(r for r in rows if r["output_path"] == CHAT)
    assert chat["created_at"].endswith("Z") and chat["first_at"] is None  # the chat's lines carry no time
    assert chat["status"] == "ok" and chat["platform"] == "transcript"


def test_one_table_to_a_file_and_unknown_names_refused(audited, tmp_path):
    target = tmp_path / "q.csv"
    said = runner.invoke(app, ["export", "--out", str(audited), "--format", "csv", "--table", "quarantine",
                               "--out-file", str(target)])
    assert said.exit_code == 0, said.output
    assert pl.read_csv(target).height == 2
    assert runner.invoke(app, ["export", "--out", str(audited), "--table", "nope"]).exit_code != 0
    assert runner.invoke(app, ["export", "--out", str(audited), "--format", "xml"]).exit_code != 0
    assert runner.invoke(app, ["export", "--out", str(tmp_path / "nothing")]).exit_code != 0
