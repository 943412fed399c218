"""A pool worker runs one shard and exits: the next shard gets a worker forked afresh, so what a shard leaves
in its process is not carried into the next one (docs/memory.md, "10,000 small files")."""

from __future__ import annotations

import os
from pathlib import Path

from flows import pool
from flows.core.ingest import discover
from flows.core.shard import run_shard
from models.settings import Settings
from tests.flows.test_memory_bound import chats


def _pid() -> int:
    return os.getpid()


def _grammars_imported() -> list[str]:
    import sys

    from parsers import registry

    return [m for m in registry.grammar_modules() if m in sys.modules]


def test_each_task_gets_a_fresh_worker_and_a_queued_backlog_still_runs():
    with pool.local_pool(Settings(workers=2)) as holder:
        futures = [holder.pool.submit(_pid) for _ in range(6)]  # more tasks than workers: a queued backlog
        pids = [f.result(timeout=300) for f in futures]
    assert len(set(pids)) == 6 and os.getpid() not in pids


def test_a_fresh_worker_finds_every_grammar_imported_by_the_forkserver():
    """A worker runs one shard: the grammar modules are imported once in the forkserver it is forked from, not
    again in each worker (about 0.25 s of CPU each)."""
    from parsers import registry

    with pool.local_pool(Settings(workers=2)) as holder:
        found = [holder.pool.submit(_grammars_imported).result(timeout=300) for _ in range(3)]
    assert found == [registry.grammar_modules()] * 3


def test_a_replacement_pool_keeps_its_worker_for_a_shard_run_input_by_input():
    with pool.local_pool(Settings(workers=2)) as holder:
        holder.replace(holder.pool)  # as after a worker died
        pids = [holder.pool.submit(_pid).result(timeout=300) for _ in range(4)]
    assert len(set(pids)) <= 2  # at most the pool's two workers, each kept from task to task


def test_shards_in_fresh_workers_write_what_one_process_writes(tmp_path: Path):
    refs = discover([chats(tmp_path, 6)], Settings())
    shards = [refs[:2], refs[2:4], refs[4:]]
    here = tmp_path / "here"
    alone = [run_shard(s, here, Settings()) for s in shards]
    pooled = tmp_path / "pooled"
    with pool.local_pool(Settings(workers=2)):
        results = [pool.dispatch(s, pooled, Settings()) for s in shards]
    assert [where for _, where in results] == ["the local process pool"] * 3
    assert [[(r.output_path, r.output_sha256) for r in res.sessions] for res, _ in results] == \
        [[(r.output_path, r.output_sha256) for r in res.sessions] for res in alone]
