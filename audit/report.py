"""The audit report: one self-contained HTML page (inline SVG, no scripts, no external assets).

Every figure is of the chosen run: from the ledger (sessions by status, coverage, the quarantined
inputs with their reasons and detail), and from the datasets of the documents the run wrote that are
still current (formats, turns per session, unknown models, redactions); the whole root's totals are
named beside them, and the marks of documents without their source stand for the whole root.
Every chart prints its numbers, and every number sits in a table cell marked
``data-figure``/``data-key`` so a test (or an auditor's script) can read them.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl

from models.errors import Reason, ReconstructError

from . import datasets
from .files import atomic_write
from .ledger import Ledger

PALETTE = ["#2b6cb0", "#38a169", "#d69e2e", "#c53030", "#805ad5", "#319795", "#dd6b20", "#718096"]
HIST_BINS = [(1, 1), (2, 2), (3, 5), (6, 10), (11, 20), (21, 50), (51, 100), (101, 1000), (1001, None)]


class ReportError(ReconstructError):
    """The report cannot be made (no such run, nothing ran)."""


def figures(out_root: Path, ledger: Ledger, run_id: str | None = None) -> dict[str, Any]:
    """Every number the report shows, as plain data."""
    run_id = run_id or ledger.runs.latest_id()
    run = ledger.runs.get(run_id) if run_id else None
    if run is None:
        raise ReportError(Reason.NOT_FOUND,
                          f"no run {run_id!r} in the ledger" if run_id else "the ledger has no run yet")
    counts = ledger.runs.counts(run_id)
    by_status = {s: 0 for s in ("ok", "partial", "quarantined", "failed")}
    for row in ledger.sessions.of_run(run_id):
        by_status[row.status] = by_status.get(row.status, 0) + 1
    quarantined = ledger.quarantine.of_run(run_id)
    reasons: dict[str, int] = {}
    for q in quarantined:
        for r in q.reasons:
            reasons[r] = reasons.get(r, 0) + 1
    left_out: list[str] = []  # stray or hand-edited files under OUT/sessions, as `verify` reports them
    everything, all_turns = datasets.tables(out_root, ledger, left_out)
    # the documents this run wrote that are still current: the figures of the run, not of the whole root
    sessions = everything.filter(pl.col("run_id") == run_id)
    turns = all_turns.join(sessions.select("output_path"), on="output_path", how="semi")
    formats = _counts(sessions["grammar"].to_list())
    hist = {_bin_label(lo, hi): 0 for lo, hi in HIST_BINS}
    hist["0"] = 0
    for n in sessions["interactions"].to_list():
        hist[_bin_of(n)] += 1
    hist = {"0": hist.pop("0"), **hist}
    ai = turns.filter(pl.col("role") == "assistant")
    unknown = ai.filter(pl.col("model_name") == "unknown").height
    redactions: dict[str, int] = {}
    for cell in sessions["redaction_types"].to_list():
        for kind, n in json.loads(cell or "{}").items():
            redactions[kind] = redactions.get(kind, 0) + n
    return {
        "run": {k: getattr(run, k) for k in ("run_id", "started_at", "finished_at", "status", "pipeline_version")},
        "run_counts": asdict(counts),
        "status": by_status,
        "coverage": {"ok": by_status["ok"], "partial": by_status["partial"]},
        "quarantine_reasons": dict(sorted(reasons.items())),
        "archive": {"documents": everything.height, "turns": all_turns.height, "left_out": len(left_out)},
        "written": {"documents": sessions.height, "turns": turns.height},
        "quarantined": [{"what": q.what, "source_key": q.source_key, "source_path": q.source_path,
                         "session_id": q.session_id, "reasons": ",".join(q.reasons), "detail": q.detail}
                        for q in quarantined],
        "formats": formats,
        "turns_histogram": hist,
        "models": {"assistant_turns": ai.height, "unknown": unknown,
                   "unknown_share": round(unknown / ai.height, 4) if ai.height else 0.0},
        "redactions": dict(sorted(redactions.items())),
        "flags": _counts([f for f in everything["flag"].to_list() if f]),  # marks stand for the root
        "accounting": {"sessions with unaccounted source": counts.sessions_unaccounted,
                       "unaccounted lines or records": counts.unaccounted_source},
        "drift": {d.item: d.count for d in ledger.sessions.drift(run_id)},
        "reconciliation": _reconciliation(ledger),
    }


def _reconciliation(ledger: Ledger) -> dict[str, int]:
    """Messages of the session keys by what each snapshot brought (#15): new ones summed over the
    snapshots are the documents' interactions, so each message counts once."""
    table = datasets.reconciliation(ledger)
    multi = table.group_by("session_key").len().filter(pl.col("len") > 1).height
    sums = {c: int(table[c].sum() or 0) for c in ("new", "unchanged", "edited")}
    latest_absent = int(table.group_by("session_key", maintain_order=True).last()["absent"].sum() or 0)
    return {"session keys": table["session_key"].n_unique(), "keys with several snapshots": multi,
            "snapshots": table.height, "expected": int(table["expected"].sum() or 0),
            "reconstructed": int(table["reconstructed"].sum() or 0), **sums, "absent": latest_absent}


def _counts(values: list[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items()))


def _bin_label(lo: int, hi: int | None) -> str:
    return f"{lo}+" if hi is None else (str(lo) if lo == hi else f"{lo}-{hi}")


def _bin_of(n: int) -> str:
    if n <= 0:
        return "0"
    for lo, hi in HIST_BINS:
        if n >= lo and (hi is None or n <= hi):
            return _bin_label(lo, hi)
    raise AssertionError(n)


# -- rendering ---------------------------------------------------------------------------------


def _bars(values: dict[str, int | float], *, color_by_key: bool = True) -> str:
    """Horizontal bars, label left, value printed right of each bar."""
    if not values:
        return '<p class="none">none</p>'
    row, bar_w = 26, 520
    label_w = max(200, 8 * max(len(str(k)) for k in values) + 16)  # 13px text: the longest label whole
    top = max(values.values()) or 1
    height = row * len(values) + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 90}" height="{height}" '
             f'role="img">']
    for i, (key, value) in enumerate(values.items()):
        y = 5 + i * row
        w = max(1, round(bar_w * value / top)) if value else 0
        color = PALETTE[i % len(PALETTE)] if color_by_key else PALETTE[0]
        parts.append(f'<text x="{label_w - 8}" y="{y + 17}" text-anchor="end" font-size="13">{escape(key)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{w}" height="{row - 8}" fill="{color}"/>')
        parts.append(f'<text x="{label_w + w + 6}" y="{y + 17}" font-size="13">{value}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _share(part: int, whole: int, label: str) -> str:
    """One stacked bar: the share ``part`` of ``whole``."""
    width = 600
    w = round(width * part / whole) if whole else 0
    pct = f"{100 * part / whole:.1f}%" if whole else "n/a"
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + 20}" height="60" role="img">'
            f'<rect x="10" y="10" width="{width}" height="24" fill="#cbd5e0"/>'
            f'<rect x="10" y="10" width="{w}" height="24" fill="#c53030"/>'
            f'<text x="10" y="52" font-size="13">{escape(label)}: {part} of {whole} ({pct})</text></svg>')


