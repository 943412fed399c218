"""The accounting's share of a shard of small line inputs read as frames, and the CPU per file.

Every input of DIR (default: the quick set's WhatsApp files, bench/data/quick/mixed/whatsapp) is
processed into one batch with the default settings (every line input a frame session),
then settled; one warm-up pass first. ``time``: CPU time (``time.process_time``) of one pass per
file. ``profile``: under cProfile, the cumulative time of the accounting (``Accountant.account`` and
``defer``, ``batches.account_deferred``) beside the whole pass, and how many polars queries ran.

To compare two versions of the code, run each from its own tree, alternating:
``PYTHONPATH=<tree> .venv/bin/python bench/frame_accounting.py time``.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

import flows
from flows.core import process
from models.settings import Settings
from normalizers.assemble import RunContext

QUICK = Path(__file__).resolve().parent / "data/quick/mixed/whatsapp"  # bench/generate.py makes it
ACCOUNTING = {("validators/accounting.py", "account"), ("validators/accounting.py", "defer"),
              ("flows/core/batches.py", "account_deferred")}


def _pass(data: list[tuple[bytes, str]], ctx: RunContext) -> list:
    batch = process.Batch(ctx)
    opened = [process.process_bytes(d, n, ctx, batch=batch) for d, n in data]
    return [process.settled(batch, o) for o in opened]


def _profile(data: list[tuple[bytes, str]], ctx: RunContext) -> str:
    prof = cProfile.Profile()
    prof.enable()
    _pass(data, ctx)
    prof.disable()
    stats = pstats.Stats(prof)
    accounting = sum(ct for (fn, _, name), (_, _, _, ct, _) in stats.stats.items()
                     if any(fn.endswith(f) and name == n for f, n in ACCOUNTING))
    queries = sum(nc for (_, _, name), (_, nc, _, _, _) in stats.stats.items()
                  if name == "<method 'collect' of 'builtins.PyLazyFrame' objects>")
    total = stats.total_tt
    return (f"accounting {accounting * 1000:.1f} ms of {total * 1000:.1f} ms = {100 * accounting / total:.1f} % "
            f"({1000 * accounting / len(data):.2f} ms/file); polars queries collected: {queries}")


def main(mode: str, folder: Path) -> None:
    data = [(p.read_bytes(), p.name) for p in sorted(folder.rglob("*")) if p.is_file()]
    ctx = RunContext.from_settings(Settings())
    _pass(data, ctx)  # warm-up: imports, compiled patterns
    if mode == "profile":
        figure = _profile(data, ctx)
    else:
        started = time.process_time()
        _pass(data, ctx)
        figure = f"{1000 * (time.process_time() - started) / len(data):.3f} ms/file"
    print(f"{Path(flows.__file__).parents[1]} {len(data)} files: {figure}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "time", Path(sys.argv[2]) if len(sys.argv) > 2 else QUICK)
