"""CPU microseconds per message of each stage of the core on one JSON export (no Prefect, no writes).

    python -m bench.stages bench/data/full/chatgpt/conversations.json [--passes 3]

Each conversation goes through the stages the streamed core runs (flows/jsonstream.py) one after the
other, each timed in CPU seconds of this process (a loaded machine stretches wall time far more):
split (cut the list into entries and parse each with orjson), parse (the grammar), count (its
independent turn count), accounting, assemble, gate and encode. The fastest of ``--passes`` passes
is printed, per stage, as seconds and as microseconds per message.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections import defaultdict
from pathlib import Path

from flows import process
from models.records import SourceText
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import jsonsplit, registry
from validators.accounting import Accountant

STAGES = ("split", "parse", "count", "accounting", "assemble", "gate+encode")


def one_pass(path: Path, ctx: RunContext) -> tuple[dict[str, float], int]:
    """(CPU seconds by stage, messages) of one pass over the export."""
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
            entry = next(entries, None)
            t1 = clock()
            if entry is None:
                break
            for parsed in grammar.parse_entry(f"/{entry.index}", entry.value, source, ctx.settings):
                t2 = clock()
                counted = grammar.count_turns(parsed.raw)
                t3 = clock()
                accounting = Accountant.of(source).account(parsed, True)
                parsed.raw = None
                t4 = clock()
                built = process._built(parsed, counted, source, detection, grammar, ctx, accounting)
                t5 = clock()
                process._gate_session(built, counted, accounting)
                t6 = clock()
                for stage, spent in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5), strict=True):
                    seconds[stage] += spent
                messages += built.count
                t1 = clock()
    return seconds, messages


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
