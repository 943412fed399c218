"""Discord text as columns: author lines, continuation stamps, dividers and reply contexts over every line.

The same session as ``discord_text.py``'s line-engine parse (tests compare the two on every golden and
sample input and on generated pastes): the header is the grammar's own without its two lookaheads,
tested on the lines themselves (an author line is no Markdown heading or quote; a reply context is
followed by an author-like line); every turn takes the groups of the author line above it by a
forward fill; dates and clocks are read once per distinct value; the few rows that carry extra
fields (edited, a bot tag, a relative day, a reply) build them in Python, and so does the midnight
rule of a continuation stamp (its clock earlier than the message before it by the same author line).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import orjson
import polars as pl

from models.records import Region, RegionKind
from parsers.columns import PY_SPACE, TURN_SCHEMA, group_turns, line_headers, nonblank, per_distinct


@dataclass(slots=True)
class Paste:
    """What the columnar parse found besides the turn frame."""

    frame: pl.DataFrame
    regions: list[tuple[int, Region]] = field(default_factory=list)
    """(row of the block, region): the line engine declares them in block order."""
    runs: list[tuple[str, int]] = field(default_factory=list)
    continued: bool = False
    """Some turn is a continuation stamp (its date is its author line's)."""


def headers(lines: pl.Series, rust: str, markdown: str, author_like: str):
    """The header lines (``discord_text.HEADER``; the three patterns in Rust's syntax), None when
    polars cannot run them."""
    heads = line_headers(lines, rust)
    if heads is None:
        return None
    g = heads.groups
    next_author = lines.str.contains(author_like).fill_null(False).shift(-1, fill_value=False)
    heading = lines.str.contains(markdown).fill_null(False)
    bad = (g["name"].is_not_null() & heading) | (g["reply"].is_not_null() & ~next_author)
    heads.ok = heads.ok & ~bad.fill_null(False)
    return heads


EMPTY_STAMP = ("a time stamp with no text under it: the message it stamps (an attachment, an embed) was not"
               " copied as text, so it is no turn")


def paste(lines: pl.Series, heads, edited: tuple[str, ...]) -> Paste:
    """The turn frame before times and extra fields, and the declared regions (see the module docstring)."""
    blocks = group_turns(heads.pieces(lines), heads.ok)
    g = heads.groups.filter(heads.ok).with_row_index("block").with_columns(at=blocks["at"])
    author = pl.when(pl.col("name").is_not_null()).then(pl.col("block")).forward_fill()
    g = g.with_columns(author=author, blank=blocks["body"].str.strip_chars(PY_SPACE) == "")
    out = Paste(pl.DataFrame(schema=TURN_SCHEMA))
    _regions(out, lines, heads, g, blocks)
    turn = ((pl.col("name").is_not_null() | (pl.col("cstamp").is_not_null() & ~pl.col("blank")))
            & pl.col("author").is_not_null())
    rows = g.with_columns(body=blocks["body"], line_start=blocks["line_start"],
                          line_end=blocks["line_end"]).filter(turn)
    a = g.select("name", "tag", "stamp", "date", "clock", "rel")
    by = {c: a[c].gather(rows["author"]) for c in a.columns}
    body = rows["body"]
    body = pl.select(pl.when(body.str.starts_with("\n")).then(body.str.slice(1)).otherwise(body)).to_series()
    body, was_edited = _edited(body, edited)
    raw = pl.select(pl.when(rows["name"].is_not_null()).then(rows["stamp"]).otherwise(rows["cstamp"])).to_series()
    out.frame = pl.DataFrame({
        "speaker": by["name"].str.strip_chars(PY_SPACE),
        "role": pl.select(pl.when(by["tag"].is_not_null()).then(pl.lit("other")).otherwise(pl.lit("user"))
                          ).to_series(),
        "content": body, "time_raw": raw, "line_start": rows["line_start"], "line_end": rows["line_end"],
        "author": rows["author"], "date": by["date"], "clock": by["clock"], "rel": by["rel"], "tag": by["tag"],
        "edited": was_edited, "at": rows["at"], "block": rows["block"],
    })
    out.continued = bool((rows["name"].is_null() & by["rel"].is_null()).any())
    dates = out.frame.select(pl.col("date"), pl.int_range(pl.len()).alias("i"), pl.col("author")).filter(
        pl.col("date").is_not_null())
    out.runs = _runs(dates)
    return out


def _runs(dates: pl.DataFrame) -> list[tuple[str, int]]:
    """(date, index of its first turn) per run of equal dates of the turns' author lines."""
    runs: list[tuple[str, int]] = []
    for date, i in zip(dates["date"].to_list(), dates["i"].to_list(), strict=True):
        if not runs or runs[-1][0] != date:
            runs.append((date, i))
    return runs


def _edited(body: pl.Series, markers: tuple[str, ...]) -> tuple[pl.Series, pl.Series]:
    """A trailing edited marker taken off (``discord_text._turn``), and where one was."""
    stripped = body.str.strip_chars_end(PY_SPACE)
    found = pl.Series([False] * len(body), dtype=pl.Boolean)
    out = body
    for marker in markers:
        hit = stripped.str.ends_with(marker) & ~found
        cut = stripped.str.slice(0, stripped.str.len_chars() - len(marker)).str.strip_chars_end(PY_SPACE)
        out = pl.select(pl.when(hit).then(cut).otherwise(out)).to_series()
        found = found | hit
    return out, found


def _regions(out: Paste, lines: pl.Series, heads, g: pl.DataFrame, blocks: pl.DataFrame) -> None:
    """The preamble, the date dividers, and continuation stamps before any author line."""
    first = heads.first()
    head = lines if first is None else lines.head(first)
    if len(head) and nonblank(head).any():
        out.regions.append((-1, Region(RegionKind.PREAMBLE, "text before the first author line (a channel title or"
                                       " a note)", lines=(1, len(head)))))
    spans = blocks.select("line_start", "line_end")
    for i in g.filter(pl.col("divider").is_not_null())["block"].to_list():
        out.regions.append((i, Region(RegionKind.BOILERPLATE, "the client's date divider",
                                      lines=(spans["line_start"][i], spans["line_end"][i]))))
    early = g.filter(pl.col("cstamp").is_not_null() & pl.col("author").is_null())["block"].to_list()
    for i in early:
        out.regions.append((i, Region(RegionKind.PREAMBLE, "a continuation stamp before the first author line",
                                      lines=(spans["line_start"][i], spans["line_end"][i]))))
    empty = g.filter(pl.col("cstamp").is_not_null() & pl.col("author").is_not_null() & pl.col("blank"))
    for i in empty["block"].to_list():
        out.regions.append((i, Region(RegionKind.BOILERPLATE, EMPTY_STAMP,
                                      lines=(spans["line_start"][i], spans["line_end"][i]))))
    out.regions.sort(key=lambda r: r[0])


def times(frame: pl.DataFrame, day_of, clock) -> tuple[pl.Series, int, int]:
    """Each turn's time (its author line's date in the file's order, its own clock; a clock earlier
    than the message before it by the same author line means midnight passed), and the counts of
    relative-day and unreadable turns."""
    day = per_distinct(frame["date"], day_of, pl.Datetime("us"))
    # the author line's own stamp reads its clock group; a continuation stamp is a clock itself
    is_author = frame["block"] == frame["author"]
    text = pl.select(pl.when(is_author).then(frame["clock"]).otherwise(frame["time_raw"])).to_series()
    delta = per_distinct(text, clock, pl.Duration("us"))
    base = pl.select(pl.when(frame["rel"].is_null()).then(day + delta)).to_series()
    relative = int(frame["rel"].is_not_null().sum())
    unreadable = int((frame["rel"].is_null() & base.is_null()).sum())
    return _midnight(base, frame["author"]), relative, unreadable


WRAP = timedelta(hours=12)
"""A continuation stamp more than this much earlier than the message before it (23:50, then 00:10)
wrapped past midnight; a smaller step back (13:30, then 13:00) stays on its author line's day: no
date is invented for it."""


def midnight_passed(previous: datetime, when: datetime) -> bool:
    """True when a continuation's clock, read on its author line's day, wrapped past midnight."""
    return previous - when > WRAP


def _midnight(base: pl.Series, author: pl.Series) -> pl.Series:
    """A continuation's time one day on when its clock wrapped past midnight after the readable turn
    before it, of the same author line (``discord_text._times``)."""
    values, authors = base.to_list(), author.to_list()
    previous = None
    for i, (when, by) in enumerate(zip(values, authors, strict=True)):
        if when is None:
            continue
        if previous is not None and previous[0] == by and midnight_passed(previous[1], when):
            when = values[i] = when + timedelta(days=1)
        previous = (by, when)
    return pl.Series("time", values, dtype=pl.Datetime("us"))


def extras(frame: pl.DataFrame, replies: dict[int, tuple[str, int]], names: list[str]) -> tuple[pl.Series, list]:
    """The extra fields of the rows that have any (in the line engine's key order) and each turn's
    first line (a reply context above it is part of the turn)."""
    rows = (frame["edited"] | frame["tag"].is_not_null() | frame["rel"].is_not_null()).to_list()
    starts = frame["line_start"].to_list()
    out: list[str | None] = []
    for i, (flag, edited, tag, rel) in enumerate(zip(rows, frame["edited"].to_list(), frame["tag"].to_list(),
                                                    frame["rel"].to_list(), strict=True)):
        reply = replies.get(i)
        if not flag and reply is None:
            out.append(None)
            continue
        extra: dict[str, Any] = {}
        if edited:
            extra["edited"] = True
        if tag:
            extra["bot"] = tag
        if rel:
            extra["relativeDay"] = rel
        if reply is not None:
            to = next((n for n in names if reply[0] == n or reply[0].startswith(n + " ")), reply[0].split(" ", 1)[0])
            extra["replyTo"] = to
            extra["replyPreview"] = reply[0][len(to):].strip() or None
            starts[i] = reply[1]
        out.append(orjson.dumps(extra).decode() if extra else None)
    return pl.Series("extra", out, dtype=pl.Utf8), starts


def replies(heads, lines: pl.Series, frame: pl.DataFrame) -> dict[int, tuple[str, int]]:
    """Turn index -> (reply context, its line): a context belongs to the next turn (the last one
    before it wins)."""
    g = heads.groups.filter(heads.ok).with_row_index("block").with_columns(
        line=heads.ok.arg_true() + 1).filter(pl.col("reply").is_not_null())
    turn_blocks = frame["block"].to_list()
    out: dict[int, tuple[str, int]] = {}
    for block, text, line in g.select("block", "reply", "line").iter_rows():
        i = bisect_right(turn_blocks, block)
        if i < len(turn_blocks):
            out[i] = (text.strip(), line)
    return out
