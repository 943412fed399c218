"""The benchmark's printed report: per data set its floors, its runs beside them, Prefect's overhead, the targets."""

from __future__ import annotations

import json
from pathlib import Path


def _opt(value, spec: str, suffix: str = "") -> str:
    """``format(value, spec) + suffix``, or a dash as wide when there is no value."""
    width = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 1) + len(suffix)
    return format("-", f">{width}") if value is None else format(value, spec) + suffix


def run_line(kind: str, r: dict) -> str:
    if "error" in r:
        rss = f" (RSS {r['peak_rss_mb']:.0f} MB)" if "peak_rss_mb" in r else ""
        return f"  {kind:<10} not run: {r['error']}{rss}"
    floor = r.get("floor", {})
    line = f"  {kind:<10} {r['seconds']:>8.2f} s {r['mb_s']:>8.2f} MB/s"
    line += (f" = {r['x_floor']:>6.3f}x floor ({floor['mb_s']:.1f} MB/s)" if "x_floor" in r
             else f" = (floor failed: {floor.get('error')})")
    c = r.get("counts")
    if c:
        line += f" {_opt(r.get('sessions_s'), '>8.1f', ' sess/s')} {r['sessions']:>6} sessions"
        line += f" {c['interactions']:>8} turns"
        if c["files_skipped"]:
            line += f" ({c['files_skipped']} of {c['files']} files skipped)"
    elif "messages" in r:
        line += f" {'':>15} {'':>15} {r['messages']:>8} msgs"
    return line + f"  RSS {r['peak_rss_mb']:.0f} MB{roles(r)}  cpu {r['cpu_s']:.1f} s  load {r['load']:.1f}"


def roles(r: dict) -> str:
    """Each part of the tree's own peak, when Prefect's server was in it (its share of the RSS)."""
    by = r.get("peak_rss_by_role_mb") or {}
    if not by.get("server"):
        return ""
    ours = f"{r['peak_rss_ours_mb']:.0f} without it; " if "peak_rss_ours_mb" in r else ""
    return f" ({ours}server {by['server']:.0f}, flow process {by['main']:.0f}, workers {by['workers']:.0f})"


def floor_lines(runs: dict) -> list[str]:
    """Each floor once: the range of its speed over the measurements (one before each run), its RSS."""
    by_kind: dict[str, list[dict]] = {}
    for r in runs.values():
        if "mb_s" in r.get("floor", {}):
            by_kind.setdefault(r["floor"]["kind"], []).append(r["floor"])
    out = []
    for kind, fs in by_kind.items():
        speeds = sorted(f["mb_s"] for f in fs)
        did = "".join(f", {fs[0][k]} {k}" for k in ("lines", "items", "files") if k in fs[0])
        out.append(f"  floor {kind}: {speeds[0]:.1f}-{speeds[-1]:.1f} MB/s over {len(fs)} measurements{did}, "
                   f"RSS {max(f['peak_rss_mb'] for f in fs):.0f} MB")
    return out


def target_line(t: dict) -> str:
    verdict = {True: "MET", False: "MISSED", None: "not measured"}[t["met"]]
    return f"  target  {t['label']:<34} {_opt(t['value'], '>10.2f')}  {t['op']} {t['limit']:<6g} {verdict}"


def report_lines(results: dict) -> list[str]:
    """The report, a line each: the same lines are printed and written to bench/RESULTS.md."""
    out: list[str] = []
    out.append(f"\nscale {results['scale']}, {results['cpus']} CPUs, Python {results['python']}, "
          f"commit {results['commit']}")
    if results["scale"] != 1.0:
        out.append("(the targets are for scale 1.0; at this scale they are shown for orientation only)")
    idle = results["baseline"]["prefect_idle"]
    if "error" in idle:
        out.append(f"Prefect idle: not run: {idle['error']}")
    else:
        out.append(f"Prefect idle (server started, nothing to do): start {idle['seconds']:.1f} s, "
              f"RSS {idle['peak_rss_mb']:.0f} MB{roles(idle)}: inside every flow's RSS below")
    for name, row in results["sets"].items():
        measured = row.get("commit")
        at = f", measured at commit {measured}" if measured and measured != results["commit"] else ""
        out.append(f"\n{name} ({row['mb']:.1f} MB{at})")
        out.extend(floor_lines(row["runs"]))
        for kind, r in row["runs"].items():
            out.append(run_line(kind, r))
        o = row["prefect"]
        if o:
            out.append(f"  Prefect: flow - faster core = {o['flow_minus_core_s']:+.2f} s = {o['pct']:+.1f}%; "
                  f"flow - core_pool = {o['flow_minus_pool_s']:+.2f} s = {o['vs_pool_pct']:+.1f}%; "
                  f"server start {_opt(o['server_start_s'], '.1f')} s (apart, not in the flow's time)")
        for t in row["targets"]:
            out.append(target_line(t))
    return out


def print_report(results: dict) -> None:
    print("\n".join(report_lines(results)))


def write_markdown(results: dict, target: Path) -> None:
    """bench/RESULTS.md: the latest figures only (their history is in git), as the bench printed them."""
    text = "\n".join(report_lines(results)).strip("\n")
    target.write_text("# Benchmark results\n\nWritten by `python -m bench.run` (or `python -m bench.report` from "
                      "`bench/results.json`); every figure beside its floor from the same run. How to run it and "
                      "what each set is: `bench/README.md`.\n\n```text\n" + text + "\n```\n")


def main() -> None:
    root = Path(__file__).resolve().parent
    write_markdown(json.loads((root / "results.json").read_text()), root / "RESULTS.md")


if __name__ == "__main__":
    main()
