"""The flow run's local process pool, and where a shard's work runs.

Local shard tasks run as Prefect task runs on threads of the flow's process; their CPU work goes
to one process pool per flow run (forkserver workers preloaded with the core, so a worker starts
in milliseconds instead of re-importing Prefect). With a Dask address there is no pool: the shards go
to the cluster (flows/cluster.py). The pool is found through a context variable the flow sets.

A worker that dies (killed for memory, a segfault) breaks the pool: the pool is replaced and the
shard is run again one input at a time, so the input that kills its worker is quarantined
(``worker_died``) and every other input of the run is processed.

A run that meets a fault (a full disk) closes the gate (``stop_starting``): a shard not yet begun
is not begun, and the run waits for the shards already in flight and records what they wrote
before it stops the workers (flows/pipeline.py).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from contextvars import ContextVar
from multiprocessing import forkserver
from pathlib import Path

from models.settings import Settings
from parsers import registry

from .core import lifeline
from .core.shard import ShardResult, run_shard, worker_died


class LocalPool:
    """A process pool that can be replaced when a worker dies (one per flow run)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self.closed = False
        self.pool = self._new()

    def _new(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("forkserver")
        # imported once in the forkserver, not in each worker it forks
        context.set_forkserver_preload(["flows.core.shard", *registry.grammar_modules()])
        _start_forkserver(worker_environment(self.workers))
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=context, initializer=lifeline.worker_start,
                                   initargs=(lifeline.owner(),))

    def replace(self, broken: ProcessPoolExecutor) -> None:
        """A fresh pool instead of ``broken`` (once, however many threads saw it break)."""
        with self._lock:
            if self.pool is broken and not self.closed:
                broken.shutdown(wait=False, cancel_futures=True)
                self.pool = self._new()

    def shutdown(self, *, kill: bool = False) -> None:
        """Stop the workers; with ``kill`` at once (an interrupt), leaving no process behind."""
        self.closed = True
        pool = self.pool
        if kill:
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.kill()
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.join(5)
        pool.shutdown(wait=True, cancel_futures=True)


WORKER_ALLOCATOR = ("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
"""What the workers' allocator is told: polars' jemalloc gives the pages a shard freed back at once.
Polars keeps them for reuse (500 ms, then 1 s) and only purges when it allocates again, so a worker
idle between shards, or while the other works, would hold its last shard's memory (docs/memory.md).
Appended to what the environment holds: jemalloc takes the last value of each option."""


POLARS_THREADS = "POLARS_MAX_THREADS"
"""Polars' thread pool in a worker: this machine's cores shared by the workers (each a process of its own
already), unless the environment says otherwise. Each polars thread keeps its own allocator caches
and stack; a worker with a pool as large as the machine would hold them for every core."""


def worker_environment(workers: int) -> dict[str, str]:
    """What the forkserver, and so every worker, gets in its environment beside this process's."""
    name, value = WORKER_ALLOCATOR
    before = os.environ.get(name)
    found = {name: f"{before},{value}" if before else value}
    if POLARS_THREADS not in os.environ:
        found[POLARS_THREADS] = str(max(1, (os.cpu_count() or 1) // workers))
    return found


def _start_forkserver(environment: dict[str, str]) -> None:
    """Start the forkserver the workers are forked from (one per process, started once: the first
    pool's ``environment`` holds) with ``environment`` added to its own; this process's own
    environment is left as it was."""
    before = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    try:
        forkserver.ensure_running()
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def stop_starting() -> None:
    """From now on no shard of this flow run starts (each returns an empty result, at once); the shards
    already running finish and return what they wrote."""
    gate = _GATE.get()
    if gate is not None:
        gate.set()


def stopping() -> bool:
    """Whether this flow run's gate is closed (``stop_starting``)."""
    gate = _GATE.get()
    return gate is not None and gate.is_set()


def stop_workers() -> None:
    """Kill the flow run's pool workers now (a run that failed: nothing is written after its end is
    recorded); the pool is then closed."""
    holder = _LOCAL_POOL.get()
    if holder is not None:
        holder.shutdown(kill=True)


def release_workers() -> None:
    """Stop the flow run's pool workers once its shards and merges are done: what the run does after
    (the revision index, the current tables) runs in this process, and idle workers would keep the
    memory of their last shard meanwhile. The pool is then closed."""
    holder = _LOCAL_POOL.get()
    if holder is not None:
        holder.shutdown()


_LOCAL_POOL: ContextVar[LocalPool | None] = ContextVar("reconstruct_local_pool", default=None)
_GATE: ContextVar[threading.Event | None] = ContextVar("reconstruct_shard_gate", default=None)


@contextmanager
def local_pool(settings: Settings) -> Iterator[LocalPool | None]:
    """A process pool for one flow run (none for Dask or a single worker), and the run's gate."""
    gate = _GATE.set(threading.Event())
    try:
        if settings.dask_address or settings.workers <= 1:
            yield None
            return
        with _pool(settings.workers) as holder:
            yield holder
    finally:
        _GATE.reset(gate)


@contextmanager
def _pool(workers: int) -> Iterator[LocalPool]:
    """The pool, found by ``dispatch``; its workers stopped after the block (killed if it raised)."""
    holder = LocalPool(workers)
    token = _LOCAL_POOL.set(holder)
    try:
        yield holder
    except BaseException:
        holder.shutdown(kill=True)
        raise
    else:
        holder.shutdown()
    finally:
        _LOCAL_POOL.reset(token)


def dispatch(refs, out_root: Path, settings: Settings, *, fn: Callable[..., ShardResult] = run_shard,
             **kwargs) -> tuple[ShardResult, str]:
    """Run one shard on the flow's local pool when there is one, else here; says where it ran. Once the
    run stops starting shards (``stop_starting``), a shard not begun returns an empty result."""
    if stopping():
        return ShardResult(), "nowhere: the run stopped before this shard began"
    holder = _LOCAL_POOL.get()
    if holder is None:
        return fn(refs, out_root, settings, **kwargs), "this worker"
    pool = holder.pool
    try:
        return pool.submit(fn, refs, out_root, settings, **kwargs).result(), "the local process pool"
    except BrokenProcessPool:
        if holder.closed:
            raise
        holder.replace(pool)
    return _one_by_one(holder, fn, refs, out_root, settings, **kwargs), "the local process pool, input by input"


def _one_by_one(holder: LocalPool, fn, refs, out_root: Path, settings: Settings, **kwargs) -> ShardResult:
    """The shard again, one input per pool task: the input whose worker dies is quarantined."""
    merged = ShardResult()
    for ref in refs:
        merged.merge(_alone(holder, fn, ref, out_root, settings, **kwargs))
    return merged


def _alone(holder: LocalPool, fn, ref, out_root: Path, settings: Settings, **kwargs) -> ShardResult:
    """One input in the pool; twice, since another shard's input may have broken the pool."""
    for _attempt in range(2):
        pool = holder.pool
        try:
            return pool.submit(fn, [ref], out_root, settings, **kwargs).result()
        except BrokenProcessPool:
            if holder.closed:
                raise
            holder.replace(pool)
    return worker_died(ref, out_root)
