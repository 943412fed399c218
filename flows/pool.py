"""The flow run's local process pool, and where a shard's work runs.

Local shard tasks run as Prefect task runs on threads of the flow's process; their CPU work goes
to one process pool per flow run (forkserver workers preloaded with the core, so a worker starts
in milliseconds instead of re-importing Prefect). On a Dask worker there is no pool: the shard
runs right there. The pool is found through a context variable the flow sets, so nothing here
needs pickling when Dask ships a task.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from models.settings import Settings

from .shard import ShardResult, run_shard

_LOCAL_POOL: ContextVar[ProcessPoolExecutor | None] = ContextVar("reconstruct_local_pool", default=None)


@contextmanager
def local_pool(settings: Settings) -> Iterator[ProcessPoolExecutor | None]:
    """A process pool for one flow run (none for Dask or a single worker)."""
    if settings.dask_address or settings.workers <= 1:
        yield None
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["flows.shard"])
    with ProcessPoolExecutor(max_workers=settings.workers, mp_context=context) as pool:
        token = _LOCAL_POOL.set(pool)
        try:
            yield pool
        finally:
            _LOCAL_POOL.reset(token)


def dispatch(refs, out_root: Path, settings: Settings, **kwargs) -> tuple[ShardResult, str]:
    """Run one shard on the flow's local pool when there is one, else here; says where it ran."""
    pool = _LOCAL_POOL.get()
    if pool is None:
        return run_shard(refs, out_root, settings, **kwargs), "this worker"
    return pool.submit(run_shard, refs, out_root, settings, **kwargs).result(), "the local process pool"
