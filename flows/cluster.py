"""Shards on a Dask cluster: the Prefect-free core (run_shard, merge_keys) shipped to dask.distributed
workers as plain Dask tasks.

A worker needs no Prefect API: the flow run on the driver submits the shards, collects their results
and records them in the ledger and in Prefect, as it does for the local pool. (Prefect's own
DaskTaskRunner makes every shard a Prefect task run on the worker, which then calls the Prefect API
of the run that first reached it: a run's embedded server listens on the driver's loopback only and
is gone after the run, so a second run on the same cluster failed.)

Transient errors (an I/O hiccup) are retried on the worker as the local runner's Prefect tasks retry
them (``task_retries``, a second apart). A worker that dies has its task moved to another worker by
the scheduler; a shard whose tasks kill every worker they reach (the scheduler gives up with
``KilledWorker``) is run again one input at a time, and the input that kills its worker is quarantined
``worker_died``, as on the local pool.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from models.errors import ClusterError, Reason
from models.settings import Settings

from .core.merge import merge_keys
from .core.shard import ShardResult, run_shard, worker_died

EXTRA_HINT = "pip install 'reconstruct[dask]'"
CONNECT_SECONDS = 30
RETRY_DELAY_SECONDS = 1.0


def require_distributed():
    """dask.distributed, or a ClusterError naming the missing extra."""
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError(Reason.CLUSTER_UNAVAILABLE,
                           f"--dask-address needs the 'dask' extra, which is not installed ({EXTRA_HINT}): {exc}"
                           ) from None
    return distributed


@contextmanager
def connected(address: str | None) -> Iterator[Any]:
    """A client of the scheduler at ``address`` for the block (None without an address)."""
    if not address:
        yield None
        return
    distributed = require_distributed()
    try:
        client = distributed.Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, ValueError) as exc:  # TimeoutError is an OSError
        raise ClusterError(Reason.CLUSTER_UNAVAILABLE, f"no Dask scheduler answers at {address}: {exc}") from None
    try:
        yield client
    finally:
        client.close()


def with_retries(fn: Callable[..., ShardResult], retries: int, *args, **kwargs) -> ShardResult:
    """``fn`` on the worker, again after an error marked transient, at most ``retries`` more times."""
    attempt = 0
    while True:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # re-raised unless marked transient with retries left
            if not getattr(exc, "transient", False) or attempt >= retries:
                raise
        attempt += 1
        time.sleep(RETRY_DELAY_SECONDS)


def shards(client, groups: list[list], out_root: Path, settings: Settings, *, companions: dict,
           fn: Callable[..., ShardResult] = run_shard, **kwargs) -> Iterator[ShardResult]:
    """Run each shard (a list of InputRef) on the cluster through ``fn``; results as they complete."""
    # the companions go with every task, not scattered once: data held by one worker is lost with it,
    # and every task that needs it would be cancelled
    futures = {_submit(client, fn, group, out_root, settings, companions=companions, **kwargs): group
               for group in groups}
    for future in _as_completed(client, futures):
        try:
            yield future.result()
        except _killed_worker():
            yield _one_by_one(client, fn, futures[future], out_root, settings, companions=companions, **kwargs)


def merges(client, groups: list[list[str]], out_root: Path, settings: Settings, **kwargs) -> Iterator[ShardResult]:
    """Run each group of deferred session keys (flows/core/merge.py) on the cluster; results as they complete.
    A group whose tasks kill every worker fails the run (no single input to quarantine)."""
    futures = [_submit(client, merge_keys, group, out_root, settings, **kwargs) for group in groups]
    for future in _as_completed(client, futures):
        yield future.result()


def _submit(client, fn, items, out_root: Path, settings: Settings, **kwargs):
    return client.submit(with_retries, fn, settings.task_retries, items, out_root, settings, pure=False, **kwargs)


def _as_completed(client, futures):
    from distributed import as_completed

    return as_completed(list(futures), loop=client.loop)


def _killed_worker() -> type[BaseException]:
    from distributed.scheduler import KilledWorker

    return KilledWorker


def _one_by_one(client, fn, refs: list, out_root: Path, settings: Settings, **kwargs) -> ShardResult:
    """The shard again, one input per task: the input whose task kills its workers is quarantined."""
    futures = [(ref, _submit(client, fn, [ref], out_root, settings, **kwargs)) for ref in refs]
    merged = ShardResult()
    for ref, future in futures:
        merged.merge(_alone(client, fn, ref, future, out_root, settings, **kwargs))
    return merged


def _alone(client, fn, ref, future, out_root: Path, settings: Settings, **kwargs) -> ShardResult:
    """One input's result; its task is run once more, alone, if it died: the scheduler also blames
    the tasks that were waiting on a worker another input killed."""
    for attempt in range(2):
        try:
            return future.result()
        except _killed_worker():
            if attempt:
                break
            future = _submit(client, fn, [ref], out_root, settings, **kwargs)
    return worker_died(ref, out_root)
