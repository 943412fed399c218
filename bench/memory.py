"""Where a run's memory goes over time: the RSS of one measurement's processes by role, sampled.

    python -m bench.memory bench/data/quick/mixed              # the flow (embedded Prefect), as bench.run runs it
    python -m bench.memory bench/data/quick/mixed --kind core_pool

Prints a line each time the flow process's or the workers' RSS moves by more than --step MB, then
the peak of the two summed (``peak_rss_ours_mb`` in bench.run: Prefect's server apart) with when it
came and how it split. A measuring tool: nothing is asserted (docs/memory.md).
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from bench.children import CHILDREN
from bench.run import ROOT, _sample, child_command

MB = 2**20


def timeline(kind: str, data: Path, step: float, every: float) -> tuple[float, float, int, int]:
    """Run one child and print its RSS by role as it moves; returns (peak MB, when s, main MB, workers MB)."""
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as work:
        proc = subprocess.Popen(child_command(kind, data, Path(work) / "out"), cwd=ROOT,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ps, roles, cpu, t0 = psutil.Process(proc.pid), {}, {}, time.perf_counter()
        last, peak = (0, 0), (0.0, 0.0, 0, 0)
        while proc.poll() is None:
            with contextlib.suppress(psutil.Error):
                now = _sample(ps, cpu, roles)
                main, workers = round(now["main"] / MB), round(now["workers"] / MB)
                if abs(main - last[0]) + abs(workers - last[1]) > step:
                    print(f"{time.perf_counter() - t0:7.2f} s  flow process {main:5d} MB  workers {workers:5d} MB  "
                          f"(server {now['server'] / MB:.0f} MB apart)", flush=True)
                    last = (main, workers)
                if main + workers > peak[0]:
                    peak = (main + workers, time.perf_counter() - t0, main, workers)
            time.sleep(every)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--kind", default="flow", choices=sorted(k for k in CHILDREN if not k.startswith("floor:")))
    parser.add_argument("--step", type=float, default=15, help="print when the RSS moves by more than this (MB)")
    parser.add_argument("--every", type=float, default=0.05, help="seconds between samples")
    args = parser.parse_args()
    total, when, main_mb, workers = timeline(args.kind, args.data.resolve(), args.step, args.every)
    print(f"peak {total:.0f} MB (flow process {main_mb} + workers {workers}) at {when:.2f} s")


if __name__ == "__main__":
    main()
