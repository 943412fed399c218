"""CPU seconds (or a profile) of one shard over a folder of inputs: the core's settle-and-write stage measured.

    python -m bench.shard_cpu bench/data/quick/mixed [--runs 4] [--profile]

One warm-up shard, then ``--runs`` shards, each into a fresh output folder (removed after), each timed
with ``time.process_time`` (this process's CPU: a loaded machine stretches wall time far more); the
minimum is printed. ``--profile`` prints cProfile's cumulative CPU figures of the shard's settle, write and
judge functions instead. To compare two versions of the code, run it alternately from each checkout
(``PYTHONPATH=<other tree>``) and compare the minima.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import tempfile
import time
from pathlib import Path

from flows.core import ingest
from flows.core.shard import ShardResult, run_shard
from models.settings import Settings

PROFILED = (r"\((run_shard|_settle|_emit_session|prints_all|prints_of|column_index_prints|content_hash|document|stage"
            r"|_make|resolve_inside|resolve|judge_batch|assemble_pending|account|_gate_session|_decide)\)")


def one_shard(refs: list[ingest.InputRef], settings: Settings, profile: cProfile.Profile | None = None
              ) -> tuple[float, ShardResult]:
    """(CPU seconds, result) of one shard into a fresh output folder."""
    out = Path(tempfile.mkdtemp(prefix="shard-cpu-"))
    try:
        if profile is not None:
            profile.enable()
        started = time.process_time()
        result = run_shard(refs, out, settings)
        seconds = time.process_time() - started
        if profile is not None:
            profile.disable()
        return seconds, result
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    settings = Settings()
    refs = ingest.discover([args.data], settings)
    one_shard(refs, settings)  # imports, caches
    if args.profile:
        profile = cProfile.Profile(time.process_time)  # CPU time: a loaded machine distorts wall time
        one_shard(refs, settings, profile)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(PROFILED)
        return
    runs = [one_shard(refs, settings) for _ in range(args.runs)]
    best, result = min(runs, key=lambda r: r[0])
    print(f"{args.data.name}: {len(refs)} inputs, {len(result.sessions)} sessions, "
          f"min CPU {best:.3f} s of {args.runs} runs ({', '.join(f'{s:.3f}' for s, _ in runs)})")


if __name__ == "__main__":
    main()
