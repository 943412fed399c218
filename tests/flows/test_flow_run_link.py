"""A run started by the Prefect flow records its flow run's id, so the auditor's view can link to it."""

from __future__ import annotations

import polars as pl

from audit import publication
from audit.ledger import Ledger
from flows.pipeline import run_archive
from models.settings import Settings


def test_the_runs_table_names_the_flow_run(prefect_harness, tmp_path):
    from prefect.client.orchestration import get_client

    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("Session: a\nUser: hi\nAssistant: hello\n")
    summary = run_archive([src], tmp_path / "out", Settings(workers=1))
    ledger = Ledger(tmp_path / "out" / "ledger.sqlite", read_only=True)
    try:
        runs = publication.tables(tmp_path / "out", ledger)["runs"].collect()
    finally:
        ledger.close()
    flow_run_id = runs.filter(pl.col("run_id") == summary.run_id)["prefect_flow_run_id"].item()
    assert flow_run_id
    with get_client(sync_client=True) as client:
        assert str(client.read_flow_run(flow_run_id).id) == flow_run_id  # a flow run Prefect knows
