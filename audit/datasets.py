"""Audit datasets: sessions and turns of every document under OUT/sessions, as polars tables.

One row per session document and one per interaction, with provenance columns (source path,
source sha256, span, grammar, status, output path, the run that last wrote the document), in a
deterministic order (output path, then ordinal), written as Parquet after every run and
exportable as CSV or JSON Lines.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import polars as pl

if TYPE_CHECKING:
    from .ledger import Ledger

TABLES = ("sessions", "turns")
FORMATS = ("parquet", "csv", "jsonl")

SESSION_COLUMNS = {
    "output_path": pl.Utf8, "session_id": pl.Utf8, "created_at": pl.Utf8, "status": pl.Utf8,
    "coverage_reason": pl.Utf8, "source_path": pl.Utf8, "source_sha256": pl.Utf8, "source_lines": pl.Utf8,
    "source_pointer": pl.Utf8, "grammar": pl.Utf8, "grammar_version": pl.Utf8, "interactions": pl.Int64,
    "source_turns": pl.Int64, "redactions": pl.Int64, "redaction_types": pl.Utf8, "output_sha256": pl.Utf8,
    "run_id": pl.Utf8, "flag": pl.Utf8,
}
TURN_COLUMNS = {
    "output_path": pl.Utf8, "session_id": pl.Utf8, "ordinal": pl.Int64, "role": pl.Utf8, "kind": pl.Utf8,
    "speaker_name": pl.Utf8, "provider": pl.Utf8, "model_name": pl.Utf8, "model_version": pl.Utf8,
    "model_source": pl.Utf8, "speaker": pl.Utf8, "date": pl.Utf8, "content": pl.Utf8, "source_lines": pl.Utf8,
    "source_pointer": pl.Utf8, "source_path": pl.Utf8, "grammar": pl.Utf8,
}


def tables(out_root: Path, ledger: Ledger | None = None,
           problems: list[str] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(sessions, turns) for every session document currently under OUT/sessions.

    ``run_id`` is the latest run whose ledger row has these exact bytes at this path (None when
    no run wrote them, e.g. after a revert to bytes no run recorded, or without a ledger). A file
    that is not a session document (hand-edited, stray) is left out and named in ``problems``.
    """
    writers = ledger.writers() if ledger is not None else {}
    flags = ledger.flags() if ledger is not None else {}
    sessions, turns = [], []
    # string order of the relative path, as everywhere else (Path order differs: "telegram/" vs "telegram-html/")
    for path in sorted((p for p in (out_root / "sessions").rglob("*.json") if p.is_file()),
                       key=lambda p: p.relative_to(out_root).as_posix()):
        rel = str(path.relative_to(out_root))
        try:
            raw = path.read_bytes()
            rows = _rows(rel, raw, writers.get((rel, hashlib.sha256(raw).hexdigest())))
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            if problems is not None:
                problems.append(f"{rel}: not a session document, left out of the datasets "
                                f"({type(exc).__name__}: {exc}); see `reconstruct verify`")
            continue
        sessions.append(rows[0] | {"flag": flags.get(rel)})
        turns.extend(rows[1])
    return pl.DataFrame(sessions, schema=SESSION_COLUMNS), pl.DataFrame(turns, schema=TURN_COLUMNS)


def _rows(rel: str, raw: bytes, run_id: str | None) -> tuple[dict, list[dict]]:
    """The sessions row and the turns rows of one document's bytes (raises on anything else)."""
    doc = orjson.loads(raw)
    arts = doc["artifacts"]
    log, hist, perf = arts["ByggLogg"], arts["Chatthistorik"], arts["ai_protocol_performance"]
    src = log["source"]
    lines = orjson.dumps(src.get("lines")).decode() if src.get("lines") else None
    session = {
        "output_path": rel, "session_id": doc["sessionId"], "created_at": doc["createdAt"],
        "status": "partial" if hist.get("coverage") == "partial" else "ok",
        "coverage_reason": hist.get("coverageReason"), "source_path": src["path"],
        "source_sha256": src["sha256"], "source_lines": lines, "source_pointer": src.get("pointer"),
        "grammar": log["grammar"]["id"], "grammar_version": log["grammar"]["version"],
        "interactions": perf["interactionCount"], "source_turns": perf["sourceTurnCount"],
        "redactions": perf["redactions"]["total"],
        "redaction_types": orjson.dumps(perf["redactions"].get("byType") or {}, option=orjson.OPT_SORT_KEYS).decode(),
        "output_sha256": hashlib.sha256(raw).hexdigest(), "run_id": run_id,
    }
    turns = []
    for it in hist["interactions"]:
        span = it["source"]
        turns.append({
            "output_path": rel, "session_id": doc["sessionId"], "ordinal": it["ordinal"], "role": it["role"],
            "kind": it["kind"], "speaker_name": it["speakerName"], "provider": it["model"]["provider"],
            "model_name": it["model"]["name"], "model_version": it["model"]["version"],
            "model_source": it["modelSource"], "speaker": it["speaker"], "date": it.get("date"),
            "content": it["content"],
            "source_lines": orjson.dumps(span["lines"]).decode() if span.get("lines") else None,
            "source_pointer": span.get("pointer"), "source_path": src["path"], "grammar": log["grammar"]["id"],
        })
    return session, turns


def _write_frame(frame: pl.DataFrame, target: Path, fmt: str) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")  # readers never see a half-written table
    if fmt == "parquet":
        frame.write_parquet(tmp)
    elif fmt == "csv":
        frame.write_csv(tmp)
    elif fmt == "jsonl":
        frame.write_ndjson(tmp)
    else:
        raise ValueError(f"unknown format {fmt!r}: parquet, csv or jsonl")
    tmp.replace(target)
    return target


def write(out_root: Path, fmt: str = "parquet", folder: Path | None = None, *, ledger: Ledger | None = None,
          table: str | None = None, out_file: Path | None = None, problems: list[str] | None = None) -> list[Path]:
    """Write sessions.<ext> and turns.<ext> (parquet, csv or jsonl) under OUT/datasets (or
    ``folder``); with ``table`` only that one, to ``out_file`` when given."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: parquet, csv or jsonl")
    folder = folder or out_root / "datasets"
    written = []
    for name, frame in zip(TABLES, tables(out_root, ledger, problems), strict=True):
        if table is not None and name != table:
            continue
        target = out_file if (out_file is not None and table is not None) else folder / f"{name}.{fmt}"
        written.append(_write_frame(frame, target, fmt))
    return written
