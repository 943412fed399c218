"""A shard writes its documents' dataset rows out a batch at a time and stages them as its part: a worker's
memory does not grow with its shard's rows, and the run's main process receives no rows (docs/memory.md)."""

from __future__ import annotations

import errno
from pathlib import Path

import polars as pl
import pytest

from audit import datasets
from flows import pool
from flows.core import shard
from flows.core.ingest import discover
from flows.core.shard import RowSpill, run_shard
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.flows.test_memory_bound import chats


@pytest.fixture()
def archive(tmp_path: Path) -> Path:
    return chats(tmp_path, 7)


def _leftovers(out: Path) -> list[Path]:
    """Spilled pieces and staged parts left under the datasets folder."""
    base = out / datasets.PARTS
    return sorted(base.rglob("*.tmp")) if base.is_dir() else []


def test_a_shard_holds_the_rows_of_at_most_one_batch_of_documents(archive: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(shard, "SPILL_DOCUMENTS", 2)
    held: list[int] = []
    added = RowSpill.added

    def spy(self, turns):
        added(self, turns)
        held.append(len(self.trail.rows.sessions))  # what the worker still holds once a document is in

    monkeypatch.setattr(RowSpill, "added", spy)
    out = tmp_path / "out"
    result = run_shard(discover([archive], Settings()), out, Settings())
    assert len(held) == 7 and max(held) < 2 and held.count(0) == 3  # written out after every second document
    assert not hasattr(result, "datasets")  # nothing goes back to the run's main process but the staged part's name
    staged = [Path(p) for p in result.staged]
    assert [p.parent.parent.name for p in staged] == ["turns", "sessions"]
    assert [p.name for p in staged] == [f".{result.part}.tmp"] * 2
    assert sorted(_leftovers(out)) == sorted(staged)  # the pieces are gone, the part is staged
    sessions, turns = (pl.read_parquet(p) for p in reversed(staged))
    assert sessions["session_id"].to_list() == [f"c{i}" for i in range(7)]  # in the order written
    assert turns.height == sum(2 * (2 + i % 3) for i in range(7)) == sessions["interactions"].sum()


def test_a_staged_part_holds_the_rows_a_part_built_whole_holds(archive: Path, tmp_path: Path, monkeypatch):
    whole = run_shard(discover([archive], Settings()), tmp_path / "whole", Settings())
    monkeypatch.setattr(shard, "SPILL_DOCUMENTS", 3)
    spilled = run_shard(discover([archive], Settings()), tmp_path / "spilled", Settings())
    for a, b in zip(whole.staged, spilled.staged, strict=True):
        assert pl.read_parquet(a).equals(pl.read_parquet(b))


def test_the_run_adopts_the_staged_part_and_its_tables_match_the_documents(archive: Path, tmp_path: Path,
                                                                             monkeypatch):
    monkeypatch.setattr(shard, "SPILL_DOCUMENTS", 2)
    out = tmp_path / "out"
    summary = reconstruct([archive], out, Settings(workers=1))
    parts = sorted((out / datasets.PARTS).rglob("*.parquet"))
    assert [p.parent.name for p in parts] == [summary.run_id] * 2 and not _leftovers(out)
    problems: list[str] = []
    from_parts = datasets.tables(out)
    from_documents = datasets._from_documents(out, {}, {}, problems)  # the documents read back, no part
    assert not problems
    assert from_parts[1].equals(from_documents[1])
    assert from_parts[0].drop("run_id").equals(from_documents[0].drop("run_id"))


def test_a_settled_session_no_longer_holds_its_bytes_nor_its_rows(archive: Path, tmp_path: Path, monkeypatch):
    seen = []
    emit = shard._emit_session

    def spy(ref, s, *args, **kwargs):
        assert s.encoded is not None and s.rows is not None
        seen.append(s)
        return emit(ref, s, *args, **kwargs)

    monkeypatch.setattr(shard, "_emit_session", spy)
    run_shard(discover([archive], Settings()), tmp_path / "out", Settings())
    assert len(seen) == 7 and all(s.encoded is None and s.rows is None for s in seen)


def test_a_shard_that_fails_leaves_no_spilled_rows(archive: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(shard, "SPILL_DOCUMENTS", 1)
    emit, calls = shard._emit_session, []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("boom")
        return emit(*args, **kwargs)

    monkeypatch.setattr(shard, "_emit_session", failing)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        run_shard(discover([archive], Settings()), out, Settings())
    assert (out / datasets.STAGED).is_dir() and not _leftovers(out)  # pieces were written, then removed


def test_a_full_disk_refusing_the_part_stops_the_run_and_leaves_no_piece(archive: Path, tmp_path: Path,
                                                                          monkeypatch):
    monkeypatch.setattr(shard, "SPILL_DOCUMENTS", 2)

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", full)
    out = tmp_path / "out"
    result = run_shard(discover([archive], Settings()), out, Settings())
    assert result.stopped is not None and result.stopped[0] == errno.ENOSPC
    assert result.staged == [] and not _leftovers(out)
    assert len(result.sessions) == 7 and len(list((out / "sessions").rglob("*.json"))) == 7  # documents kept


AS_POLARS_RAISES = [OSError("No space left on device (os error 28)"),
                    pl.exceptions.ComputeError("failed to write: No space left on device (os error 28)")]


@pytest.mark.parametrize("refusal", AS_POLARS_RAISES, ids=["oserror-without-errno", "compute-error"])
@pytest.mark.parametrize("method", [(pl.DataFrame, "write_ipc"), (pl.LazyFrame, "sink_parquet")],
                         ids=["a-batch-written-out", "the-part"])
def test_a_full_disk_as_polars_says_it_stops_the_shard_with_every_written_document_recorded(
        archive: Path, tmp_path: Path, monkeypatch, refusal, method):
    """Polars (Rust) gives a full disk's errno only in its message: the shard still stops and keeps what it
    wrote, recorded, instead of failing with documents on disk that no row names."""
    monkeypatch.setattr(shard, "SPILL_DOCUMENTS", 2)

    def full(self, *args, **kwargs):
        raise refusal

    monkeypatch.setattr(*method, full)
    out = tmp_path / "out"
    result = run_shard(discover([archive], Settings()), out, Settings())
    assert result.stopped is not None and result.stopped[0] == errno.ENOSPC
    written = {p.relative_to(out).as_posix() for p in (out / "sessions").rglob("*.json")}
    assert written == {s.output_path for s in result.sessions if s.output_path}
    assert written or method[1] == "write_ipc"  # the part is written last: the documents are in place by then
    assert not _leftovers(out)


def _polars_threads() -> str | None:
    import os

    return os.environ.get(pool.POLARS_THREADS)


def test_the_workers_share_the_cores_in_polars_threads_and_this_process_is_left_as_it_was(monkeypatch):
    monkeypatch.delenv(pool.POLARS_THREADS, raising=False)
    assert pool.worker_environment(2)[pool.POLARS_THREADS] == str(max(1, (__import__("os").cpu_count() or 1) // 2))
    assert pool.worker_environment(10_000)[pool.POLARS_THREADS] == "1"
    with pool.local_pool(Settings(workers=2)) as holder:
        seen = holder.pool.submit(_polars_threads).result()
    assert seen is not None and int(seen) >= 1 and _polars_threads() is None
    monkeypatch.setenv(pool.POLARS_THREADS, "3")  # the environment's own choice stands
    assert pool.POLARS_THREADS not in pool.worker_environment(2)


def _tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted((out / "sessions").rglob("*.json"))}


def test_staged_sessions_are_written_out_a_batch_at_a_time_until_the_keys_are_claimed(archive: Path, tmp_path: Path,
                                                                                       monkeypatch):
    whole = run_shard(discover([archive], Settings()), tmp_path / "whole", Settings())
    monkeypatch.setattr(shard, "SPILL_DOCUMENTS", 2)
    held: list[list[bool]] = []
    settle = shard._settle

    def spy(trail, result, *args, **kwargs):
        held.append([s.encoded is not None or s.rows is not None for _, s in result.pending])
        return settle(trail, result, *args, **kwargs)

    monkeypatch.setattr(shard, "_settle", spy)
    out = tmp_path / "spilled"
    spilled = run_shard(discover([archive], Settings()), out, Settings())
    # written out a batch of at least two at a time: at most the last session is still held
    assert len(held) == 1 and len(held[0]) == 7 and not any(held[0][:-1])
    assert not list((out / ".spool").glob("*.tmp"))  # the written-out batches are gone once settled
    assert _tree(out) == _tree(tmp_path / "whole")  # the same documents
    assert [(r.output_path, r.output_sha256) for r in spilled.sessions] == \
        [(r.output_path, r.output_sha256) for r in whole.sessions]
    assert [(s.session_key, s.first_at, s.last_at) for s in spilled.snapshots] == \
        [(s.session_key, s.first_at, s.last_at) for s in whole.snapshots]
    for a, b in zip(whole.staged, spilled.staged, strict=True):
        assert pl.read_parquet(a).equals(pl.read_parquet(b))


def test_a_shard_that_fails_while_settling_leaves_no_written_out_session(archive: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(shard, "SPILL_DOCUMENTS", 2)

    def failing(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(shard, "_emit_session", failing)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        run_shard(discover([archive], Settings()), out, Settings())
    assert (out / ".spool").is_dir() and not list((out / ".spool").iterdir())
