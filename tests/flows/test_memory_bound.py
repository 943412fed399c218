"""The run's main process keeps no per-file or per-session object of a shard once it is recorded, so
its memory does not grow with the archive (docs/memory.md)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from flows import pipeline, pool
from flows.core.merge import merge_keys
from flows.core.shard import ShardResult, run_shard
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.flows.test_snapshots import FIRST, SECOND, _export


def _chat(name: str, turns: int) -> str:
    return f"Session: {name}\n" + "".join(f"User: {name} asks {i}\nAssistant: answer {i}\n" for i in range(turns))


def _held(result: ShardResult) -> dict[str, int]:
    """How many rows of each kind a result still holds (its frames count as one each)."""
    sizes = {}
    for f in fields(result):
        value = getattr(result, f.name)
        if isinstance(value, list | dict):
            sizes[f.name] = len(value)
        elif f.name == "datasets":
            sizes[f.name] = 0 if value is None else len(value)
    return sizes


def chats(root: Path, n: int = 9) -> Path:
    """``n`` small chats of 2 to 4 turns in ``root/in``."""
    src = root / "in"
    src.mkdir()
    for i in range(n):
        (src / f"c{i}.txt").write_text(_chat(f"c{i}", 2 + i % 3))
    return src


@pytest.fixture()
def archive(tmp_path: Path) -> Path:
    return chats(tmp_path)


def test_a_recorded_shard_result_holds_no_rows_though_its_future_keeps_it(archive: Path, tmp_path: Path):
    out = tmp_path / "out"
    settings = Settings(workers=1, shard_files=2)
    kept: list[ShardResult] = []  # what a runner's futures keep until the run ends

    def runner(shards, companions, ledger_path):
        for shard in shards:
            kept.append(run_shard(shard, out, settings, companions=companions, ledger_path=Path(ledger_path)))
            assert sum(_held(kept[-1]).values()) > 0  # a shard's rows come back to be recorded
            yield kept[-1]

    summary = reconstruct([archive], out, settings, runner=runner)
    assert summary.shards == len(kept) >= 5
    assert summary.counts.sessions_ok == 9 and summary.written == 9
    for result in kept:
        assert set(_held(result).values()) == {0}, _held(result)


def test_a_recorded_merge_result_holds_no_rows(tmp_path: Path):
    """The same WhatsApp chat exported twice: its key is merged after the shards, by the merger."""
    out = tmp_path / "out"
    settings = Settings(workers=1)
    for month, lines in (("2024-05", FIRST), ("2024-06", SECOND)):
        _export(tmp_path, month, lines)
    kept: list[ShardResult] = []

    def merger(groups, ledger_path):
        for keys in groups:
            kept.append(merge_keys(keys, out, settings, ledger_path=Path(ledger_path)))
            assert kept[-1].sessions  # the merged document's row comes back to be recorded
            yield kept[-1]

    summary = reconstruct([tmp_path / "exports"], out, settings, runner=None, merger=merger)
    assert kept and summary.written >= 1
    assert len(list((out / "sessions").rglob("*.json"))) == 1
    for result in kept:
        assert set(_held(result).values()) == {0}, _held(result)


def _allocator() -> str | None:
    import os

    return os.environ.get(pool.WORKER_ALLOCATOR[0])


def test_the_workers_are_stopped_before_the_run_builds_its_tables(archive: Path, tmp_path: Path, monkeypatch):
    """Idle workers would hold their last shard's memory while this process publishes the tables."""
    out = tmp_path / "out"
    settings = Settings(workers=2, shard_files=3)
    seen: list[bool] = []
    publish = pipeline._publish

    def spy(out_root, run_id, ledger, *rest):
        seen.append(holder.closed)
        return publish(out_root, run_id, ledger, *rest)

    def runner(shards, companions, ledger_path):
        for shard in shards:
            result, where = pool.dispatch(shard, out, settings, companions=companions, ledger_path=Path(ledger_path))
            assert where == "the local process pool"
            yield result

    monkeypatch.setattr(pipeline, "_publish", spy)
    with pool.local_pool(settings) as holder:
        summary = reconstruct([archive], out, settings, runner=runner)
    assert summary.counts.sessions_ok == 9 and seen == [True]


def test_the_workers_allocator_gives_freed_memory_back_and_this_process_is_left_as_it_was():
    value = pool.WORKER_ALLOCATOR[1]
    before = _allocator()
    with pool.local_pool(Settings(workers=2)) as holder:
        seen = holder.pool.submit(_allocator).result()
    assert seen is not None and seen.endswith(value)  # jemalloc takes the last value of each option
    assert _allocator() == before
