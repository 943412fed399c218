"""Benchmark runner: end-to-end MB/s and sessions/s, peak RSS, Prefect's overhead, peers on WhatsApp.

    python -m bench.run            # full size (generates bench/data first if missing)
    python -m bench.run --quick    # 1/20 of the size, a smoke run

Each measurement runs in its own subprocess, so its peak RSS (summed over the process tree, the
pool workers included, sampled every 20 ms) is its own. Figures are printed as a table and written
to bench/results.json. No figure is asserted anywhere: this is a measuring tool.
"""

from __future__ import annotations

import argparse
import json
import os
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench.generate import generate

ROOT = Path(__file__).resolve().parents[1]


# -- children: each prints one JSON line ----------------------------------------------------------
def _interactions(ledger: str, run_id: str) -> int:
    """Turns written by this run (ok and partial sessions), read from the run's ledger."""
    import sqlite3

    with sqlite3.connect(ledger) as db:
        return db.execute("SELECT COALESCE(SUM(interactions), 0) FROM sessions WHERE run_id=? "
                          "AND status IN ('ok', 'partial')", (run_id,)).fetchone()[0]


def _result(summary: dict, seconds: float, **extra) -> dict:
    counts = dict(summary["counts"], interactions=_interactions(summary["ledger"], summary["run_id"]))
    return {"seconds": seconds, "counts": counts, "shards": summary["shards"], **extra}


def child_core(data: str, out: str) -> dict:
    """The core without Prefect: reconstruct(..., runner=None), every shard in this process."""
    from flows.pipeline import reconstruct
    from models.settings import Settings

    t0 = time.perf_counter()
    summary = reconstruct([Path(data)], Path(out), Settings(), runner=None)
    return _result(summary, time.perf_counter() - t0)


def child_core_pool(data: str, out: str) -> dict:
    """The core on the same local process pool the flow uses, without Prefect: the fair baseline
    for Prefect's overhead when an archive has more shards than one."""
    from flows import pool
    from flows.pipeline import reconstruct
    from flows.shard import run_shard
    from models.settings import Settings

    settings = Settings()
    with pool.local_pool(settings) as executor:
        def runner(shards, companions, ledger_path):
            futures = [executor.submit(run_shard, s, Path(out), settings, companions=companions,
                                       ledger_path=Path(ledger_path)) for s in shards]
            for f in futures:
                yield f.result()

        t0 = time.perf_counter()
        summary = reconstruct([Path(data)], Path(out), settings, runner=runner if executor else None)
        seconds = time.perf_counter() - t0
    return _result(summary, seconds)


def child_flow(data: str, out: str) -> dict:
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from prefect import flow

    from flows.pipeline import run_archive
    from models.settings import Settings

    @flow
    def warm_up() -> int:
        return 1

    t0 = time.perf_counter()
    warm_up()  # starts the embedded server (and creates its database on a fresh machine)
    t1 = time.perf_counter()
    summary = run_archive([Path(data)], Path(out), Settings())
    return _result(summary, time.perf_counter() - t1, server_start=t1 - t0)


def child_whatstk(data: str, out: str) -> dict:
    from whatstk import WhatsAppChat

    t0 = time.perf_counter()
    chat = WhatsAppChat.from_source(filepath=data, max_size=None)
    return {"seconds": time.perf_counter() - t0, "messages": len(chat.df)}


def child_chatminer(data: str, out: str) -> dict:
    from chatminer.chatparsers import WhatsAppParser

    t0 = time.perf_counter()
    parser = WhatsAppParser(data)
    parser.parse_file()
    return {"seconds": time.perf_counter() - t0, "messages": len(parser.parsed_messages.get_df())}


CHILDREN = {"core": child_core, "core_pool": child_core_pool, "flow": child_flow, "whatstk": child_whatstk,
            "chatminer": child_chatminer}


# -- parent ----------------------------------------------------------------------------------------
def measure(kind: str, data: Path) -> dict:
    """Run one child, sampling the RSS of its whole process tree. Its output goes to files, not
    pipes: a chatty child (chat-miner warns per line) would otherwise block on a full pipe."""
    with tempfile.TemporaryDirectory(prefix=f"bench-{kind}-") as work:
        out, log_out, log_err = Path(work) / "out", Path(work) / "stdout", Path(work) / "stderr"
        with log_out.open("w") as fo, log_err.open("w") as fe:
            proc = subprocess.Popen([sys.executable, "-m", "bench.run", "--child", kind, str(data), str(out)],
                                    cwd=ROOT, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
            peak = 0
            ps = psutil.Process(proc.pid)
            while proc.poll() is None:
                try:
                    rss = ps.memory_info().rss + sum(c.memory_info().rss for c in ps.children(recursive=True))
                    peak = max(peak, rss)
                except psutil.Error:
                    pass
                time.sleep(0.02)
        stdout, stderr = log_out.read_text(errors="replace"), log_err.read_text(errors="replace")
    lines = stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"error": ((stderr or stdout).strip().splitlines() or ["failed"])[-1]}
    result = json.loads(lines[-1])
    result["peak_rss_mb"] = peak / 2**20
    return result


def size_mb(path: Path) -> float:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6
    return path.stat().st_size / 1e6


def sessions(counts: dict) -> int:
    return counts["sessions_ok"] + counts["sessions_partial"]


