"""Source accounting of many frame sessions at once: one table of spans, one of non-blank prefix sums.

A session whose turns are a frame (``ParsedSession.frame``, with ``line_start``/``line_end``) is accounted
as any text session is (``lines.account_lines``): every non-blank line of its extent lies in exactly
one turn or declared region, and every line shaped like a turn start (the grammar's ``turn_shape``) is
a turn start, lies in a region or is declared text of its turn. Here the sessions of a batch, from any
number of texts, are counted together:

- each text's lines are split and their non-blank prefix sums taken once, the texts a batch meets
  first all in one table (``FrameText``: a text with many sessions keeps its sums for the next batch);
- the turn and region spans of every session are one table with a session column, clipped to each
  session's extent; loose, doubled and fresh lines are differences of prefix sums, summed per session;
- only a session with something loose or doubled has its lines walked (``account_lines``) to name them;
- the census matches the shape on the lines of all texts of a grammar at once (``str.contains``) when
  Rust's regex can say the shape exactly (``columns.rust_pattern``); a shape with a lookaround (WhatsApp,
  transcripts, Discord text) is matched by Python's ``regex`` line by line over each text, once. The
  candidates are joined to the sessions' extents; the rare one that is no turn start and not declared
  is checked against the session's regions as ``undeclared_shapes`` does.

The extents are the caller's (``accounting.Accountant.defer``): sessions of one text in order, each
running to its neighbours, exactly as ``Accountant.account`` gives them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import polars as pl
import regex

from parsers.columns import PY_SPACE, Untranslatable, rust_pattern, unnamed
from validators.lines import Accounting, LineIndex, account_lines, undeclared_shapes

_KEYS = itertools.count()
_SPAN_SCHEMA = {"session": pl.Int64, "a": pl.Int64, "b": pl.Int64, "turn": pl.Boolean}


@dataclass(slots=True, eq=False)
class FrameText:
    """One source text whose sessions are frames: its non-blank prefix sums and the lines its grammar's
    shape matches, read by the first batch that meets it and kept for its later sessions."""

    text: str
    shape: regex.Pattern | None = None
    key: int = field(default_factory=lambda: next(_KEYS))
    count: int = 0
    prefix: pl.Series | None = None
    """``prefix[k]``: how many of lines 1..k are not blank (``count + 1`` values)."""
    shaped: pl.DataFrame | None = None
    """``key``, ``line``: the lines the shape matches, in order (None: no shape)."""
    index: LineIndex | None = None

    def __post_init__(self) -> None:
        self.count = self.text.count("\n") + (0 if not self.text or self.text.endswith("\n") else 1)

    def line_index(self) -> LineIndex:
        if self.index is None:
            self.index = LineIndex(self.text)
        return self.index


@dataclass(slots=True)
class FrameSession:
    """One frame session waiting for its batch's accounting."""

    source: FrameText
    extent: tuple[int, int]
    starts: pl.Series
    ends: pl.Series
    regions: list[tuple[int, int]]
    declared: set[int]
    """Lines declared as text of their turn (``ParsedSession.shaped``)."""


def account_frames(items: Sequence[FrameSession]) -> list[Accounting]:
    """The accounting of each session, in order: what ``Accountant.account`` gives one at a time."""
    if not items:
        return []
    texts = list({id(item.source): item.source for item in items}.values())
    _read([t for t in texts if t.prefix is None])
    sessions, prefix = _sessions(items, texts)
    spans = _spans(items)
    sums = _sums(spans, sessions, prefix)
    out = []
    for item, (loose, turns, declared) in zip(items, sums, strict=True):
        if loose:
            found = account_lines(item.source.line_index(), item.extent,
                                  zip(item.starts.to_list(), item.ends.to_list(), strict=True), item.regions)
        else:
            found = Accounting("lines", checked=turns + declared, in_turns=turns, declared=declared)
        out.append(found)
    _census(items, sessions, spans, out)
    return out


def _read(texts: list[FrameText]) -> None:
    """Split the texts into lines and take their prefix sums and shaped lines, all in one table (a
    blank line ahead of each text makes its sums start at 0; a final line end starts no line)."""
    if not texts:
        return
    split = pl.col("text").str.split("\n")
    lines = pl.DataFrame({
        "key": [t.key for t in texts], "text": ["\n" + t.text for t in texts],
        "drop": [int(not t.text or t.text.endswith("\n")) for t in texts],
    }).select("key", line=split.list.head(split.list.len() - pl.col("drop"))).explode("line").with_columns(
        prefix=(pl.col("line").str.strip_chars(PY_SPACE).str.len_bytes() > 0).cast(pl.Int64).cum_sum().over("key"),
        number=pl.int_range(pl.len()).over("key"),
    )
    offset = 0
    for t in texts:
        t.prefix = lines["prefix"].slice(offset, t.count + 1)
        offset += t.count + 1
    for pattern, group in _by_shape(texts).items():
        rust = _rust_shape(pattern)
        if rust is None:
            found = _python_shaped(group)
        else:
            found = lines.filter(pl.col("key").is_in([t.key for t in group]) & (pl.col("number") > 0)
                                 & pl.col("line").str.contains(rust).fill_null(False)
                                 ).select("key", line=pl.col("number").cast(pl.Int64))
        _keep_shaped(group, found)


