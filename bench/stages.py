"""CPU microseconds per message of each stage of the core on one JSON export (no Prefect, no writes).

    python -m bench.stages bench/data/full/chatgpt/conversations.json [--passes 3]

Each conversation goes through the stages the streamed core runs (flows/core/jsonstream.py) one after the
other, each timed in CPU seconds of this process (a loaded machine stretches wall time far more):
split (cut the list into entries and parse each with orjson), parse (the grammar), count (its
independent turn count), accounting, assemble (a batch at a time, as one table), gate and encode.
The fastest of ``--passes`` passes is printed, per stage, as seconds and as microseconds per message.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections import defaultdict
from itertools import islice
from pathlib import Path

from flows.core import batches, process
from models.records import SourceText
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import jsonsplit, registry
from validators.accounting import account_records

STAGES = ("split", "parse", "count", "accounting", "assemble", "gate+encode")


def one_pass(path: Path, ctx: RunContext) -> tuple[dict[str, float], int]:
    """(CPU seconds by stage, messages) of one pass over the export, in the worker's batches of
    ``stream_chunk_bytes``, each assembled as one table (flows/core/batches.py)."""
    source = SourceText("", path.name, "0" * 64, path.stat().st_size, "utf-8")
    with path.open("rb") as fh:
        sample = fh.read(65536).decode("utf-8", "ignore")
    detection = registry.detect(sample, path.name, threshold=ctx.settings.detect_threshold)
    grammar = registry.get(detection.grammar)
    seconds: dict[str, float] = defaultdict(float)
    messages = 0
    clock = time.process_time
    with path.open("rb") as fh:
        entries = jsonsplit.entries(fh)
        while True:
            t0 = clock()
            batch = list(islice(entries, BATCH))
            seconds["split"] += clock() - t0
            if not batch:
                break
            messages += _columns(batch, grammar, source, detection, ctx, seconds)
    return seconds, messages


BATCH = 170
"""Conversations per batch: about ``stream_chunk_bytes`` (2 MiB) of the generated ChatGPT export."""


def _columns(batch, grammar, source, detection, ctx: RunContext, seconds: dict[str, float]) -> int:
    clock = time.process_time
    pending = []
    for entry in batch:
        t1 = clock()
        for parsed in grammar.parse_conversation(f"/{entry.index}", entry.value, source, ctx.settings):
            t2 = clock()
            counted = grammar.count_turns(parsed.raw)
            t3 = clock()
            accounting = account_records(parsed.raw, parsed.pointer or "", parsed.turns.pointers,
                                         (r.pointer for r in parsed.regions))
            parsed.raw = None
            t4 = clock()
            pending.append(batches.Pending(parsed, counted, accounting, 0.0))
            for stage, spent in zip(STAGES[1:4], (t2 - t1, t3 - t2, t4 - t3), strict=True):
                seconds[stage] += spent
            t1 = clock()
    t5 = clock()
    owner = process.Owner(grammar, source, detection, None)
    built = batches.assemble_pending([(p, owner) for p in pending], ctx)
    t6 = clock()
    for p, b in zip(pending, built, strict=True):
        session = process._Built(b.doc, b.count, b.characters, b.frames, b.body, b.rows)
        process._gate_session(session, p.counted, p.accounting)
    seconds["assemble"] += t6 - t5
    seconds["gate+encode"] += clock() - t6
    return sum(b.count for b in built)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--passes", type=int, default=1)
    args = parser.parse_args()
    ctx = RunContext.from_settings(Settings())
    gc.disable()  # as the core runs (parsers.memory.paused_gc)
    best, messages = min((one_pass(args.path, ctx) for _ in range(args.passes)), key=lambda r: sum(r[0].values()))
    total = sum(best.values())
    print(f"{args.path.name}: {messages} messages, {total:.2f} CPU s, {total / messages * 1e6:.1f} us/message")
    for stage in STAGES:
        print(f"  {stage:12s} {best[stage]:7.2f} s {best[stage] / messages * 1e6:7.1f} us/message")


if __name__ == "__main__":
    main()
