"""Shard functions for the pool tests, importable by forkserver workers."""

from __future__ import annotations

import os

from flows.core.shard import run_shard
from models.errors import Reason, TransientIngestError


def run_or_die(refs, out_root, settings, **kwargs):
    """run_shard, except that a worker given an input named ``die*`` dies as an out-of-memory kill would."""
    if any("die" in ref.name.rsplit("/", 1)[-1] for ref in refs):
        os._exit(137)
    return run_shard(refs, out_root, settings, **kwargs)


def raise_transient(refs, out_root, settings, **kwargs):
    raise TransientIngestError(Reason.UNREADABLE, "disk hiccup", path=refs[0].name, line=3)