def _table(figure: str, values: dict[str, Any], head: tuple[str, str] = ("", "count")) -> str:
    rows = "".join(f'<tr><th scope="row">{escape(str(k))}</th><td data-figure="{figure}" data-key="{escape(str(k))}">'
                   f"{escape(str(v))}</td></tr>" for k, v in values.items())
    return (f'<table><thead><tr><th>{escape(head[0])}</th><th>{escape(head[1])}</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _section(title: str, note: str, chart: str, table: str) -> str:
    return (f"<section><h2>{escape(title)}</h2><p class=\"note\">{escape(note)}</p>"
            f'<div class="fig">{chart}{table}</div></section>')


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#1a202c;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:24px 0 4px;border-bottom:1px solid #e2e8f0}
.note{color:#4a5568;font-size:13px;margin:2px 0 8px}.none{color:#718096}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #e2e8f0;padding:3px 8px;text-align:left}
td{text-align:right;font-variant-numeric:tabular-nums}td.text{text-align:left}.fig{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
"""


def _left_out(archive: dict[str, int]) -> str:
    n = archive.get("left_out", 0)
    return f"; {n} files there are not session documents and are left out, see `reconstruct verify`" if n else ""


def _quarantined(rows: list[dict[str, Any]], run_id: str, browse: str | None) -> str:
    """The run's quarantined inputs by name, with their reason codes and detail (and a link into browse)."""
    if not rows:
        return '<section><h2>Quarantined inputs</h2><p class="none">none</p></section>'
    cells = []
    for q in rows:
        name = escape(q["source_path"] or q["source_key"])
        if browse is not None:
            name = f'<a href="{escape(browse)}/quarantine/{quote(run_id)}/{quote(q["source_key"])}">{name}</a>'
        cells.append(f'<tr><th scope="row" data-figure="quarantined" data-key="{escape(q["source_key"])}">{name}</th>'
                     f'<td class="text">{escape(q["what"])}</td><td class="text">{escape(q["session_id"] or "")}</td>'
                     f'<td class="text">{escape(q["reasons"] or "")}</td><td class="text">{escape(q["detail"] or "")}'
                     "</td></tr>")
    return ('<section><h2>Quarantined inputs</h2><p class="note">Each file or session the run refused, with its '
            "reason codes and detail (ledger); <code>reconstruct rerun --run " + escape(run_id) + "</code> "
            "reprocesses them.</p><table><thead><tr><th>input</th><th>what</th><th>session</th><th>reasons</th>"
            f"<th>detail</th></tr></thead><tbody>{''.join(cells)}</tbody></table></section>")


def _links(run_id: str, browse: str | None) -> str:
    if browse is None:
        return ""
    base = escape(browse)
    return (f'<p class="note">Browse: <a href="{base}/runs/{quote(run_id)}">this run</a> · '
            f'<a href="{base}/sessions?run={quote(run_id)}">the documents it wrote</a> · '
            f'<a href="{base}/sessions">every session</a></p>')


def render(fig: dict[str, Any], browse: str | None = None) -> str:
    """The report's HTML; ``browse``: the base URL of a running ``reconstruct browse`` to link into
    ("" for links relative to the page's own server)."""
    run, models = fig["run"], fig["models"]
    archive, written = fig["archive"], fig["written"]
    whole = (f"{written['documents']} documents this run wrote and that are still current, of "
             f"{archive['documents']} under OUT/sessions{_left_out(archive)}")
    sections = [
        _section("Sessions by status", f"Run {run['run_id']}: every session the run produced (ledger).",
                 _bars(fig["status"]), _table("status", fig["status"], ("status", "sessions"))),
        _section("Coverage", "Accepted sessions of the run: complete (ok) against partial.",
                 _bars(fig["coverage"]), _table("coverage", fig["coverage"], ("coverage", "sessions"))),
        _section("Quarantine reasons", "Quarantined files and sessions of the run, by reason code (ledger).",
                 _bars(fig["quarantine_reasons"]),
                 _table("quarantine", fig["quarantine_reasons"], ("reason", "count"))),
        _section("Formats", f"Documents of the run by grammar ({whole}).",
                 _bars(fig["formats"]), _table("formats", fig["formats"], ("grammar", "documents"))),
        _section("Turns per session", f"Interactions per document of the run ({written['turns']} in all), "
                 "histogram.",
                 _bars(fig["turns_histogram"], color_by_key=False),
                 _table("turns", fig["turns_histogram"], ("interactions", "documents"))),
        _section("Unknown models", "Assistant turns of the run's documents whose model name is unknown "
                 "(no evidence in the source).",
                 _share(models["unknown"], models["assistant_turns"], "unknown model"),
                 _table("models", {"assistant_turns": models["assistant_turns"], "unknown": models["unknown"],
                                   "unknown_share": models["unknown_share"]}, ("", "value"))),
        _section("Documents without their source", "Documents kept under OUT (the whole root) whose input is gone "
                 "(source_missing) or no longer holds the session (superseded); nothing is deleted.",
                 _bars(fig["flags"]), _table("flags", fig["flags"], ("mark", "documents"))),
        _section("Source accounting", "Sessions of the run with lines or records of their source in no "
                 "interaction and no declared region (partial, reason unaccounted_source; ledger).",
                 _bars(fig["accounting"]), _table("accounting", fig["accounting"], ("", "count"))),
        _section("Format drift", "Keys, content types and message types the grammars did not know, counted "
                 "with the first place each was met (ledger); their messages are kept as interactions.",
                 _bars(fig["drift"]), _table("drift", fig["drift"], ("item", "count"))),
        _section("Reconciliation", "Sessions by key (the same chat from several exports is one document): "
                 "each snapshot's messages expected (the source's own count), reconstructed, and new, unchanged, "
                 "edited against the snapshots before it; absent: kept but not in the latest (ledger).",
                 _bars({k: v for k, v in fig["reconciliation"].items() if k in ("new", "unchanged", "edited",
                                                                                "absent")}),
                 _table("reconciliation", fig["reconciliation"], ("", "count"))),
        _section("Redactions by type", "Secrets (and PII when enabled) found in the documents the run wrote.",
                 _bars(fig["redactions"]), _table("redactions", fig["redactions"], ("type", "findings"))),
    ]
    sections.insert(3, _quarantined(fig["quarantined"], run["run_id"], browse))
    meta = _table("run", {k: v if v is not None else "" for k, v in run.items()}, ("run", ""))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>reconstruct audit report {escape(run['run_id'])}</title><style>{CSS}</style></head><body>"
        f"<h1>reconstruct audit report</h1><p class=\"note\">Figures of run {escape(run['run_id'])}: from the "
        f"ledger, and from the datasets of the documents it wrote.</p>{_links(run['run_id'], browse)}{meta}"
        f"{''.join(sections)}</body></html>\n"
    )


def write_report(out_root: Path, ledger: Ledger, run_id: str | None = None, out_file: Path | None = None,
                 browse: str | None = None) -> Path:
    """Render the report of a run (default the latest) to ``out_file`` (default OUT/report.html),
    linking into ``reconstruct browse`` at ``browse`` when given."""
    target = out_file or out_root / "report.html"
    atomic_write(target.resolve(), render(figures(out_root, ledger, run_id), browse).encode("utf-8"))
    return target
