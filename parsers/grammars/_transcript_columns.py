"""Transcripts as columns: the header over every line, the acceptance rule once per distinct label.

The same sessions as ``transcript.py``'s line-engine parse (tests compare the two on every golden,
sample and conformance input and on generated transcripts): the header is the grammar's own,
translated by ``parsers.columns.rust_pattern`` without its one lookahead (a notice's text starts
with a non-space), which is tested on the rest of the line; which labels start turns (role words,
timestamped, or seen twice) is decided once per distinct label from its count; a header that does
not start a turn is a line of the turn above it (with the same warning), or a preamble region
before the first turn; names, roles, models (``Assistant (openai:gpt-4o)``, front matter
``model:``, in the optional ``model`` column) and times are read once per distinct value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from models.records import Region, RegionKind, ShapedLine
from parsers.columns import TURN_SCHEMA, LineHeaders, group_turns, iso_times, line_headers, per_distinct

_SHAPE = {"shape": pl.Utf8}
KEPT_AS_TEXT = "a 'Name:' label seen once in the session, no role word and no time: text of its turn"


@dataclass(slots=True)
class Labels:
    """What the acceptance rule needs of a session's headers, countable chunk by chunk."""

    counts: dict[str, int] = field(default_factory=dict)
    stamped: set[str] = field(default_factory=set)
    shapes: set[str] = field(default_factory=set)

    def add(self, h: pl.DataFrame) -> None:
        """The header rows of some lines (``header_rows``)."""
        labelled = h.filter(pl.col("label").is_not_null())
        for label, n, stamped in labelled.group_by("label").agg(
                pl.len(), pl.col("stamped").any()).iter_rows():
            self.counts[label] = self.counts.get(label, 0) + n
            if stamped:
                self.stamped.add(label)
        self.shapes |= set(labelled.filter(pl.col("stamped"))["shape"].unique().to_list())

    def accepted(self, role_word: Callable[[str], bool]) -> set[str]:
        """``transcript.accepted_labels``: role words, timestamped, or seen at least twice."""
        return {lb for lb, n in self.counts.items() if lb in self.stamped or n >= 2 or role_word(lb)}


def header_rows(lines: pl.Series, rust: str, plausible: Callable[[str], bool]
                ) -> tuple[LineHeaders, pl.DataFrame] | None:
    """The header lines and, for each, its plausible label (else null), whether the label carries a
    timestamp, its stamp and its stamp's shape (``transcript._shape``)."""
    heads = line_headers(lines, rust)
    if heads is None:
        return None
    g = heads.groups
    notice = pl.col("label").is_null()
    ok = g.with_columns(rest=heads.rest).select(
        pl.col("rest").is_not_null() & ~(notice & ~pl.col("rest").str.contains(r"^\S"))).to_series()
    heads = LineHeaders(g, ok, heads.rest)
    h = g.filter(ok)
    fits = per_distinct(h["label"], plausible, pl.Boolean).fill_null(False)
    bracketed = pl.coalesce(pl.col("ts"), pl.col("nts"))
    stamp = pl.coalesce(pl.col("ts"), pl.col("iso"), pl.col("nts"), pl.col("niso"))
    rows = h.with_columns(fits=fits).select(
        pl.when(pl.col("fits")).then(pl.col("label")).alias("label"),
        (pl.col("ts").is_not_null() | pl.col("iso").is_not_null()).alias("stamped"),
        stamp.alias("stamp"),
        pl.concat_str(pl.when(bracketed.is_not_null()).then(pl.lit("[")).otherwise(pl.lit("")),
                      stamp.fill_null("").str.replace_all(r"\d", "9")).alias("shape"),
        pl.when(bracketed.is_not_null()).then(bracketed.str.len_chars() + 2)
        .otherwise(stamp.str.len_chars()).fill_null(0).alias("stamp_len"),
    )
    return heads, rows


def starts(rows: pl.DataFrame, accepted: set[str], shapes: set[str], first_start: bool) -> pl.Series:
    """Which header rows start a turn: an accepted label, a notice in a header's stamp shape, and
    (``first_start``: no turn yet) the first labelled header."""
    label = pl.col("label")
    cond = label.is_in(sorted(accepted)) | (label.is_null() & pl.col("shape").is_in(sorted(shapes)))
    out = rows.select(cond.fill_null(False)).to_series()
    if first_start:
        first = rows.select((cond | label.is_not_null()).fill_null(False)).to_series().arg_true()
        if len(first):
            out = out.scatter([int(first[0])], [True])
    return out


@dataclass(slots=True)
class Chunk:
    frame: pl.DataFrame
    bad: int = 0
    clock_only: int = 0
    warnings: list[str] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    extras: list = field(default_factory=list)
    turns: int = 0
    shaped: list[ShapedLine] = field(default_factory=list)


@dataclass(slots=True)
class Reading:
    """How a session's turns are read: the label and stamp readers of ``transcript.py``."""

    accepted: set[str]
    shapes: set[str]
    speaker: Callable[[str], tuple[str, str, str, str | None]]
    """label -> (speaker, role, kind, the model it names as ``parsers.columns.MODEL`` or None)"""
    when: Callable[[str], datetime | None]
    clock_only: Callable[[str], bool]
    fast_times: bool
    """ISO stamps may be read as a column (no front-matter zone or day to apply)."""


