"""The pool's workers are forked from a forkserver that has imported the core and every grammar once, and
write in the pool what one process writes (docs/memory.md, "10,000 small files")."""

from __future__ import annotations

import sys
from pathlib import Path

from flows import pool
from flows.core.ingest import discover
from flows.core.shard import run_shard
from models.settings import Settings
from parsers import registry
from tests.flows.test_memory_bound import chats


def _grammars_imported() -> list[str]:
    return [m for m in registry.grammar_modules() if m in sys.modules]


def test_a_worker_finds_every_grammar_imported_by_the_forkserver():
    """The grammar modules are imported once in the forkserver the workers are forked from, not again in
    each worker (about 0.25 s of CPU each)."""
    with pool.local_pool(Settings(workers=2)) as holder:
        found = [holder.pool.submit(_grammars_imported).result(timeout=300) for _ in range(3)]
    assert found == [registry.grammar_modules()] * 3


def test_shards_in_the_pool_write_what_one_process_writes(tmp_path: Path):
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
