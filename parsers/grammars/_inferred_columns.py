"""Inferred logs as columns: the learnt header over a table of lines, and where a stream of one may be cut.

The same sessions as the inferred grammar's turn-by-turn parse (``tests/oracle/inferred.py``; tests
compare the two on every golden, sample and conformance input and on generated logs): the learnt
header, translated to Rust's syntax with its prefix captured, runs once over a table of texts that
learnt it; a turn is a header line and every line up to the next; times are read once per distinct
prefix; the lines before a text's first header are its preamble when any is not blank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import orjson
import polars as pl
import regex

from parsers.columns import (
    PY_SPACE,
    TURN_SCHEMA,
    LineTable,
    group_turns,
    line_headers,
    nonblank,
    per_distinct,
)
from parsers.speakers import role_of
from parsers.timeparse import from_parts

STAMP = regex.compile(
    r"(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})[ T]+(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}))?"
)
CLOCK = regex.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")
HEADER_LIKE = r"^[ \t]*(?:\d|[^\w\s])[^\p{L}\n]*\p{L}[\w.' \t-]*[^\w\s.'-]"
"""A line that looks like an inferred header, whatever its learnt shape: a prefix of digits, blanks and
punctuation (at least one digit or mark), a name, a closing mark. Where a stream of an inferred log may be
cut; its survey checks that every such line starts a turn under the header the log learns."""


@dataclass(slots=True)
class Chunk:
    """A text's turns as a frame (the time notes are carried on the input's survey)."""

    frame: pl.DataFrame
    bad: int = 0
    extras: list[dict] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Read:
    """One text's turns and what they tell of its times."""

    frame: pl.DataFrame
    clock_only: int
    unreadable: int
    preamble: int
    """How many lines precede the text's first header when any of them is not blank, else 0 (counted only
    for a text that starts its input)."""


def header_like(lines: pl.Series) -> pl.Series:
    """Whether each line looks like an inferred header (``HEADER_LIKE``): where a stream may be cut."""
    return lines.str.contains(HEADER_LIKE).fill_null(False)


def stamp_of(prefix: str) -> tuple[str | None, datetime | None, int, int]:
    """(raw time, time, 1 when not a calendar date or clock time, 1 for a clock alone) of a header's prefix."""
    if m := STAMP.search(prefix):
        when = from_parts(int(m["y"]), int(m["m"]), int(m["d"]), int(m["H"]), int(m["M"]), int(m["S"] or 0))
        return m.group(0), when, int(when is None), 0
    if m := CLOCK.search(prefix):
        return m.group(0), None, 0, 1
    return None, None, 0, 0


def read(table: LineTable, rust: str, first_line: int) -> list[Read]:
    """Each text's turns under one learnt header (``rust``: its Rust pattern, the prefix captured); every text
    of ``table`` starts at line ``first_line`` of its input."""
    heads = line_headers(table.lines, rust)
    framed = _turn_frames(table, heads, first_line)
    preambles = _preambles(table, heads) if first_line == 1 else [0] * len(table)
    return [Read(frame, clock, bad, pre) for (frame, clock, bad), pre in zip(framed, preambles, strict=True)]


def _preambles(table: LineTable, heads) -> list[int]:
    """For each text, how many lines precede its first header when any of them is not blank, else 0."""
    at = heads.ok.arg_true()
    cuts = table.split(at)
    n = len(table)
    firsts = iter(at.gather([cuts[i] for i in range(n) if cuts[i] < cuts[i + 1]]).to_list())
    stops = [next(firsts) if cuts[i] < cuts[i + 1] else table.bounds[i + 1] for i in range(n)]
    filled = pl.concat([pl.Series([0], dtype=pl.Int64), nonblank(table.lines).cast(pl.Int64).cum_sum()])
    counts = filled.gather([*table.bounds[:-1], *stops]).to_list()
    return [stops[i] - table.bounds[i] if counts[n + i] > counts[i] else 0 for i in range(n)]


def _turn_frames(table: LineTable, heads, first_line: int) -> list[tuple[pl.DataFrame, int, int]]:
    """Each text's turn frame, and its counts of clock-only and unreadable times."""
    turns = group_turns(heads.pieces(table.lines), heads.ok, first_line, table)
    h = heads.groups.filter(heads.ok)
    prefix = h["prefix"]
    keys = prefix.unique().to_list()
    read = [stamp_of(k) for k in keys]
    which = (prefix.replace_strict(keys, range(len(keys)), return_dtype=pl.UInt32) if keys  # each row's prefix
             else pl.Series([], dtype=pl.UInt32))  # a text of no turn: a streamed log's preamble alone
    raw, when, bad, clock = (pl.Series([r[j] for r in read], dtype=dtype).gather(which) for j, dtype in
                             enumerate((pl.Utf8, pl.Datetime("us"), pl.Int64, pl.Int64)))
    speaker = h["name"].str.strip_chars(PY_SPACE)
    # A header without a time keeps its text (stripped) as extra.header, when it has a prefix at all.
    plain = (raw.is_null() & (prefix.str.strip_chars(PY_SPACE).str.len_chars() > 0)).arg_true()
    matched = heads.matched(table.lines).filter(heads.ok).gather(plain).to_list()
    extra = pl.repeat(None, h.height, dtype=pl.Utf8, eager=True).scatter(
        plain, pl.Series([orjson.dumps({"header": m.strip()}).decode() for m in matched], dtype=pl.Utf8))
    frame = pl.DataFrame({
        "speaker": speaker, "role": per_distinct(speaker, role_of, pl.Utf8), "content": turns["body"],
        "time": when, "time_raw": raw, "line_start": turns["line_start"], "line_end": turns["line_end"],
        "extra": extra,
    }).with_columns(kind=pl.lit("message", pl.Utf8)).select(list(TURN_SCHEMA))
    cuts = table.split(turns["at"])
    zero = pl.Series([0], dtype=pl.Int64)
    clocks = pl.concat([zero, clock.cum_sum()]).gather(cuts).to_list()
    bads = pl.concat([zero, bad.cum_sum()]).gather(cuts).to_list()
    return [(frame.slice(cuts[i], cuts[i + 1] - cuts[i]), clocks[i + 1] - clocks[i], bads[i + 1] - bads[i])
            for i in range(len(table))]
