"""Interactions of a streamed session, chunk by chunk: normalisation once per distinct value, lines in polars.

A session read whole is assembled with its batch (normalizers/table.py); a large text input streamed
in chunks (flows/core/spool.py, flows/core/ranges.py) is assembled here, one turn frame
(``parsers.columns.TURN_SCHEMA``) per chunk, with what spans chunks carried along. Same document as a
whole read (tests compare the bytes):

- ``normalize_speaker`` runs once per distinct speaker, its fields pre-encoded and joined back;
- times are converted to UTC and formatted as a column (a time that does not exist in the source
  zone, in a DST gap, goes through ``to_utc_z`` as in the dict path);
- secrets: a vectorised search for the redactor's trigger words over the content column, and the
  redactor on the rows it flags only; the session record's facts likewise (``Facts.observe`` on
  the rows that mention a fence, a diff, a patch or a heuristic, or carry extra fields);
- each interaction line is built by string concatenation of JSON-escaped columns (polars escapes
  strings exactly as orjson does: tests/normalizers/test_columns.py), so the bytes are those of
  ``encode.encode_interaction`` of the dict the other path would build.

``ColumnAssembler.add`` takes the frames of one session in order (one for a session read whole,
one per chunk for a spooled one) and keeps what spans chunks (the speaker table, the summary), so
a session's bytes do not depend on how it was cut.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import polars as pl

from .times import MAX_YEAR, MIN_YEAR, to_utc_z

# Substrings without which Facts.observe finds nothing in a turn with no extra fields.
_FACT_WORDS = ("```", "diff --git", "diff_json_v1", "H-", "<<<<<<< SEARCH")
_ISO = "%Y-%m-%dT%H:%M:%SZ"


def json_string(column: pl.Expr) -> pl.Expr:
    """A string column as JSON string literals (orjson's escaping; null stays null)."""
    encoded = pl.struct(column.alias("v")).struct.json_encode().str.strip_prefix('{"v":').str.strip_suffix("}")
    return pl.when(column.is_not_null()).then(encoded)


def _optional(key: str, value: pl.Expr) -> pl.Expr:
    """``,"key":value`` where the value is not null, else nothing."""
    return pl.when(value.is_not_null()).then(pl.concat_str(pl.lit(f',"{key}":'), value)).otherwise(pl.lit(""))


def utc_dates(time: pl.Series, offset: pl.Series | None, time_raw: pl.Series, zone
              ) -> tuple[pl.Series, pl.Series, pl.Series]:
    """(UTC ``YYYY-MM-DDTHH:mm:ssZ`` of each time, null when there is none or it is unreadable; which
    times are naive; which are unreadable) as ``assemble._interactions`` reads each turn's time: a
    naive wall time is in ``zone``, one with an ``offset`` (seconds) is at that offset."""
    if zone.key == "UTC":
        utc = time.dt.replace_time_zone("UTC")
    else:
        utc = (time.dt.replace_time_zone(zone.key, ambiguous="earliest", non_existent="null")
               .dt.convert_time_zone("UTC"))
    naive = time.is_not_null()
    if offset is not None:  # times the source gives with a zone: wall time minus its offset
        aware = offset.is_not_null()
        fixed = pl.select(time - pl.duration(seconds=offset.fill_null(0))).to_series()
        fixed = fixed.dt.replace_time_zone("UTC")
        utc = pl.select(pl.when(aware).then(fixed).otherwise(utc)).to_series()
        naive = naive & ~aware
    year = utc.dt.year()
    date = pl.select(pl.when((year >= MIN_YEAR) & (year <= MAX_YEAR)).then(utc.dt.strftime(_ISO))).to_series()
    gaps = (naive & utc.is_null()).arg_true()
    if len(gaps):  # in a DST gap: Python's reading (the offset before the change)
        values = [to_utc_z(t.replace(tzinfo=zone), UTC) for t in time.gather(gaps).to_list()]
        date = date.scatter(gaps, pl.Series(values, dtype=pl.Utf8))
    unreadable = (time.is_not_null() & date.is_null()) | (time.is_null() & (time_raw.str.len_bytes() > 0))
    return date, naive, unreadable.fill_null(False)


@dataclass(slots=True)
class TurnRows:
    """A session's interaction rows as columns, kept from assembly so the audit datasets need not
    read the document back. ``frame()`` has the turns table's columns that come from the document
    (flows/datasets.py adds output path, session id and provenance)."""

    columns: pl.DataFrame | pl.LazyFrame  # lazy: a streamed session's row pieces, scanned
    speakers: dict[str, dict[str, Any]]

    def frame(self) -> pl.DataFrame | pl.LazyFrame:
        keys = list(self.speakers)

        def field(get) -> pl.Expr:
            return pl.col("speaker_key").replace_strict(keys, [get(self.speakers[k]) for k in keys],
                                                        return_dtype=pl.Utf8)

        c = pl.col
        return self.columns.select(
            c("ordinal"), c("role"), c("kind"), field(lambda e: e["speakerName"]).alias("speaker_name"),
            field(lambda e: e["model"]["provider"]).alias("provider"),
            field(lambda e: e["model"]["name"]).alias("model_name"),
            field(lambda e: e["model"]["version"]).alias("model_version"),
            field(lambda e: e["modelSource"]).alias("model_source"), field(lambda e: e["speaker"]).alias("speaker"),
            c("date"), c("content"),
            pl.concat_str(pl.lit("["), c("line_start").cast(pl.Utf8), pl.lit(","), c("line_end").cast(pl.Utf8),
                          pl.lit("]")).alias("source_lines"),
        )

def _speaker_keys(frame: pl.DataFrame) -> pl.Series:
    """Each turn's key in the speaker table: its speaker, and its model (the optional ``model``
    column, ``parsers.columns.MODEL``) when it names one."""
    if "model" not in frame.columns:
        return frame["speaker"]
    return frame.select(pl.when(pl.col("model").is_null()).then(pl.col("speaker"))
                        .otherwise(pl.concat_str(pl.col("speaker"), pl.lit("\x1f"), pl.col("model")))).to_series()


def _line(source: list[pl.Expr] | None = None) -> pl.Expr:
    """One interaction's JSON line, keys in the dict path's order; ``source``: the pieces of its
    ``"source"`` value (default: its line span)."""
    c = pl.col
    if source is None:
        source = [pl.lit('{"lines":['), c("line_start").cast(pl.Utf8), pl.lit(","), c("line_end").cast(pl.Utf8),
                  pl.lit("]}")]
    return pl.concat_str(
        pl.lit('{"ordinal":'), c("ordinal").cast(pl.Utf8), pl.lit(',"role":'), json_string(c("role")),
        pl.lit(',"kind":'), json_string(c("kind")), c("spk"),
        _optional("date", pl.concat_str(pl.lit('"'), c("date"), pl.lit('"'))),
        _optional("dateRaw", json_string(c("time_raw"))),
        pl.lit(',"content":'), json_string(c("content")), pl.lit(',"source":'), *source,
        c("raw"), _optional("sourceFields", c("extra")), pl.lit("}"),
    )


def lines_bytes(interactions: pl.DataFrame, first: bool) -> bytes:
    """The encoded lines of these interactions as they follow the head (``encode.join_lines``).
    Written by polars straight to bytes (a CSV of one unquoted column is the lines themselves): no
    Python string of the whole body is ever made."""
    if not interactions.height:
        return b""
    buffer = io.BytesIO()
    last = pl.int_range(pl.len()) == pl.len() - 1
    interactions.select(pl.when(last).then(pl.col("line")).otherwise(pl.col("line") + ",")).write_csv(
        buffer, include_header=False, quote_style="never")
    body = buffer.getbuffer()
    return (b"\n" if first else b",\n") + bytes(body[:-1])  # the CSV's final line end is not the document's
