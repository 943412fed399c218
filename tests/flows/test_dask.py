"""Scale-out: the same flow on a real dask.distributed LocalCluster gives the local run's documents,
whether the run is started by the CLI's code path or as a deployment (settings as a plain mapping)."""

from __future__ import annotations

import pytest

from flows.pipeline import reconstruct, reconstruct_archive
from models.settings import Settings

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c


def _docs(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "sessions").rglob("*.json"))}


def _archive(root):
    root.mkdir()
    for i in range(12):
        (root / f"chat-{i:02d}.txt").write_text(f"Session: s{i}\nUser: question {i}\nAssistant: answer {i}\n")
    (root / "broken.txt").write_bytes(b"\x00\x01\x02\x03" * 200)
    return root


def _ran_on(cluster) -> int:
    """How many tasks the cluster has run to completion (shards and merges)."""
    prefix = cluster.scheduler.task_prefixes.get("with_retries")
    return 0 if prefix is None else prefix.state_counts["memory"]


def test_dask_run_matches_the_local_run(prefect_harness, cluster, tmp_path):
    src = _archive(tmp_path / "in")
    settings = Settings(dask_address=cluster.scheduler_address, shard_files=3)
    dask_out, local_out = tmp_path / "dask", tmp_path / "local"
    before = _ran_on(cluster)
    summary = reconstruct_archive([str(src)], str(dask_out), settings)
    local = reconstruct([src], local_out, Settings(shard_files=3))
    assert summary.shards >= 4 and _ran_on(cluster) - before >= summary.shards
    assert summary.counts == local.counts
    assert summary.counts.sessions_ok == 12 and summary.counts.files_quarantined == 1
    assert _docs(dask_out) == _docs(local_out)


def test_a_deployment_run_with_a_dask_address_runs_on_dask(prefect_harness, cluster, tmp_path):
    """A deployment (or `serve`) passes the settings as a mapping; its dask_address is honoured."""
    src = _archive(tmp_path / "in")
    before = _ran_on(cluster)
    summary = reconstruct_archive(paths=[str(src)], out=str(tmp_path / "out"),
                                  settings={"dask_address": cluster.scheduler_address, "shard_files": 3})
    assert summary.counts.sessions_ok == 12
    assert _ran_on(cluster) - before >= summary.shards >= 4


def test_an_empty_dask_address_is_no_dask():
    """prefect.yaml's unset ``{{ $RECONSTRUCT_DASK_ADDRESS }}`` renders as an empty string."""
    assert Settings(dask_address="").dask_address is None
    assert Settings(dask_address=" tcp://h:8786 ").dask_address == "tcp://h:8786"


def test_a_relative_input_path_is_found_by_workers_in_another_directory(prefect_harness, cluster, tmp_path,
                                                                         monkeypatch):
    """The workers started in the test's directory; the run is given paths relative to another one."""
    _archive(tmp_path / "in")
    monkeypatch.chdir(tmp_path)
    before = _ran_on(cluster)
    summary = reconstruct_archive(["in"], "out", Settings(dask_address=cluster.scheduler_address, shard_files=3))
    assert summary.counts.files_quarantined == 1 and summary.counts.sessions_ok == 12
    assert _ran_on(cluster) - before >= summary.shards
    assert (tmp_path / "out" / "ledger.sqlite").is_file()


def test_the_input_that_kills_its_workers_is_quarantined_and_the_rest_processed(tmp_path):
    """A shard whose task kills every worker it reaches (KilledWorker) runs again input by input; the
    input that kills is quarantined ``worker_died``, the others of its shard are processed."""
    import dask

    from flows import cluster as dask_shards
    from flows.core import ingest
    from flows.core.shard import run_shard

    def deadly(refs, *args, **kwargs):  # pickled by value: the workers run it as it is
        import os

        if any(r.name.endswith("chat-03.txt") for r in refs):
            os._exit(1)
        return run_shard(refs, *args, **kwargs)

    src = _archive(tmp_path / "in")
    settings = Settings(shard_files=4)
    refs = ingest.discover([src], settings)
    groups = [refs[i:i + 4] for i in range(0, len(refs), 4)]
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            distributed.Client(c, set_as_default=False) as client:
        results = list(dask_shards.shards(client, groups, tmp_path / "out", settings, companions={}, fn=deadly))
    rows = {f.source_path: f for r in results for f in r.files}
    assert len(rows) == len(refs)
    assert rows["in/chat-03.txt"].reasons == ["worker_died"]
    assert {p for p, f in rows.items() if f.status == "ok"} == {f"in/chat-{i:02d}.txt" for i in range(12) if i != 3}


def test_a_shard_is_retried_on_its_worker_only_after_a_transient_error(monkeypatch):
    from flows import cluster as dask_shards
    from models.errors import IngestError, Reason, TransientIngestError

    monkeypatch.setattr(dask_shards, "RETRY_DELAY_SECONDS", 0)
    calls = []

    def flaky(error):
        calls.append(error)
        if len(calls) < 3:
            raise error
        return "done"

    assert dask_shards.with_retries(flaky, 2, TransientIngestError(Reason.UNREADABLE, "hiccup")) == "done"
    calls.clear()
    with pytest.raises(IngestError):
        dask_shards.with_retries(flaky, 2, IngestError(Reason.UNREADABLE, "gone"))
    assert len(calls) == 1
    calls.clear()
    with pytest.raises(TransientIngestError):
        dask_shards.with_retries(flaky, 1, TransientIngestError(Reason.UNREADABLE, "hiccup"))
    assert len(calls) == 2
