"""Bench of the auditor's browser: the session list, a full-text search and a large session page.

Builds an output root (``--folder``, default bench/data/browse): one real 10,000-interaction session
run through the pipeline (its document, ledger and published tables), then the current tables grown
to ``--sessions`` sessions of ``--turns`` interactions each (synthetic rows, streamed to Parquet by
polars), kept fresh against the ledger's stamp. Then, through the application in-process (Starlette's
TestClient: routing, DuckDB, rendering), each page is timed ``--repeat`` times (median and best),
beside floors measured in the same run: a bare DuckDB count over the same Parquet, and the same scan
the search does without the page around it. Figures go to stdout and ``bench/results-browse.json``.
Never asserted by tests (no timed assertions).

    python -m bench.browse                                   # 100,000 sessions x 100 turns = 10 M turns
    python -m bench.browse --sessions 10000 --turns 20       # a quick one
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

import duckdb
import orjson
import polars as pl

from audit import current, publication
from audit.files import atomic_write
from bench.generate import transcript
from models.status import SessionStatus

VOCAB = ("deploy", "build", "cache", "kernel", "router", "backup", "ticket", "invoice", "schedule", "meeting",
         "review", "merge", "branch", "docker", "python", "server", "client", "window", "garden", "coffee", "train",
         "ticket", "music", "paper", "report", "budget", "travel", "photo", "weather", "dinner", "market", "lesson",
         "doctor", "family", "friend", "network", "printer", "laptop", "phone", "camera")
NEEDLE = "zanzibar"  # one interaction in 10,000 holds it: what the full-text search looks for
BIG = 10_000


def _synthetic_sessions(sessions: int, turns: int, run_id: str) -> pl.DataFrame:
    """The synthetic sessions rows (seven platforms, one in 50 partial)."""
    i = pl.col("i")
    return pl.DataFrame({"i": range(sessions)}, schema={"i": pl.Int64}).select(
        i=i, output_path=_path(i), platform=pl.lit("p") + (i % 7).cast(pl.Utf8),
        session_key=pl.format("p{}:k{}", i % 7, i), session_id=pl.format("s{}", i),
        title=pl.when(i % 3 == 0).then(pl.format("Chat {} about the budget", i)).otherwise(pl.lit(None, pl.Utf8)),
        created_at=(START + i * 600_000_000).cast(current.UTC), first_at=(START + i * 600_000_000).cast(current.UTC),
        last_at=(START + i * 600_000_000 + turns * 60_000_000).cast(current.UTC),
        status=pl.when(i % 50 == 0).then(pl.lit("partial")).otherwise(pl.lit("ok")).cast(current.enum(SessionStatus)),
        source_path=pl.format("in/p{}/chat{}.txt", i % 7, i), grammar=pl.lit("p") + (i % 7).cast(pl.Utf8),
        interactions=pl.lit(turns, pl.Int64), redactions=(i % 3).cast(pl.Int64), revisions=(1 + i % 2).cast(pl.Int64),
        run_id=pl.lit(run_id), bucket=publication.bucket_of(pl.Series(
            [f"sessions/p{k % 7}/k{k}/s{k}.json" for k in range(sessions)]), publication.BUCKETS["turns"]))


START = pl.lit(1_600_000_000_000_000, dtype=pl.Int64)


def _path(e: pl.Expr) -> pl.Expr:
    return pl.format("sessions/{}/k{}/s{}.json", pl.lit("p") + (e % 7).cast(pl.Utf8), e, e)


def _synthetic_turns(ids: pl.Series, turns: int) -> pl.LazyFrame:
    """The turns of the synthetic sessions ``ids``: eight words of VOCAB each, one in 10,000 with NEEDLE."""
    j = pl.col("i") * turns + pl.col("o")
    content = pl.concat_str([j.hash(seed=k).mod(len(VOCAB)).cast(pl.Int64)
                             .replace_strict(dict(enumerate(VOCAB)), return_dtype=pl.Utf8) for k in range(8)],
                            separator=" ")
    content = pl.when(j.hash(seed=99) % 10_000 == 0).then(content + f" {NEEDLE}").otherwise(content)
    session = pl.col("i")
    return pl.LazyFrame({"i": ids}).join(pl.LazyFrame({"o": range(turns)}, schema={"o": pl.Int64}), how="cross").select(
        output_path=_path(session), platform=pl.lit("p") + (session % 7).cast(pl.Utf8),
        session_key=pl.format("p{}:k{}", session % 7, session), ordinal=pl.col("o") + 1,
        role=pl.when(j % 2 == 0).then(pl.lit("user")).otherwise(pl.lit("assistant")),
        speaker_name=pl.when(j % 2 == 0).then(pl.lit("User")).otherwise(pl.format("Agent {}", session % 13)),
        date=(START + session * 600_000_000 + pl.col("o") * 60_000_000).cast(current.UTC), content=content)


def _grow(out: Path, sessions: int, turns: int) -> dict[str, int]:
    """Add synthetic rows to the published sessions, turns and terms, bucket by bucket (as a run
    publishes them), and name them in the manifest."""
    folder = out / current.CURRENT
    manifest = publication.Manifest.read(folder)
    files = manifest.files(folder)
    real_s = pl.read_parquet(files["sessions"])
    real_t = pl.read_parquet(files["turns"])
    synth = _synthetic_sessions(sessions, turns, real_s["run_id"][0])
    t0, tables = time.perf_counter(), {t: {} for t in publication.BUCKETED}
    n_turns, n_terms = publication.BUCKETS["turns"], publication.BUCKETS["terms"]
    real_bucket = publication.bucket_of(real_t["output_path"], n_turns)
    every = pl.concat([real_s, synth.drop("i", "bucket")], how="diagonal_relaxed").select(real_s.columns)
    every_bucket = publication.bucket_of(every["output_path"], n_turns)
    for tb in range(n_terms):  # a terms bucket holds the turns buckets equal to it modulo its count
        words = []
        for b in range(tb, n_turns, n_terms):
            t = pl.concat([real_t.filter(real_bucket == b).lazy(),
                           _synthetic_turns(synth.filter(pl.col("bucket") == b)["i"], turns)],
                          how="diagonal_relaxed").select(real_t.columns).collect()
            words.append(current.terms(t.lazy(), every.filter(every_bucket == b).lazy()).collect())
            tables["turns"][str(b)] = publication.write_file(t.sort(current.ORDER["turns"]), folder,
                                                             f"turns/{b}-bench.parquet")
        tables["terms"][str(tb)] = publication.write_file(pl.concat(words).sort(current.ORDER["terms"]), folder,
                                                          f"terms/{tb}-bench.parquet")
    tables["sessions"]["0"] = publication.write_file(every.sort(current.ORDER["sessions"]), folder,
                                                     "sessions/0-bench.parquet")
    print(f"buckets of {sessions * turns + real_t.height:,} turns with their search index: "
          f"{time.perf_counter() - t0:.1f} s")
    grown = publication.Manifest(manifest.stamp, {**manifest.tables, **tables})
    atomic_write(folder / publication.MANIFEST, grown.dumps())
    publication.sweep(folder, grown.names())
    return {"sessions": sessions + real_s.height, "turns": sessions * turns + real_t.height}


def build(folder: Path, sessions: int, turns: int, big: int = BIG) -> dict[str, int]:
    """The bench's output root (rebuilt from scratch)."""
    from flows.pipeline import reconstruct
    from models.settings import Settings

    shutil.rmtree(folder, ignore_errors=True)
    (folder / "in").mkdir(parents=True)
    transcript(folder / "in" / "big.txt", big)
    reconstruct([folder / "in"], folder / "out", Settings(workers=1))
    return _grow(folder / "out", sessions, turns)