def _by_shape(texts: list[FrameText]) -> dict[str, list[FrameText]]:
    out: dict[str, list[FrameText]] = {}
    for t in texts:
        if t.shape is not None:
            out.setdefault(t.shape.pattern, []).append(t)
    return out


@cache
def _rust_shape(pattern: str) -> str | None:
    """A turn shape in Rust's syntax, matched at a line's start; None when Rust's regex cannot say it
    exactly (a lookaround, a class that may match a line end: ``columns.rust_pattern`` names it)."""
    anchored = pattern if pattern.startswith("^") else f"^(?:{pattern})"
    try:
        rust = unnamed(rust_pattern(regex.compile(anchored, regex.MULTILINE)))
        pl.Series([""]).str.contains(rust)
    except (Untranslatable, regex.error, pl.exceptions.ComputeError):
        return None
    return rust


def _python_shaped(texts: list[FrameText]) -> pl.DataFrame:
    """The lines each text's shape matches, by Python's ``regex`` one line at a time (one search of the
    whole text settles the usual text without any)."""
    keys: list[int] = []
    numbers: list[int] = []
    for t in texts:
        shape = t.shape
        if shape is None or not shape.search(t.text):
            continue
        found = [n for n, line in enumerate(t.text.split("\n")[:t.count], 1) if shape.match(line)]
        keys.extend([t.key] * len(found))
        numbers.extend(found)
    return pl.DataFrame({"key": keys, "line": numbers}, schema={"key": pl.Int64, "line": pl.Int64})


def _keep_shaped(texts: list[FrameText], found: pl.DataFrame) -> None:
    """Each text's slice of ``found`` (rows in the texts' order)."""
    counts = dict(found.group_by("key").len().iter_rows())
    offset = 0
    for t in texts:
        n = counts.get(t.key, 0)
        t.shaped = found.slice(offset, n)
        offset += n


def _sessions(items: Sequence[FrameSession], texts: list[FrameText]) -> tuple[pl.DataFrame, pl.Series]:
    """One row per session (its extent, and where its text's window starts in the prefix column) and
    the prefix column: each text's sums over the lines its sessions of this batch reach (a text read
    over many batches is not copied whole each time)."""
    window = _windows(items)
    bases: dict[int, tuple[int, int, int]] = {}
    parts = []
    base = 0
    for t in texts:
        lo, hi = window[id(t)]
        bases[id(t)] = (base, lo, hi)
        parts.append(t.prefix.slice(lo, hi - lo + 1))
        base += hi - lo + 1
    rows = [(i, *item.extent, *bases[id(item.source)], item.source.key, item.source.count)
            for i, item in enumerate(items)]
    sessions = pl.DataFrame(rows, orient="row", schema={
        "session": pl.Int64, "first": pl.Int64, "last": pl.Int64, "base": pl.Int64, "lo": pl.Int64,
        "hi": pl.Int64, "key": pl.Int64, "count": pl.Int64})
    return sessions, pl.concat(parts)


def _windows(items: Sequence[FrameSession]) -> dict[int, tuple[int, int]]:
    """By ``id`` of each text: (lo, hi), its lines lo+1..hi hold every extent of its sessions here."""
    window: dict[int, tuple[int, int]] = {}
    for item in items:
        first, last = item.extent
        lo, hi = window.get(id(item.source), (first - 1, last))
        window[id(item.source)] = (min(lo, first - 1), max(hi, last))
    out = {}
    for item in items:
        lo, hi = window[id(item.source)]
        count = item.source.count
        lo = min(max(lo, 0), count)
        out[id(item.source)] = (lo, min(max(hi, lo), count))
    return out


def _shaped_in(t: FrameText, lo: int, hi: int) -> pl.DataFrame:
    """The text's shaped lines among lines lo+1..hi (a text read over many batches is not scanned
    whole each time)."""
    if lo == 0 and hi == t.count:
        return t.shaped
    line = t.shaped["line"]
    start, stop = line.search_sorted(lo + 1, "left"), line.search_sorted(hi, "right")
    return t.shaped.slice(start, stop - start)


