"""Bench of publishing the current tables: a run's incremental publication beside the full rebuild.

Builds an archive through the pipeline (``--sessions`` generated transcripts of ``--turns`` turns
each, folder ``--folder``, default bench/data/publish), then a second run after one transcript grew
and one was added; the second run's publication is timed as the run does it (only the buckets of
the documents that changed). Beside it, on the same archive in the same process: the full rebuild
into buckets (``publish(full=True)``), the publication before buckets (every table built from the
parts and the ledger, one file each: what every run did), and floors (copying the published turns
table once, a DuckDB count over it). Figures to stdout and ``bench/results-publish.json``. Never
asserted by tests (no timed assertions).

    python -m bench.publish                                 # 200 sessions x 5,000 turns = 1 M turns
    python -m bench.publish --sessions 50 --turns 100       # a quick one
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from contextlib import closing
from pathlib import Path

import duckdb
import orjson
import polars as pl

from audit import current, publication
from audit.ledger import Ledger
from bench.browse import timed
from bench.generate import transcript


def _run(src: Path, out: Path, workers: int) -> float:
    from flows.pipeline import reconstruct
    from models.settings import Settings

    t0 = time.perf_counter()
    reconstruct([src], out, Settings(workers=workers))
    return time.perf_counter() - t0


def _titled(path: Path, turns: int, seed: int) -> None:
    """A generated transcript with a title of its own: untitled id-less transcripts are all one chat
    to the key linking, which then compares every pair of them message by message."""
    transcript(path, turns, seed=seed)
    path.write_text(f"Title: chat {seed}\n" + path.read_text())


def build(folder: Path, sessions: int, turns: int, workers: int = 2) -> dict:
    """Two runs; the second's publication timed. Returns the archive's size and that figure."""
    shutil.rmtree(folder, ignore_errors=True)
    src, out = folder / "in", folder / "out"
    src.mkdir(parents=True)
    for i in range(sessions):
        _titled(src / f"chat{i:05d}.txt", turns, i)
    first = _run(src, out, workers)
    before = publication.Manifest.read(out / current.CURRENT)
    _titled(src / "chat00000.txt", turns + 10, 0)  # grown: the same first turns, ten more
    _titled(src / "added.txt", turns, sessions)
    timed: list[float] = []
    publish = publication.publish

    def timing(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return publish(*args, **kwargs)
        finally:
            timed.append(time.perf_counter() - t0)

    publication.publish = timing  # the run's own call, timed
    try:
        second = _run(src, out, workers)
    finally:
        publication.publish = publish
    after = publication.Manifest.read(out / current.CURRENT)
    rewritten = {t: sum(1 for b, f in after.tables[t].items() if before.tables[t].get(b) != f)
                 for t in publication.BUCKETED}
    return {"first_run_s": round(first, 1), "second_run_s": round(second, 1),
            "incremental_publication_ms": round(timed[0] * 1000, 1), "buckets_rewritten": rewritten,
            "buckets": {t: len(after.tables[t]) for t in publication.BUCKETED}}


def _before(out: Path, ledger: Ledger, scratch: Path) -> None:
    """The publication before buckets: every table built in memory, then one Parquet file each."""
    for name, frame in current.build(out, ledger).items():
        frame.write_parquet(scratch / f"{name}.parquet", row_group_size=current.ROW_GROUP)


def measure(out: Path, repeat: int) -> dict[str, dict]:
    with closing(Ledger(out / "ledger.sqlite", read_only=True)) as ledger, \
            tempfile.TemporaryDirectory(prefix="bench-publish-") as tmp:
        files = publication.published(out, ledger)
        assert files is not None, "the archive's tables are stale"
        turns = [str(p) for p in files["turns"]]
        con = duckdb.connect()
        figures = {
            "before: every table built and written whole (what each run did)": timed(
                lambda: _before(out, ledger, Path(tmp)), repeat),
            "floor: copy the published turns table once (read and write Parquet)": timed(
                lambda: pl.read_parquet(turns).write_parquet(Path(tmp) / "copy.parquet"), repeat),
            "floor: DuckDB count(*) over the turns table": timed(
                lambda: con.execute(f"SELECT count(*) FROM read_parquet({turns})").fetchall(), repeat),
            # last: a publication sweeps the files of the one before the last (the floors read them)
            "publication of a run that changed nothing (state compared, ledger tables rewritten)": timed(
                lambda: publication.publish(out, ledger), repeat),
            "full rebuild into buckets (publish full=True)": timed(
                lambda: publication.publish(out, ledger, full=True), repeat),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5_000, help="turns per generated transcript")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--folder", type=Path, default=Path("bench/data/publish"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--results", type=Path, default=Path("bench/results-publish.json"))
    args = parser.parse_args()
    runs = build(args.folder, args.sessions, args.turns, args.workers)
    print(orjson.dumps(runs).decode())
    figures = measure(args.folder / "out", args.repeat)
    for name, fig in figures.items():
        print(f"{name:78s} " + "  ".join(f"{k} {v}" for k, v in fig.items()))
    args.results.write_bytes(orjson.dumps({"sessions": args.sessions, "turns": args.turns, "runs": runs,
                                           "repeat": args.repeat, "figures": figures}, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
