"""Benchmark runner: each figure beside its floor measured in the same run, and beside the targets.

    python -m bench.run            # full size (generates bench/data/full first if missing)
    python -m bench.run --quick    # 1/20 of the size, a smoke run
    python -m bench.run --huge     # also the 1 GB WhatsApp file (generated on demand; checks free space)

Each measurement runs in its own subprocess, so its peak RSS (summed over the process tree, the
pool workers and Prefect's server included, sampled every 20 ms) is its own; a tree above
--max-rss-mb is stopped. The RSS targets are judged on the tree without Prefect's server
(``peak_rss_ours_mb``: the measured process and its workers, summed at each sample), the server's own
peak reported apart. Figures are printed and written to bench/results.json. No figure is
asserted anywhere: this is a measuring tool.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench import generate, peers
from bench.report import print_report, write_markdown

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Target:
    """One target of the one-route issue (#22): ``row[run][field] op limit``."""

    label: str
    run: str  # a run kind, or "prefect" for the overhead
    field: str
    op: str  # ">=" or "<="
    limit: float


@dataclass(frozen=True)
class DataSet:
    runs: dict[str, str]  # run kind -> the floor it is judged against, in the order they run
    targets: tuple[Target, ...]
    huge: bool = False  # only with --huge
    on_demand: bool = False  # only with --only


PREFECT = Target("Prefect overhead, % of the core", "prefect", "pct", "<=", 10)
RSS = Target("flow peak RSS MB, Prefect's server apart", "flow", "peak_rss_ours_mb", "<=", 500)
WHATSAPP_RUNS = dict.fromkeys(("flow", "core", "core_pool", "shard", "whatstk", "chatminer"), "lines")
SETS = {
    "whatsapp": DataSet(WHATSAPP_RUNS, (Target("flow time / the text floor's", "flow", "time_x_floor", "<=", 3),
                                        RSS, PREFECT)),
    "whatsapp_1gb": DataSet({"shard": "lines", "flow": "lines"}, (RSS,), huge=True),
    "chatgpt": DataSet(dict.fromkeys(("flow", "core", "core_pool"), "orjson"),
                       (Target("flow time / orjson's", "flow", "time_x_floor", "<=", 3), RSS, PREFECT)),
    "mixed": DataSet({**dict.fromkeys(("flow", "core", "core_pool"), "file_io"), "rerun": "file_hash"},
                     (Target("flow sessions/s", "flow", "sessions_s", ">=", 3000),
                      Target("flow time / I/O floor's", "flow", "time_x_floor", "<=", 3),
                      Target("unchanged rerun s, net of Prefect's start", "rerun", "seconds", "<=", 1), RSS,
                      PREFECT)),
    # The other line grammars, streamed through the line-table engine (asked for by name).
    "irc": DataSet(dict.fromkeys(("shard", "flow"), "lines"), (), on_demand=True),
    "transcript": DataSet(dict.fromkeys(("shard", "flow"), "lines"), (), on_demand=True),
}
OUTPUT_OF = {"rerun": "flow"}  # the rerun runs on the flow's output, so every input is unchanged
HUGE_OUTPUT_FACTOR = 8  # a document set is ~4x its input (6.6x before the compact layout): room for it all


# -- one measurement -------------------------------------------------------------------------------
ROLES = ("main", "server", "workers")
SERVER_MARKS = ("flows.embedded", "uvicorn", "prefect server")
"""How Prefect's server shows in a command line: the embedded one the flow launches (flows/serve.py), or one
started by hand."""


def _role(p: psutil.Process, top: psutil.Process, roles: dict[int, str]) -> str:
    """Which part of the tree a process is: the measured process itself, Prefect's server (the
    embedded one the flow launches or a ``prefect server start``), or the rest (pool workers, the forkserver).
    A server is known once seen; anything else is read again, since a child seen between its fork
    and its exec still shows its parent's command line."""
    if p.pid == top.pid:
        return "main"
    if p.pid not in roles:
        line = " ".join(p.cmdline())
        if any(mark in line for mark in SERVER_MARKS):
            roles[p.pid] = "server"
        else:
            return "workers"
    return roles[p.pid]


def _sample(ps: psutil.Process, cpu: dict[int, float], roles: dict[int, str]) -> dict[str, int]:
    """The RSS of the process tree by role (``ROLES``); each process's CPU seconds so far into ``cpu``
    (pid -> seconds)."""
    rss = dict.fromkeys(ROLES, 0)
    for p in (ps, *ps.children(recursive=True)):
        with contextlib.suppress(psutil.Error), p.oneshot():  # a process may end between listing and reading
            rss[_role(p, ps, roles)] += p.memory_info().rss
            times = p.cpu_times()
            cpu[p.pid] = times.user + times.system
    return rss


def _stop(ps: psutil.Process) -> None:
    """Kill the child we started and its descendants, by pid."""
    for p in (*ps.children(recursive=True), ps):
        with contextlib.suppress(psutil.Error):
            p.kill()


def child_command(kind: str, data: Path, out: Path) -> list[str]:
    """A peer runs in its own environment (bench/peers.py); everything else in the project's."""
    if kind in peers.PEERS:
        return [str(peers.python()), str(ROOT / "bench" / "peers.py"), kind, str(data)]
    return [sys.executable, "-m", "bench.run", "--child", kind, str(data), str(out)]


def measure(kind: str, data: Path, out: Path, max_rss_mb: float) -> dict:
    """Run one child, sampling the RSS of its whole process tree. Its output goes to files, not
    pipes: a chatty child (chat-miner warns per line) would otherwise block on a full pipe."""
    logs = out.parent / f"{kind}.log"
    with logs.with_suffix(".out").open("w+") as fo, logs.with_suffix(".err").open("w+") as fe:
        proc = subprocess.Popen(child_command(kind, data, out), cwd=ROOT, stdin=subprocess.DEVNULL,
                                stdout=fo, stderr=fe)
        ps, peak, ours, killed, cpu, roles = psutil.Process(proc.pid), 0, 0, False, {}, {}
        by_role = dict.fromkeys(ROLES, 0)  # each role's own peak (they need not peak together)
        while proc.poll() is None:
            with contextlib.suppress(psutil.Error):
                now = _sample(ps, cpu, roles)
                peak = max(peak, sum(now.values()))
                ours = max(ours, now["main"] + now["workers"])
                by_role = {k: max(v, now[k]) for k, v in by_role.items()}
            if peak > max_rss_mb * 2**20 and not killed:
                _stop(ps)
                killed = True
            time.sleep(0.02)
        fo.seek(0)
        fe.seek(0)
        stdout, stderr = fo.read(), fe.read()
    # CPU seconds of the whole tree (start-up and Prefect's server included, up to the last sample of
    # each process): on a loaded machine wall time grows with the load, CPU time much less
    machine = {"cpu_s": sum(cpu.values()), "load": os.getloadavg()[0], "peak_rss_mb": peak / 2**20,
               "peak_rss_ours_mb": ours / 2**20, "peak_rss_by_role_mb": {k: v / 2**20 for k, v in by_role.items()}}
    lines = stdout.strip().splitlines()
    if killed:
        return {"error": f"stopped: process tree above {max_rss_mb:.0f} MB", **machine}
    if proc.returncode != 0 or not lines:
        return {"error": ((stderr or stdout).strip().splitlines() or ["failed"])[-1], **machine}
    return {**json.loads(lines[-1]), **machine}


# -- figures ---------------------------------------------------------------------------------------
def derive(r: dict, mb: float, floor: dict | None) -> dict:
    """Add MB/s, sessions/s and the ratios to the floor to one measurement."""
    if "seconds" not in r:
        return r
    r["mb_s"] = mb / r["seconds"]
    if "counts" in r:
        c = r["counts"]
        r["sessions"] = c["sessions_ok"] + c["sessions_partial"]
        r["sessions_s"] = r["sessions"] / r["seconds"]
    if floor and "seconds" in floor:
        r["x_floor"] = floor["seconds"] / r["seconds"]  # speed as a share of the floor's
        r["time_x_floor"] = r["seconds"] / floor["seconds"]
    return r


def prefect_overhead(runs: dict) -> dict:
    """Prefect's cost beyond its server start: the flow against the same pool without Prefect, and
    against the faster of the two cores (the target: what running under the flow adds to the core)."""
    flow, pooled, core = (runs.get(k, {}) for k in ("flow", "core_pool", "core"))
    if any("seconds" not in r for r in (flow, pooled, core)):
        return {}
    best = min(pooled["seconds"], core["seconds"])
    return {"flow_minus_pool_s": flow["seconds"] - pooled["seconds"],
            "vs_pool_pct": 100 * (flow["seconds"] - pooled["seconds"]) / pooled["seconds"],
            "flow_minus_core_s": flow["seconds"] - best, "pct": 100 * (flow["seconds"] - best) / best,
            "server_start_s": flow.get("server_start")}


def judge(row: dict, targets: tuple[Target, ...]) -> list[dict]:
    out = []
    for t in targets:
        value = (row["prefect"] if t.run == "prefect" else row["runs"].get(t.run, {})).get(t.field)
        met = None if value is None else (value >= t.limit if t.op == ">=" else value <= t.limit)
        out.append({"label": t.label, "value": value, "op": t.op, "limit": t.limit, "met": met})
    return out


def best_of(kind: str, data: Path, outs: list[Path], mb: float, floor: dict | None, max_rss_mb: float) -> dict:
    """The fastest of len(outs) runs (each on its own output folder), with the highest peak RSS of them."""
    runs = [measure(kind, data, out, max_rss_mb) for out in outs]
    done = [r for r in runs if "seconds" in r] or runs
    best = min(done, key=lambda r: r.get("seconds", 0))
    peak = max(r.get("peak_rss_mb", 0) for r in runs)
    ours = max(r.get("peak_rss_ours_mb", 0) for r in runs)
    roles = {k: max(r.get("peak_rss_by_role_mb", {}).get(k, 0) for r in runs) for k in ROLES}
    return derive({**best, "peak_rss_mb": peak, "peak_rss_ours_mb": ours, "peak_rss_by_role_mb": roles,
                   "repeats": len(runs)}, mb, floor)


def bench_set(name: str, spec: DataSet, data: Path, args: argparse.Namespace) -> dict:
    """Every run of one data set, each right after its own floor (load on a shared machine changes
    by the minute: a ratio to a floor measured moments before is what stays comparable)."""
    mb = generate.size(data) / 1e6
    row: dict = {"mb": mb, "runs": {}}
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as work:
        def outs(kind: str) -> list[Path]:
            folders = [Path(work) / f"{OUTPUT_OF.get(kind, kind)}-{k}" for k in range(args.repeat)]
            for f in folders:
                f.mkdir(exist_ok=True)
            return [f / "out" for f in folders]

        for kind, floor in spec.runs.items():
            if kind in ("whatstk", "chatminer") and args.skip_peers:
                continue
            source = row["runs"].get(OUTPUT_OF.get(kind, kind), {})
            if kind in OUTPUT_OF and "seconds" not in source:
                row["runs"][kind] = {"error": f"{OUTPUT_OF[kind]} did not finish, so there is nothing to rerun"}
                continue
            print(f"  {name}: {kind} (after floor {floor}) ...", flush=True)
            floor_r = best_of(f"floor:{floor}", data, outs(f"floor-{kind}"), mb, None, args.max_rss_mb)
            r = best_of(kind, data, outs(kind), mb, floor_r, args.max_rss_mb)
            row["runs"][kind] = {**r, "floor": {"kind": floor, **floor_r}}
    row["prefect"] = prefect_overhead(row["runs"])
    row["targets"] = judge(row, spec.targets)
    return row


def baseline(args: argparse.Namespace) -> dict:
    """Prefect idle (its server started by an empty flow): a cost inside every flow's time and RSS."""
    print("  baseline: prefect_idle ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as work:
        return measure("prefect_idle", Path(work), Path(work) / "out", args.max_rss_mb)


# -- command line ----------------------------------------------------------------------------------
def check_space(data_dir: Path, scale: float) -> None:
    """The 1 GB set needs its file plus room for the outputs: say how much is free, refuse if too little."""
    rel, _, messages = generate.SETS["whatsapp_1gb"]
    size = messages * scale * 98  # ~98 bytes a message
    need = size * HUGE_OUTPUT_FACTOR + (0 if (data_dir / rel).exists() else size)
    data_dir.mkdir(parents=True, exist_ok=True)
    for where in dict.fromkeys((data_dir, Path(tempfile.gettempdir()))):
        free = shutil.disk_usage(where).free
        print(f"--huge: {free / 1e9:.1f} GB free at {where}, about {need / 1e9:.1f} GB needed "
              f"(the file and outputs up to {HUGE_OUTPUT_FACTOR}x its size)", flush=True)
        if free < need + 1e9:
            sys.exit(f"--huge: not enough free space at {where}; free some or leave out --huge")


def keep_other_sets(target: Path, results: dict) -> dict:
    """``results`` with the sets an earlier run at the same scale measured and this one did not
    (``--only``), each still naming the commit it was measured on."""
    try:
        earlier = json.loads(target.read_text())
    except (OSError, ValueError):
        return results
    if earlier.get("scale") != results["scale"]:
        return results
    kept = {name: figures | {"commit": figures.get("commit", earlier.get("commit"))}
            for name, figures in earlier.get("sets", {}).items() if name not in results["sets"]}
    return results | {"sets": kept | results["sets"]}


def save(results: dict, folder: Path, quick: bool) -> Path:
    """Write ``results`` with the sets this run did not measure kept (``keep_other_sets``) to the results
    file of its scale; a full-size run also rewrites RESULTS.md from every set, as ``bench.report`` does."""
    target = folder / ("results-quick.json" if quick else "results.json")
    merged = keep_other_sets(target, results)
    target.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
    if not quick:
        write_markdown(merged, folder / "RESULTS.md")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1/20 of the full size")
    parser.add_argument("--huge", action="store_true", help="also the 1 GB WhatsApp file (generated on demand)")
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data")
    parser.add_argument("--only", choices=list(SETS), action="append",
                        help="only this data set (repeatable; --only whatsapp_1gb implies --huge)")
    parser.add_argument("--skip-peers", action="store_true", help="do not run whatstk and chat-miner")
    parser.add_argument("--repeat", type=int, default=1, help="run each measurement N times, keep the fastest")
    parser.add_argument("--max-rss-mb", type=float, default=8000, help="stop a run whose process tree exceeds this")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "DATA", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        from bench.children import CHILDREN

        kind, data, out = args.child
        print(json.dumps(CHILDREN[kind](data, out)))
        return

    if not args.skip_peers:
        peers.ensure()
    scale = 0.05 if args.quick else 1.0
    data_dir = args.data / ("quick" if args.quick else "full")
    wanted = set(args.only or [n for n, s in SETS.items() if (args.huge or not s.huge) and not s.on_demand])
    names = tuple(n for n in SETS if n in wanted)
    if "whatsapp_1gb" in names:
        check_space(data_dir, scale)
    t0 = time.perf_counter()
    paths = generate.generate(data_dir, scale, names)
    print(f"data ready in {data_dir} ({time.perf_counter() - t0:.1f} s)", flush=True)
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True)
    results: dict = {"scale": scale, "cpus": os.cpu_count(), "python": sys.version.split()[0],
                     "commit": commit.stdout.strip() or None, "repeat": args.repeat, "max_rss_mb": args.max_rss_mb,
                     "baseline": {"prefect_idle": baseline(args)}, "sets": {}}
    for name in names:
        results["sets"][name] = bench_set(name, SETS[name], paths[name], args) | {"commit": results["commit"]}
    print_report(results)
    print(f"\nwritten: {save(results, ROOT / 'bench', args.quick)}")


if __name__ == "__main__":
    main()