def derive(mb: float, r: dict) -> dict:
    """Add MB/s (and sessions/s for our runs) to one measurement."""
    if "seconds" in r:
        r["mb_s"] = mb / r["seconds"]
        if "counts" in r:
            r["sessions_s"] = sessions(r["counts"]) / r["seconds"]
    return r


def overhead(row: dict) -> dict:
    """Prefect's cost: the flow against the same pool without Prefect, and against the serial core."""
    flow, core, pooled = row["flow"], row["core"], row["core_pool"]
    if any("seconds" not in r for r in (flow, core, pooled)):
        return {}
    return {"vs_pool_s": flow["seconds"] - pooled["seconds"],
            "vs_pool_pct": 100 * (flow["seconds"] - pooled["seconds"]) / pooled["seconds"],
            "flow_over_core": flow["seconds"] / core["seconds"],
            "server_start_s": flow.get("server_start")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1/20 of the full size")
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data")
    parser.add_argument("--only", choices=["whatsapp", "transcripts", "chatgpt"], action="append",
                        help="measure only this data set (repeatable)")
    parser.add_argument("--skip-peers", action="store_true", help="do not run whatstk and chat-miner")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "DATA", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, data, out = args.child
        print(json.dumps(CHILDREN[kind](data, out)))
        return

    shadow = [p for p in site.getsitepackages() if (Path(p) / "argparse.py").exists()]
    if shadow:
        sys.exit(f"argparse.py in {shadow[0]} (the PyPI backport chat-miner depends on) shadows the standard "
                 "library's in Prefect's embedded server, which then cannot start: pip uninstall -y argparse")
    scale = 0.05 if args.quick else 1.0
    data_dir = args.data / ("quick" if args.quick else "full")
    marker = data_dir / ".complete"
    if not marker.exists():
        print(f"generating data at scale {scale} in {data_dir} ...", flush=True)
        t0 = time.perf_counter()
        generate(data_dir, scale)
        marker.write_text("ok")
        print(f"generated in {time.perf_counter() - t0:.1f} s", flush=True)
    sets = {"whatsapp": data_dir / "whatsapp.txt", "transcripts": data_dir / "transcripts",
            "chatgpt": data_dir / "chatgpt" / "conversations.json"}
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True)
    results: dict = {"scale": scale, "cpus": os.cpu_count(), "python": sys.version.split()[0],
                     "commit": commit.stdout.strip() or None, "sets": {}}
    for name, path in sets.items():
        if args.only and name not in args.only:
            continue
        mb = size_mb(path)
        row: dict = {"mb": mb}
        for kind in ("flow", "core", "core_pool"):
            print(f"  {name}: {kind} ...", flush=True)
            row[kind] = derive(mb, measure(kind, path))
        if name == "whatsapp" and not args.skip_peers:
            for peer in ("whatstk", "chatminer"):
                print(f"  {name}: {peer} ...", flush=True)
                row[peer] = derive(mb, measure(peer, path))
        row["prefect"] = overhead(row)
        results["sets"][name] = row
    print_table(results["sets"])
    target = ROOT / "bench" / ("results-quick.json" if args.quick else "results.json")
    target.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"\nwritten: {target}")


def _fmt(value, spec: str) -> str:
    """``format(value, spec)``, or a dash as wide when there is no value."""
    width = spec.lstrip("<>^").split(".")[0].rstrip("dfs")
    return format("-", f">{width}") if value is None else format(value, spec)


def print_table(sets: dict) -> None:
    head = f"{'data set':<12} {'run':<10} {'MB':>7} {'s':>8} {'MB/s':>8} {'sess/s':>9} {'sessions':>8} " \
           f"{'messages':>9} {'RSS MB':>7}"
    print("\n" + head + "\n" + "-" * len(head))
    for name, row in sets.items():
        for kind in ("flow", "core", "core_pool", "whatstk", "chatminer"):
            r = row.get(kind)
            if r is None:
                continue
            if "error" in r:
                print(f"{name:<12} {kind:<10} not run: {r['error']}")
                continue
            c = r.get("counts")
            n_sess = sessions(c) if c else None
            msgs = c["interactions"] if c else r.get("messages")
            print(f"{name:<12} {kind:<10} {row['mb']:>7.1f} {r['seconds']:>8.2f} {r['mb_s']:>8.2f} "
                  f"{_fmt(r.get('sessions_s'), '>9.1f')} {_fmt(n_sess, '>8')} {_fmt(msgs, '>9')} "
                  f"{r['peak_rss_mb']:>7.0f}")
    head = f"{'data set':<12} {'shards':>6} {'flow - pool s':>13} {'%':>6} {'flow/core':>9} {'server start s':>14}"
    print("\nPrefect overhead (flow against the same process pool without Prefect; flow/core against the"
          " serial core;\nthe embedded server's start is measured apart and not in the flow's seconds)")
    print(head + "\n" + "-" * len(head))
    for name, row in sets.items():
        o = row.get("prefect")
        if not o:
            print(f"{name:<12} (a run failed)")
            continue
        print(f"{name:<12} {row['flow'].get('shards', '-'):>6} {o['vs_pool_s']:>+13.2f} {o['vs_pool_pct']:>+6.1f} "
              f"{o['flow_over_core']:>9.3f} {_fmt(o['server_start_s'], '>14.2f')}")


if __name__ == "__main__":
    main()
