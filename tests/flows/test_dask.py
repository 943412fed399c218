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
    assert summary["shards"] >= 4 and _ran_on(cluster) - before >= summary["shards"]
    assert summary["counts"] == local["counts"]
    assert summary["counts"]["sessions_ok"] == 12 and summary["counts"]["files_quarantined"] == 1
    assert _docs(dask_out) == _docs(local_out)


def test_a_deployment_run_with_a_dask_address_runs_on_dask(prefect_harness, cluster, tmp_path):
    """A deployment (or `serve`) passes the settings as a mapping; its dask_address is honoured."""
    src = _archive(tmp_path / "in")
    before = _ran_on(cluster)
    summary = reconstruct_archive(paths=[str(src)], out=str(tmp_path / "out"),
                                  settings={"dask_address": cluster.scheduler_address, "shard_files": 3})
    assert summary["counts"]["sessions_ok"] == 12
    assert _ran_on(cluster) - before >= summary["shards"] >= 4


def test_an_empty_dask_address_is_no_dask():
    """prefect.yaml's unset ``{{ $RECONSTRUCT_DASK_ADDRESS }}`` renders as an empty string."""
    assert Settings(dask_address="").dask_address is None
    assert Settings(dask_address=" tcp://h:8786 ").dask_address == "tcp://h:8786"


def test_a_relative_input_path_is_found_by_workers_in_another_directory(prefect_harness, cluster, tmp_path,
                                                                         monkeypatch):
    """The workers started in the test's directory; the run is given paths relative to another one."""
    _archive(tmp_path / "in")
    monkeypatch.chdir(tmp_path)
    summary = reconstruct_archive(["in"], "out", Settings(dask_address=cluster.scheduler_address, shard_files=3))
    assert summary["counts"]["files_quarantined"] == 1 and summary["counts"]["sessions_ok"] == 12
    assert (tmp_path / "out" / "ledger.sqlite").is_file()
