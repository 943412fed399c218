"""The Prefect flow with its default local process pool: documents, ledger, run artifact, reruns."""

from __future__ import annotations

from flows.pipeline import reconstruct, run_archive
from models.settings import Settings
from tests.helpers import ROOT


def _docs(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "sessions").rglob("*.json"))}


def _artifact_markdown(key: str) -> str | None:
    """The latest artifact with this key, through Prefect's own client."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                      sort=ArtifactSort.CREATED_DESC, limit=5)
    return found[0].data if found else None


def test_flow_on_the_process_pool_matches_the_core(prefect_harness, tmp_path):
    flow_out, core_out = tmp_path / "flow", tmp_path / "core"
    summary = run_archive([ROOT / "sample_logs"], flow_out, Settings(workers=2, shard_files=2))
    core = reconstruct([ROOT / "sample_logs"], core_out, Settings(workers=1))
    assert summary.shards >= 2
    assert summary.counts == core.counts
    assert _docs(flow_out) == _docs(core_out)
    markdown = _artifact_markdown("reconstruct-run-summary")
    assert markdown and summary.run_id in markdown


def test_unchanged_inputs_are_skipped_and_force_reprocesses(prefect_harness, tmp_path):
    out = tmp_path / "out"
    first = run_archive([ROOT / "sample_logs"], out, Settings())
    again = run_archive([ROOT / "sample_logs"], out, Settings())
    forced = run_archive([ROOT / "sample_logs"], out, Settings(), force=True)
    assert again.counts.files_skipped + again.counts.files_companion == first.counts.files
    assert forced.counts.files_skipped == 0
    assert forced.counts.sessions_ok == first.counts.sessions_ok
