"""Scale-out: the same flow on a real dask.distributed LocalCluster gives the local run's documents."""

from __future__ import annotations

import pytest

from flows.pipeline import reconstruct, reconstruct_archive
from models.settings import Settings

distributed = pytest.importorskip("distributed")
prefect_dask = pytest.importorskip("prefect_dask")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c


def _docs(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "sessions").rglob("*.json"))}


def test_dask_run_matches_the_local_run(prefect_harness, cluster, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for i in range(12):
        (src / f"chat-{i:02d}.txt").write_text(f"Session: s{i}\nUser: question {i}\nAssistant: answer {i}\n")
    (src / "broken.txt").write_bytes(b"\x00\x01\x02\x03" * 200)
    settings = Settings(dask_address=cluster.scheduler_address, shard_files=3)
    runner = prefect_dask.DaskTaskRunner(address=cluster.scheduler_address)
    dask_out, local_out = tmp_path / "dask", tmp_path / "local"
    summary = reconstruct_archive.with_options(task_runner=runner)([str(src)], str(dask_out), settings)
    local = reconstruct([src], local_out, Settings(shard_files=3))
    assert summary["shards"] >= 4
    assert summary["counts"] == local["counts"]
    assert summary["counts"]["sessions_ok"] == 12 and summary["counts"]["files_quarantined"] == 1
    assert _docs(dask_out) == _docs(local_out)