def _spans(items: Sequence[FrameSession]) -> pl.DataFrame:
    """Every session's turn spans and region spans, with the session's row number."""
    sizes = [len(item.starts) for item in items]
    numbers = pl.DataFrame({"session": range(len(items)), "n": sizes}, schema={"session": pl.Int64, "n": pl.Int64})
    turns = pl.DataFrame({
        "session": numbers.filter(pl.col("n") > 0).select(pl.col("session").repeat_by("n").explode())["session"],
        "a": pl.concat([_int64(item.starts) for item in items]),
        "b": pl.concat([_int64(item.ends) for item in items]),
    }).with_columns(turn=pl.lit(True))
    regions = pl.DataFrame([(i, a, b, False) for i, item in enumerate(items) for a, b in item.regions],
                           orient="row", schema=_SPAN_SCHEMA)
    return pl.concat([turns.select(_SPAN_SCHEMA.keys()).cast(_SPAN_SCHEMA), regions])


def _int64(column: pl.Series) -> pl.Series:
    """A line number column as Int64 (a grammar may give another integer type)."""
    return column if column.dtype == pl.Int64 else column.cast(pl.Int64)


def _upto(prefix: pl.Series, line: pl.Expr) -> pl.Expr:
    """Non-blank lines from line 1 of a session's text up to ``line`` (inclusive), read in the text's window."""
    c = pl.col
    return pl.lit(prefix).gather(c("base") + line.clip(c("lo"), c("hi")) - c("lo"))


def _sums(spans: pl.DataFrame, sessions: pl.DataFrame, prefix: pl.Series) -> list[tuple[bool, int, int]]:
    """Per session: (whether some line is loose or doubled, lines first met in turns, in regions):
    ``account_lines``' walk over spans sorted by start, as prefix sums (``accounting.account_spans``)."""
    c = pl.col
    clipped = spans.join(sessions, on="session").sort("session", "a", "b", "turn").with_columns(
        a=pl.max_horizontal("a", "first"), b=pl.min_horizontal("b", "last")).filter(c("a") <= c("b"))
    covered = pl.max_horizontal(c("b").cum_max().shift(1).over("session").fill_null(c("first") - 1), c("first") - 1)
    upto = lambda line: _upto(prefix, line)  # noqa: E731
    counted = clipped.with_columns(cb=covered).with_columns(
        loose=pl.when(c("a") > c("cb") + 1).then(upto(c("a") - 1) - upto(c("cb"))).otherwise(0),
        doubled=pl.when(c("a") <= c("cb")).then(upto(pl.min_horizontal("b", "cb")) - upto(c("a") - 1)).otherwise(0),
        fresh=pl.when(c("b") > c("cb")).then(upto(c("b")) - upto(pl.max_horizontal("a", c("cb") + 1) - 1))
        .otherwise(0),
    ).group_by("session").agg(
        off=(c("loose") + c("doubled")).sum(), turns=c("fresh").filter(c("turn")).sum(),
        declared=c("fresh").filter(~c("turn")).sum(), end=c("b").max())
    done = pl.max_horizontal(c("first") - 1, c("end"))
    out = sessions.join(counted, on="session", how="left").sort("session").select(
        off=c("off").fill_null(0) + pl.when(done < c("last")).then(upto(c("last")) - upto(done)).otherwise(0),
        turns=c("turns").fill_null(0), declared=c("declared").fill_null(0))
    return [(off > 0, turns, declared) for off, turns, declared in out.iter_rows()]


def _census(items: Sequence[FrameSession], sessions: pl.DataFrame, spans: pl.DataFrame,
            out: list[Accounting]) -> None:
    """The lines shaped like a turn start in each session's extent that are no turn start, are not
    declared and lie in no declared region: noted as possibly merged turns."""
    window = _windows(items)
    texts = {id(i.source): i.source for i in items}.values()
    shaped = [_shaped_in(t, *window[id(t)]) for t in texts if t.shaped is not None]
    if not shaped:
        return
    c = pl.col
    starts = spans.filter(c("turn")).select("session", line=c("a"))
    declared = pl.DataFrame([(i, n) for i, item in enumerate(items) for n in item.declared], orient="row",
                            schema={"session": pl.Int64, "line": pl.Int64})
    found = (pl.concat(shaped).join(sessions.select("session", "key", "first", "last", "count"), on="key")
             .filter((c("line") >= c("first")) & (c("line") <= pl.min_horizontal("last", "count")))
             .select("session", "line")
             .join(starts, on=["session", "line"], how="anti")
             .join(declared, on=["session", "line"], how="anti")
             .sort("session", "line"))
    if not len(found):
        return
    lines: dict[int, list[int]] = {}
    for session, line in found.iter_rows():
        lines.setdefault(session, []).append(line)
    for session, numbers in lines.items():
        undeclared = undeclared_shapes(numbers, set(), items[session].regions, set())
        out[session].note_merged(f"line {n}" for n in undeclared)
