"""Transcripts as columns: the header over every line, the acceptance rule once per distinct label.

The same sessions as ``transcript.py``'s line-engine parse (tests compare the two on every golden,
sample and conformance input and on generated transcripts): the header is the grammar's own,
translated by ``parsers.columns.rust_pattern`` without its one lookahead (a notice's text starts
with a non-space), which is tested on the rest of the line; which labels start turns (role words,
timestamped, or seen twice) is decided once per distinct label from its count; a header that does
not start a turn is a line of the turn above it (with the same warning), or a preamble region
before the first turn; names, roles, models (``Assistant (openai:gpt-4o)``, front matter
``model:``, in the optional ``model`` column) and times are read once per distinct value.

A table of lines holds many texts (a batch's segments, or one streamed chunk): each step is one polars
call for all of them; what a text decides for itself (its accepted labels and stamp shapes, its front
matter's day, zone and model: ``Texts``) is joined to its rows by the text's number, and values are
read once per distinct value and front-matter context.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from models.records import Region, RegionKind, ShapedLine
from parsers.columns import (
    TURN_SCHEMA,
    LineHeaders,
    LineTable,
    group_turns,
    iso_times,
    line_headers,
    per_distinct,
)

_SHAPE = {"shape": pl.Utf8}
_SEP = "\x1f"  # between a text's number (or context) and a value, in keys
KEPT_AS_TEXT = "a 'Name:' label seen once in the session, no role word and no time: text of its turn"


@dataclass(slots=True)
class Labels:
    """What the acceptance rule needs of a session's headers, countable chunk by chunk."""

    counts: dict[str, int] = field(default_factory=dict)
    stamped: set[str] = field(default_factory=set)
    shapes: set[str] = field(default_factory=set)

    def add(self, more: Labels) -> None:
        """The labels of the lines that follow (in place)."""
        for label, n in more.counts.items():
            self.counts[label] = self.counts.get(label, 0) + n
        self.stamped |= more.stamped
        self.shapes |= more.shapes

    def accepted(self, role_word: Callable[[str], bool]) -> set[str]:
        """``transcript.accepted_labels``: role words, timestamped, or seen at least twice."""
        return {lb for lb, n in self.counts.items() if lb in self.stamped or n >= 2 or role_word(lb)}


def labels_by_text(rows: pl.DataFrame, texts: int) -> list[Labels]:
    """The ``Labels`` of each of ``texts`` texts from their header rows (``header_rows`` with ``src``,
    each row's text), counted by one grouping for all."""
    out = [Labels() for _ in range(texts)]
    labelled = rows.filter(pl.col("label").is_not_null())
    for src, label, n, stamped in labelled.group_by("src", "label").agg(
            pl.len(), pl.col("stamped").any()).iter_rows():
        out[src].counts[label] = n
        if stamped:
            out[src].stamped.add(label)
    for src, shape in labelled.filter(pl.col("stamped")).select("src", "shape").unique().iter_rows():
        out[src].shapes.add(shape)
    return out


def header_rows(lines: pl.Series, rust: str, plausible: Callable[[str], bool]
                ) -> tuple[LineHeaders, pl.DataFrame]:
    """The header lines and, for each, its plausible label (else null), whether the label carries a
    timestamp, its stamp and its stamp's shape (``transcript._shape``)."""
    heads = line_headers(lines, rust)
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


def starts(rows: pl.DataFrame, readings: list[Reading], first_start: list[bool]) -> pl.Series:
    """Which header rows (with ``src``, each row's text) start a turn: a label its text's reading
    accepts, a notice in a stamp shape of its text's headers, and (``first_start[i]``: text ``i`` has
    no turn yet) the first labelled header of each text."""
    label, tag = pl.col("label"), pl.col("src").cast(pl.Utf8) + pl.lit(_SEP)
    ok = [f"{i}{_SEP}{lb}" for i, r in enumerate(readings) for lb in sorted(r.accepted)]
    shaped = [f"{i}{_SEP}{sh}" for i, r in enumerate(readings) for sh in sorted(r.shapes)]
    cond = ((tag + label).is_in(ok) | (label.is_null() & (tag + pl.col("shape")).is_in(shaped))).fill_null(False)
    lead = (cond | label.is_not_null()).fill_null(False)
    first = lead & (lead.cast(pl.Int32).cum_sum().over("src") == 1) & pl.lit(pl.Series(first_start)).gather(
        pl.col("src"))
    return rows.select(cond | first).to_series()


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
    context: Hashable = None
    """What the readers depend on (front matter's zone, day, model): readings with the same context
    read a label or a stamp alike, so a table reads each value once per context."""


