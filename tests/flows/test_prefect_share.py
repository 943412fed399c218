"""Prefect's share of a run: what the flow asks of Prefect beyond the core's work (docs/rerun.md)."""

from __future__ import annotations

import prefect.concurrency._sync as concurrency

from flows.pipeline import run_archive
from models.settings import Settings

TRANSCRIPT = "User: hi\nAssistant: hello {}\n"


def test_shard_tasks_ask_prefect_for_no_concurrency_slots(prefect_harness, tmp_path, monkeypatch):
    """The flow run is tagged (``run_archive``), its shard task runs are not: a tagged task run costs an
    API round trip for tag-based concurrency slots before its shard begins."""
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        (src / f"t{i}.txt").write_text(TRANSCRIPT.format(i))
    asked = []
    real = concurrency.acquire_concurrency_slots_with_lease
    monkeypatch.setattr(concurrency, "acquire_concurrency_slots_with_lease",
                        lambda names, *a, **kw: asked.append(names) or real(names, *a, **kw))
    summary = run_archive([src], tmp_path / "out", Settings(shard_files=1))
    assert summary.shards == 3 and summary.counts.sessions_ok == 3
    assert asked == []


def test_the_summary_artifact_says_what_became_of_the_current_tables():
    from audit.publication import Published
    from flows.artifacts import summary_markdown
    from flows.summary import RunSummary
    from models.status import RunCounts, RunStatus

    summary = RunSummary("r1", RunStatus.COMPLETED, RunCounts(files=3, files_skipped=3), [], 0.5, 0, 0, 0, "l",
                         published=Published.RUN_ONLY)
    assert "Current tables: unchanged: only the runs table took the run." in summary_markdown(summary, [])


def test_the_slowest_files_are_asked_of_the_ledger_not_sorted_from_every_row(tmp_path, monkeypatch):
    from audit.ledger import FileRow, Ledger
    from audit.ledger.inputs import Inputs
    from flows import artifacts
    from models.status import FileStatus

    path = tmp_path / "ledger.sqlite"
    ledger = Ledger(path)
    try:
        ledger.runs.start("r1", "2026-11-28T00:00:00Z", {}, "fp", "1")
        ledger.inputs.record("r1", "fp", [FileRow(f"k{i}", f"k{i}", "h", 1, None, FileStatus.OK, [], "", 1, s)
                                          for i, s in enumerate([0.5, 2.0, 0.1, 2.0, 1.0])], [])
    finally:
        ledger.close()
    monkeypatch.setattr(Inputs, "of_run", lambda *a: (_ for _ in ()).throw(AssertionError("every row read")))
    slowest = artifacts.slowest_files(str(path), "r1", 3)
    assert [(f.source_key, f.seconds) for f in slowest] == [("k1", 2.0), ("k3", 2.0), ("k4", 1.0)]