def turn_frame(lines: pl.Series, heads: LineHeaders, rows: pl.DataFrame, reading: Reading, first_line: int,
               turns_before: int) -> Chunk:
    """The turn frame of a session's lines (or a chunk of them, ``turns_before`` turns in)."""
    start = starts(rows, reading.accepted, reading.shapes, turns_before == 0)
    is_start = pl.Series([False] * len(lines), dtype=pl.Boolean).scatter(heads.ok.arg_true(), start)
    s = rows.filter(start)
    named = s.filter(pl.col("label").is_not_null())["label"].unique().to_list()
    read = {lb: reading.speaker(lb) for lb in named}
    pieces = _pieces(lines, heads, rows, start, is_start)
    turns = group_turns(pieces, is_start, first_line)
    chunk = Chunk(pl.DataFrame(schema=TURN_SCHEMA), turns=turns.height)
    _before_first(chunk, lines, heads, is_start, first_line, turns_before)
    _kept_as_text(chunk, heads, rows, start, is_start, first_line, turns_before)
    label = s["label"]
    fields = {k: label.replace_strict(named, [read[n][i] for n in named], default=None, return_dtype=pl.Utf8)
              for i, k in enumerate(("speaker", "role", "kind", "model"))}
    raw = s["stamp"]
    time, offset = iso_times(raw, reading.when, fast=reading.fast_times)
    chunk.clock_only = int(per_distinct(raw, reading.clock_only, pl.Boolean).fill_null(False).sum())
    # "Name:" alone on its line: the text starts on the next one, when that is not a header (a header
    # that starts no turn is appended to the turn after the line end, as the line engine does).
    plain_next = (~heads.ok).shift(-1, fill_value=False).gather(turns["at"])
    content = turns["body"].str.strip_chars_start(" \t")
    content = pl.select(pl.when(content.str.starts_with("\n") & plain_next).then(content.str.slice(1))
                        .otherwise(content)).to_series()
    frame = pl.DataFrame({
        "speaker": fields["speaker"].fill_null("System"), "role": fields["role"].fill_null("system"),
        "kind": fields["kind"].fill_null("notice"), "content": content, "time": time, "time_raw": raw,
        "line_start": turns["line_start"], "line_end": turns["line_end"],
        "extra": pl.Series([None] * turns.height, dtype=pl.Utf8), "offset": offset, "model": fields["model"],
    })
    chunk.frame = frame
    return chunk


def _pieces(lines: pl.Series, heads: LineHeaders, rows: pl.DataFrame, start: pl.Series, is_start: pl.Series
            ) -> pl.Series:
    """A turn's start line gives its rest (a notice: the line after its stamp); any other line, a
    header that starts nothing included, gives itself."""
    n = len(lines)
    at = heads.ok.arg_true()
    stamp_len = pl.Series([0] * n, dtype=pl.Int64).scatter(at, rows["stamp_len"])
    notice = pl.Series([False] * n, dtype=pl.Boolean).scatter(at, rows["label"].is_null())
    return pl.select(pl.when(is_start & notice).then(lines.str.slice(stamp_len))
                     .when(is_start).then(heads.rest).otherwise(lines)).to_series()


def _before_first(chunk: Chunk, lines: pl.Series, heads: LineHeaders, is_start: pl.Series, first_line: int,
                  turns_before: int) -> None:
    """Before the first turn: each block (the text before any header, and each header that starts
    nothing with its lines) is a preamble region with its text, when it is not blank or is a header."""
    if turns_before:
        return
    first = is_start.arg_true()
    stop = int(first[0]) if len(first) else len(lines)
    if not stop:
        return
    head = lines.head(stop)
    block = heads.ok.head(stop).cast(pl.Int64).cum_sum()
    frame = pl.DataFrame({"line": head, "block": block, "head": heads.ok.head(stop)}).with_row_index("at")
    for _, at, last, text, is_head in (frame.group_by("block", maintain_order=True)
                                       .agg(pl.col("at").first(), pl.col("at").last().alias("last"),
                                            pl.col("line").str.join("\n"), pl.col("head").first()).iter_rows()):
        if text.strip() or is_head:
            chunk.regions.append(Region(RegionKind.PREAMBLE, "text before the first turn",
                                        lines=(first_line + at, first_line + last), content=text.strip("\n")))


def _kept_as_text(chunk: Chunk, heads: LineHeaders, rows: pl.DataFrame, start: pl.Series, is_start: pl.Series,
                  first_line: int, turns_before: int) -> None:
    """The warning for each labelled header that starts no turn after the first one."""
    turn_no = is_start.cast(pl.Int64).cum_sum() + turns_before
    at = heads.ok.arg_true()
    kept = rows.with_columns(at=at, start=start).filter(~pl.col("start") & pl.col("label").is_not_null())
    for i, label in zip(kept["at"].to_list(), kept["label"].to_list(), strict=True):
        if turn_no[i] == 0:
            continue
        chunk.warnings.append(f"line {first_line + i}: {label!r}: looks like a header but the name appears once; "
                              f"kept as text of turn {turn_no[i]}")
        chunk.shaped.append(ShapedLine(first_line + i, KEPT_AS_TEXT))


