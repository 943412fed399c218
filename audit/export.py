"""Single-file copies of the current tables (``reconstruct export``): Parquet, CSV or JSON Lines.

Every table is copied from the current tables as they are (``audit.publication.tables``: the published
files, or the tables built from the ledger when those are stale), in one deterministic order
(``audit.current.ORDER`` for the bucketed ones), with the same columns and types:
Parquet keeps them as they are (timestamps in UTC, enums, lists); the text formats write a
timestamp as ISO 8601 UTC (``2024-03-05T10:00:00Z``) and, in CSV, a list as its JSON text. The dataset
parts are compacted into one on the way (``audit.datasets.compact_parts``), when OUT can be written.
"""

from __future__ import annotations

import contextlib
from enum import StrEnum
from pathlib import Path

import orjson
import polars as pl

from . import current, datasets, publication
from .ledger import Ledger


class Format(StrEnum):
    """A file format of the export."""

    PARQUET = "parquet"
    CSV = "csv"
    JSONL = "jsonl"


def write(out_root: Path, ledger: Ledger, fmt: Format, folder: Path, *, table: current.Table | None = None,
          out_file: Path | None = None, problems: list[str] | None = None) -> list[Path]:
    """Write every current table as ``<folder>/<table>.<fmt>`` (only ``table`` with one given, to
    ``out_file`` when given); the files written."""
    frames = publication.tables(out_root, ledger, problems)
    with contextlib.suppress(OSError):  # a read-only output: the export is still written where asked
        datasets.compact_parts(out_root, ledger)
    written = []
    for name in [table] if table is not None else current.TABLES:
        target = out_file if (out_file is not None and table is not None) else folder / f"{name}.{fmt}"
        frame = frames[name].sort(current.ORDER[name]) if name in current.ORDER else frames[name]
        written.append(_write(frame, target, fmt))
    return written


def _write(frame: pl.LazyFrame, target: Path, fmt: Format) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")  # readers never see a half-written table
    if fmt == Format.PARQUET:
        frame.sink_parquet(tmp)
    elif fmt == Format.JSONL:
        frame.with_columns(_iso()).sink_ndjson(tmp)
    else:
        _text(frame.with_columns(_iso()).collect()).write_csv(tmp)
    tmp.replace(target)
    return target


def _iso() -> pl.Expr:
    return pl.col(pl.Datetime).dt.convert_time_zone("UTC").dt.strftime(current.ISO_Z)


def _text(frame: pl.DataFrame) -> pl.DataFrame:
    """Lists as their JSON text (CSV has no lists)."""
    lists = [name for name, dtype in frame.schema.items() if isinstance(dtype, pl.List)]
    return frame.with_columns(pl.col(name).map_elements(lambda v: orjson.dumps(v.to_list()).decode(),
                                                        return_dtype=pl.Utf8) for name in lists)