def timed(fn, repeat: int) -> dict[str, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return {"median_ms": round(statistics.median(times), 1), "best_ms": round(min(times), 1)}


def measure(out: Path, repeat: int) -> dict[str, dict]:
    from starlette.testclient import TestClient

    from audit.browse.app import create_app
    from audit.browse.data import TURNS_PAGE

    client = TestClient(create_app(out, prefect_ui=""))
    big = client.get("/sessions", params={"platform": "transcript", "format": "json"}).json()["sessions"][0]
    n, last = big["interactions"], -(-big["interactions"] // TURNS_PAGE)
    t0 = time.perf_counter()
    first = client.get("/sessions")
    opened = round((time.perf_counter() - t0) * 1000, 1)
    assert first.status_code == 200

    def ok(url: str, **params):
        def go():
            r = client.get(url, params=params)
            assert r.status_code == 200, r.text[:500]
        return go

    def cold(url: str):
        def go():
            client.app.state.archive._documents.clear()  # as on the first view of the session
            ok(url)()
        return go

    files = publication.Manifest.read(out / current.CURRENT).files(out / current.CURRENT)
    turns, index = (str([str(p) for p in files[t]]) for t in ("turns", "terms"))
    part = NEEDLE[:5]
    con = duckdb.connect()
    archive = client.app.state.archive

    def naive_search(q: str) -> None:
        where = " AND ".join(["output_path IN (SELECT output_path FROM terms WHERE term = ?)"] * len(q.split()))
        archive.sql(f"SELECT count(*) AS n FROM sessions WHERE {where}", q.split())
        archive.sql(f"SELECT * FROM sessions WHERE {where} ORDER BY last_at DESC NULLS LAST, output_path LIMIT 50",
                    q.split())
    figures = {
        "first request (views opened)": {"ms": opened},
        "session list, page 1 (latest first)": timed(ok("/sessions"), repeat),
        "session list, page 200 sorted by interactions": timed(ok("/sessions", sort="interactions", page=200),
                                                               repeat),
        "session list filtered (platform, status, dates)": timed(
            ok("/sessions", platform="p3", status="ok", since="2021-01-01", until="2021-06-30"), repeat),
        f"full-text search '{NEEDLE}' (contents and speakers)": timed(ok("/sessions", q=NEEDLE), repeat),
        "full-text search 'agent 7' (a speaker's words)": timed(ok("/sessions", q="agent 7"), repeat),
        "the same search's page by the plan before (a subquery per word, no plan)": timed(
            lambda: naive_search("agent 7"), repeat),
        f"substring search '{part}' (a scan of every turn)": timed(ok("/sessions", q=part, match="substring"),
                                                                   repeat),
        f"session page of {n:,} interactions, page 1, document parsed": timed(
            cold(f"/session/{big['output_path']}"), repeat),
        f"session page of {n:,} interactions, page 1": timed(ok(f"/session/{big['output_path']}"), repeat),
        f"session page of {n:,} interactions, page {last}": timed(ok(f"/session/{big['output_path']}", page=last),
                                                                  repeat),
        "floor: DuckDB count(*) over the turns table": timed(
            lambda: con.execute(f"SELECT count(*) FROM read_parquet({turns})").fetchall(), repeat),
        f"floor: DuckDB scan content ILIKE '%{part}%'": timed(
            lambda: con.execute(f"SELECT count(DISTINCT output_path) FROM read_parquet({turns}) "
                                f"WHERE content ILIKE '%{part}%' OR speaker_name ILIKE '%{part}%'").fetchall(),
            repeat),
        f"floor: DuckDB lookup of '{NEEDLE}' in the terms table": timed(
            lambda: con.execute(f"SELECT count(DISTINCT output_path) FROM read_parquet({index}) "
                                "WHERE term = ?", [NEEDLE]).fetchall(), repeat),
        f"floor: read and parse the {n:,}-interaction document": timed(
            lambda: orjson.loads((out / big["output_path"]).read_bytes()), repeat),
    }
    return figures


def _size(out: Path) -> dict[str, int]:
    folder = out / current.CURRENT
    files = publication.Manifest.read(folder).files(folder)
    return {t: pl.scan_parquet(files[t]).select(pl.len()).collect().item() for t in ("sessions", "turns")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=100, help="interactions per synthetic session")
    parser.add_argument("--folder", type=Path, default=Path("bench/data/browse"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reuse", action="store_true", help="measure the folder as it is (no rebuild)")
    parser.add_argument("--results", type=Path, default=Path("bench/results-browse.json"))
    args = parser.parse_args()
    t0 = time.perf_counter()
    size = _size(args.folder / "out") if args.reuse else build(args.folder, args.sessions, args.turns)
    built = round(time.perf_counter() - t0, 1)
    figures = measure(args.folder / "out", args.repeat)
    for name, fig in figures.items():
        print(f"{name:60s} " + "  ".join(f"{k} {v}" for k, v in fig.items()))
    args.results.write_bytes(orjson.dumps({"size": size, "build_seconds": built, "repeat": args.repeat,
                                           "figures": figures}, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