@dataclass(slots=True)
class Texts:
    """What each text of a line table decided for itself: its reading, its first line's number, and
    the turns before it (a streamed chunk's; a text with none declares what precedes its first turn)."""

    readings: list[Reading]
    first_lines: list[int]
    turns_before: list[int]

    def contexts(self) -> tuple[list[int], list[Reading]]:
        """Each text's context as a number, and a reading of each context."""
        ids: dict[Hashable, int] = {}
        of_text = [ids.setdefault(r.context, len(ids)) for r in self.readings]
        first = {}
        for r, c in zip(self.readings, of_text, strict=True):
            first.setdefault(c, r)
        return of_text, [first[c] for c in range(len(ids))]


def turn_frame(lines: pl.Series, heads: LineHeaders, rows: pl.DataFrame, reading: Reading, first_line: int,
               turns_before: int) -> Chunk:
    """The turn frame of a session's lines (or a chunk of them, ``turns_before`` turns in): ``turn_frames``
    of a table of one text."""
    return turn_frames(LineTable.of_lines(lines), heads, rows.with_columns(src=pl.lit(0, pl.UInt32)),
                       Texts([reading], [first_line], [turns_before]))[0]


def turn_frames(table: LineTable, heads: LineHeaders, rows: pl.DataFrame, texts: Texts) -> list[Chunk]:
    """The turn frame of each text of a line table (``rows``: ``header_rows`` with ``src``), each
    text's headers accepted, named and timed as its own reading says."""
    start = starts(rows, texts.readings, [n == 0 for n in texts.turns_before])
    is_start = pl.repeat(False, len(table.lines), dtype=pl.Boolean, eager=True).scatter(heads.ok.arg_true(), start)
    s = rows.filter(start)
    turns = group_turns(_pieces(table.lines, heads, rows, is_start), is_start, 1, table)
    cuts = table.split(turns["at"])
    empty = pl.DataFrame(schema=TURN_SCHEMA)
    chunks = [Chunk(empty, turns=cuts[i + 1] - cuts[i]) for i in range(len(table))]
    _before_first(chunks, table, heads, is_start, texts)
    _kept_as_text(chunks, table, heads, rows, start, is_start, texts)
    of_text, readings = texts.contexts()
    ctx = pl.Series(of_text, dtype=pl.UInt32).gather(s["src"]) if len(readings) > 1 else None
    fields = _speakers(s, ctx, readings)
    time, offset, clock = _times(s["stamp"], ctx, readings)
    # "Name:" alone on its line: the text starts on the next one, when that is not a header (a header
    # that starts no turn is appended to the turn after the line end, as the line engine does).
    plain_next = (~heads.ok).shift(-1, fill_value=False).gather(turns["at"])
    content = turns["body"].str.strip_chars_start(" \t")
    content = pl.select(pl.when(content.str.starts_with("\n") & plain_next).then(content.str.slice(1))
                        .otherwise(content)).to_series()
    base = _line_base(table, turns, texts)
    frame = pl.DataFrame({
        "speaker": fields["speaker"].fill_null("System"), "role": fields["role"].fill_null("system"),
        "kind": fields["kind"].fill_null("notice"), "content": content, "time": time, "time_raw": s["stamp"],
        "line_start": turns["line_start"] + base, "line_end": turns["line_end"] + base,
        "extra": pl.repeat(None, turns.height, dtype=pl.Utf8, eager=True), "offset": offset,
        "model": fields["model"],
    })
    clocks = pl.concat([pl.Series([0], dtype=pl.Int64), clock.cast(pl.Int64).cum_sum()]).gather(cuts).to_list()
    for i, chunk in enumerate(chunks):
        chunk.frame = frame.slice(cuts[i], cuts[i + 1] - cuts[i])
        chunk.clock_only = clocks[i + 1] - clocks[i]
    return chunks


def _line_base(table: LineTable, turns: pl.DataFrame, texts: Texts) -> pl.Series | int:
    """What turns a line number counted from its text's first line into the text's own numbering."""
    if len(set(texts.first_lines)) == 1:
        return texts.first_lines[0] - 1
    return pl.Series([n - 1 for n in texts.first_lines], dtype=pl.Int64).gather(table.source.gather(turns["at"]))


def _keyed(values: pl.Series, ctx: pl.Series | None) -> pl.Series:
    """Values keyed by their text's context (when the texts have more than one)."""
    if ctx is None:
        return values
    return pl.select(pl.concat_str(ctx.cast(pl.Utf8), pl.lit(_SEP), values)).to_series()


def _unkeyed(key: str, ctx: pl.Series | None) -> tuple[int, str]:
    if ctx is None:
        return 0, key
    c, _, value = key.partition(_SEP)
    return int(c), value


def _speakers(s: pl.DataFrame, ctx: pl.Series | None, readings: list[Reading]) -> dict[str, pl.Series]:
    """Speaker, role, kind and model of each starting row, read once per distinct label and context."""
    keys = _keyed(s["label"], ctx)
    named = keys.unique().drop_nulls().to_list()
    read = {}
    for key in named:
        c, label = _unkeyed(key, ctx)
        read[key] = readings[c].speaker(label)
    which = keys.replace_strict(named, range(len(named)), default=None, return_dtype=pl.UInt32)
    return {k: pl.Series([read[n][i] for n in named], dtype=pl.Utf8).gather(which)
            for i, k in enumerate(("speaker", "role", "kind", "model"))}


def _times(raw: pl.Series, ctx: pl.Series | None, readings: list[Reading]
           ) -> tuple[pl.Series, pl.Series, pl.Series]:
    """(time, UTC offset, clock time without a day) of each stamp, read by its text's context."""
    if ctx is None:
        r = readings[0]
        time, offset = iso_times(raw, r.when, fast=r.fast_times)
        return time, offset, _clock_only(raw, time, r)
    time = pl.repeat(None, len(raw), dtype=pl.Datetime("us"), eager=True).alias("time")
    offset = pl.repeat(None, len(raw), dtype=pl.Int64, eager=True).alias("offset")
    clock = pl.repeat(False, len(raw), dtype=pl.Boolean, eager=True)
    for c, r in enumerate(readings):
        at = (ctx == c).arg_true()
        part = raw.gather(at)
        t, o = iso_times(part, r.when, fast=r.fast_times)
        time, offset = time.scatter(at, t), offset.scatter(at, o)
        clock = clock.scatter(at, _clock_only(part, t, r))
    return time, offset, clock


def _clock_only(raw: pl.Series, time: pl.Series, reading: Reading) -> pl.Series:
    """Whether each stamp is a clock time with no day to put it on: asked only of stamps without a time."""
    untimed = pl.select(pl.when(time.is_null()).then(raw)).to_series()
    return per_distinct(untimed, reading.clock_only, pl.Boolean).fill_null(False)


def _pieces(lines: pl.Series, heads: LineHeaders, rows: pl.DataFrame, is_start: pl.Series) -> pl.Series:
    """A turn's start line gives its rest (a notice: the line after its stamp); any other line, a
    header that starts nothing included, gives itself."""
    n = len(lines)
    at = heads.ok.arg_true()
    stamp_len = pl.repeat(0, n, dtype=pl.Int64, eager=True).scatter(at, rows["stamp_len"])
    notice = pl.repeat(False, n, dtype=pl.Boolean, eager=True).scatter(at, rows["label"].is_null())
    return pl.select(pl.when(is_start & notice).then(lines.str.slice(stamp_len))
                     .when(is_start).then(heads.rest).otherwise(lines)).to_series()


def _before_first(chunks: list[Chunk], table: LineTable, heads: LineHeaders, is_start: pl.Series, texts: Texts
                  ) -> None:
    """Before each text's first turn: each block (the text before any header, and each header that
    starts nothing with its lines) is a preamble region with its text, when it is not blank or is a
    header. A text with turns before it (a streamed chunk after the first) has none."""
    src = pl.col("src")
    fresh = pl.lit(pl.Series([n == 0 for n in texts.turns_before])).gather(src)
    frame = pl.DataFrame({"line": table.lines, "src": table.source, "head": heads.ok, "start": is_start}
                         ).with_row_index("at").filter((pl.col("start").cast(pl.Int32).cum_sum().over(src) == 0)
                                                       & fresh)
    if not frame.height:
        return
    blocks = frame.with_columns(block=pl.col("head").cast(pl.Int64).cum_sum().over(src)).group_by(
        "src", "block", maintain_order=True).agg(pl.col("at").first(), pl.col("at").last().alias("last"),
                                                 pl.col("line").str.join("\n"), pl.col("head").first())
    for i, _, at, last, text, is_head in blocks.iter_rows():
        if text.strip() or is_head:
            base = texts.first_lines[i] - table.bounds[i]
            chunks[i].regions.append(Region(RegionKind.PREAMBLE, "text before the first turn",
                                            lines=(base + at, base + last), content=text.strip("\n")))


def _kept_as_text(chunks: list[Chunk], table: LineTable, heads: LineHeaders, rows: pl.DataFrame, start: pl.Series,
                  is_start: pl.Series, texts: Texts) -> None:
    """The warning for each labelled header that starts no turn after its text's first turn."""
    kept = rows.with_columns(at=heads.ok.arg_true(), start=start).filter(
        ~pl.col("start") & pl.col("label").is_not_null())
    if not kept.height:
        return
    before = pl.lit(pl.Series(texts.turns_before, dtype=pl.Int64)).gather(pl.col("src"))
    turn_no = pl.DataFrame({"start": is_start, "src": table.source}).select(
        pl.col("start").cast(pl.Int64).cum_sum().over("src") + before).to_series().gather(kept["at"])
    for i, at, label, n in zip(kept["src"].to_list(), kept["at"].to_list(), kept["label"].to_list(),
                               turn_no.to_list(), strict=True):
        if n == 0:
            continue
        line = texts.first_lines[i] + at - table.bounds[i]
        chunks[i].warnings.append(f"line {line}: {label!r}: looks like a header but the name appears once; "
                                  f"kept as text of turn {n}")
        chunks[i].shaped.append(ShapedLine(line, KEPT_AS_TEXT))
