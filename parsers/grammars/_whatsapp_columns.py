"""WhatsApp as columns: the header regex in Rust syntax over every line, times per distinct value.

The same grammar as ``whatsapp.py``'s line-engine parse, turn for turn (tests compare the two on
every golden, sample and conformance input): the header is the same factored pattern, translated
(``RUST_HEADER``); dates and clocks are read once per distinct value with the same functions; the
rows a cheap vectorised test flags as possible notices, placeholders or attachments go through the
same ``_special`` in Python, matched again by the Python pattern. Rust's regex has no conditional
group, so ``(?(open)...|...)`` becomes a captured alternative that must agree with ``open``.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl

from parsers.columns import TURN_SCHEMA, LineTable, extract, group_turns

from ._lines import day_of
from ._whatsapp_headers import DATE, HEADER_BODY, MARKS, clock_delta


def _rust(body: str) -> str:
    """The header pattern in Rust's syntax (see the module docstring)."""
    out = re.sub(r"\(\?=\[[^\]]*\]\)", "", body)  # first-character tests: only a speed-up in Python
    # Captures cost Rust's regex most of its time: only the groups the frame reads are kept.
    out = re.sub(r"\(\?P<(?!(?:stamp|date|clock|open|author|lrm|text)>)\w+>", "(?:", out)
    for old, new in (("(?(open)", "(?P<close>"), (r"(?=\n)", "$"), (r"\Z", "$")):
        if old not in out:
            raise ValueError(f"the WhatsApp header no longer holds {old!r}: update its Rust translation")
        out = out.replace(old, new)
    return "^(?:" + out + ")"


def _rust_flag(body: str) -> str:
    """The header pattern as a plain test (no captures, which cost Rust's regex most of its time):
    the conditional close becomes two whole alternatives, bracketed and not."""
    cond = body.index("(?(open)") + len("(?(open)")
    end = body.index(")", cond)
    close_bracket, close_dash = body[cond:end].split("|")
    opening = "(?P<open>\\[)?"
    lead, _, stamp = body[:cond - len("(?(open)")].partition(opening)
    marks, stamp = stamp[:stamp.index("(?P<stamp>")], stamp[stamp.index("(?P<stamp>"):]
    rest = body[end + 1:]
    out = f"{lead}(?:\\[{marks}{stamp}{close_bracket}|{marks}{stamp}{close_dash}){rest}"
    out = re.sub(r"\(\?=\[[^\]]*\]\)", "", out)
    return "^(?:" + re.sub(r"\(\?P<\w+>", "(?:", out) + ")"


def header_lines(lines: pl.Series) -> pl.Series:
    """Whether each line is a header (the same lines ``headers`` flags, tested without captures)."""
    return lines.str.contains(_FLAG).fill_null(False)


@dataclass(slots=True)
class Headers:
    """The header columns of a run of lines: ``ok`` flags the header lines."""

    groups: pl.DataFrame
    ok: pl.Series

    @property
    def count(self) -> int:
        return int(self.ok.sum())


_TEXT = "(?P<text>[^\\n]*))"


@functools.cache
def _head_only(rest: str) -> str:
    """The header pattern without its final ``text`` group (the rest of the line), the header
    itself captured as ``head``: the capturing engine then runs over the header only, not the
    whole message (most of the pattern's cost); the text is the line after the head."""
    pattern = _rust(HEADER_BODY + rest)
    if not pattern.endswith(_TEXT):
        raise ValueError("the WhatsApp header no longer ends with the text of the line: update headers()")
    return "^(?P<head>" + pattern[len("^(?:"):-len(_TEXT)] + ")"


def headers(lines: pl.Series, rest: str) -> Headers:
    """Every line's header groups."""
    groups = extract(lines, _head_only(rest))
    text = pl.DataFrame({"line": lines, "head": groups["head"]}).select(
        pl.when(pl.col("head").is_not_null()).then(pl.col("line").str.slice(pl.col("head").str.len_chars())))
    groups = groups.drop("head").with_columns(text.to_series().alias("text"))
    ok = groups.select(pl.col("stamp").is_not_null()
                       & (pl.col("open").is_null() == ~pl.col("close").str.ends_with("]"))).to_series()
    return Headers(groups, ok.fill_null(False))


def header_dates(lines: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(row of each header line, its date), without the full pattern's captures."""
    at = header_lines(lines).arg_true()
    return at, dates_at(lines, at)


def dates_at(lines: pl.Series, at: pl.Series) -> pl.Series:
    """The date of each header line (rows ``at``): the first date-shaped run in it (the pre-pass of a
    streamed input reads only these)."""
    return lines.gather(at).str.extract(_DATE, 1)


def date_runs(heads: Headers | pl.Series, offset: int = 0) -> list[tuple[str, int]]:
    """(date, index of its first turn) for each run of equal consecutive dates; ``offset``: the
    index of the first turn of these lines in the session. ``heads``: the headers, or their dates."""
    dates = heads.groups["date"].filter(heads.ok) if isinstance(heads, Headers) else heads
    starts = (dates != dates.shift(1)).fill_null(True)
    at = pl.int_range(0, len(dates), eager=True).filter(starts)
    return [(d, int(i) + offset) for d, i in zip(dates.filter(starts).to_list(), at.to_list(), strict=True)]


def date_runs_by_text(dates: pl.Series, source: pl.Series, cuts: list[int]) -> list[list[tuple[str, int]]]:
    """``date_runs`` of each text of a line table (``dates``: each header's date; ``source``: each header's
    text; ``cuts``: the index of each text's first header, and their count): a run never goes on into
    the next text."""
    starts = (dates != dates.shift(1)).fill_null(True) | (source != source.shift(1)).fill_null(True)
    at = pl.int_range(0, len(dates), eager=True).filter(starts).to_list()
    out: list[list[tuple[str, int]]] = [[] for _ in cuts[:-1]]
    for d, i in zip(dates.filter(starts).to_list(), at, strict=True):
        k = bisect_right(cuts, i) - 1
        out[k].append((d, i - cuts[k]))
    return out


@dataclass(slots=True)
class Chunk:
    """The turns of a run of lines, and what the session needs to know of them."""

    frame: pl.DataFrame
    bad: int = 0
    """Turns whose time could not be read."""
    extras: list[dict[str, Any]] = field(default_factory=list)
    """The extra fields of the turns that have any, in order (attachments are checked on them)."""


_TIME = {"day": pl.Datetime("us"), "delta": pl.Duration("us")}


def _mapped(values: pl.Series, read: Callable[[str], Any], dtype) -> pl.Series:
    """``read`` once per distinct value, joined back."""
    keys = values.unique().drop_nulls().to_list()
    return values.replace_strict(keys, [read(k) for k in keys], default=None, return_dtype=dtype)


def turn_frame(lines: pl.Series, heads: Headers, order: str, special: Callable, first_line: int = 1) -> Chunk:
    """The turn frame of one run of lines (``turn_frames`` of a table of one text)."""
    return turn_frames(LineTable.of_lines(lines), heads, [order], [special], first_line)[0]


def turn_frames(table: LineTable, heads: Headers, orders: list[str], specials: list, first_line: int = 1
                ) -> list[Chunk]:
    """The turn frame (``parsers.columns.TURN_SCHEMA``) of each text of a line table, its dates read in
    that text's day/month order. ``specials[i](line, body)`` gives the Python parse's Turn for a flagged
    row of text ``i`` (``flag`` is the same for every text)."""
    g = heads.groups
    pieces = pl.DataFrame({"line": table.lines, "text": g["text"], "ok": heads.ok}).select(
        pl.when(pl.col("ok")).then(pl.col("text")).otherwise(pl.col("line"))).to_series()
    turns = group_turns(pieces, heads.ok, first_line, table)
    h = g.filter(heads.ok)
    day = _days(h["date"], orders, table.source.filter(heads.ok))
    delta = _mapped(h["clock"], clock_delta, _TIME["delta"])
    frame = pl.DataFrame({
        "speaker": h["author"].fill_null("System"), "content": turns["body"], "time": day + delta,
        "time_raw": h["stamp"].str.replace_all(f"[{MARKS}]", "").str.replace_all("[\u00a0\u202f]", " "),
        "line_start": turns["line_start"], "line_end": turns["line_end"],
    }).with_columns(role=pl.lit("user", pl.Utf8), kind=pl.lit("message", pl.Utf8))
    cuts = table.split(turns["at"])
    extras = _specials(frame, table, h, turns, specials, cuts)
    frame = extras.pop()
    return [Chunk(part, int(part["time"].null_count()), extras[i])
            for i, part in enumerate(frame.slice(cuts[i], cuts[i + 1] - cuts[i]) for i in range(len(table)))]


def _days(dates: pl.Series, orders: list[str], source: pl.Series) -> pl.Series:
    """Each header's day, its date read in its text's day/month order (once per distinct pair)."""
    if len(set(orders)) == 1:
        return _mapped(dates, lambda d: day_of(d, orders[0]), _TIME["day"])
    keyed = pl.select(pl.concat_str(pl.lit(pl.Series(orders)).gather(source), dates, separator="|")).to_series()
    return _mapped(keyed, lambda k: day_of(k[4:], k[:3]), _TIME["day"])


def flagged(h: pl.DataFrame, notice: Callable[[str], bool], last_chars: frozenset[str], media: frozenset[str],
            starts: tuple[str, ...], ends: tuple[str, ...]) -> pl.Series:
    """The rows that may not be a plain message: no author, an author holding an event phrase, an
    invisible mark after the colon, or a first line that may be a placeholder (``media``: casefolded, as
    a placeholder matches in any case), attachment or notice."""
    text = pl.col("text")
    notices = _mapped(h["author"], notice, pl.Boolean).fill_null(False)
    test = (pl.col("author").is_null() | pl.col("lrm").is_not_null() | notices
            | text.str.slice(-1).is_in(sorted(last_chars)) | text.str.to_lowercase().is_in(sorted(media))
            | pl.any_horizontal([text.str.starts_with(p) for p in starts] or [pl.lit(False)])
            | pl.any_horizontal([text.str.ends_with(p) for p in ends] or [pl.lit(False)]))
    return h.select(test.fill_null(False)).to_series()


def _specials(frame: pl.DataFrame, table: LineTable, h: pl.DataFrame, turns: pl.DataFrame, specials: list,
              cuts: list[int]) -> list:
    """The flagged rows replaced by the Python parse's reading of them: each text's extras (those
    that are set, in order), then the frame."""
    rows = specials[0].flag(h)
    index = rows.arg_true().to_list()
    if not index:
        return [[] for _ in specials] + [frame.with_columns(extra=pl.lit(None, pl.Utf8)).select(list(TURN_SCHEMA))]
    at = turns["at"].gather(index)
    line_of = table.lines.gather(at).to_list()
    bodies = turns["body"].gather(index).to_list()
    owners = [bisect_right(cuts, i) - 1 for i in index]
    got = [specials[k](line, body) for k, line, body in zip(owners, line_of, bodies, strict=True)]
    extras = [t.extra for t in got]
    kept: list[list] = [[] for _ in specials]
    for k in sorted(set(owners)):  # attachments present beside each chat, before the extras are encoded
        mine = [e for e, o in zip(extras, owners, strict=True) if o == k]
        specials[k].mark(mine)
        kept[k] = [e for e in mine if e]
    columns = {"speaker": [t.speaker for t in got], "role": [t.role for t in got],
               "kind": [t.kind for t in got], "content": [t.content for t in got]}
    updates = [frame[c].scatter(index, pl.Series(v, dtype=pl.Utf8)) for c, v in columns.items()]
    extra = pl.Series("extra", [None] * frame.height, pl.Utf8).scatter(
        index, pl.Series([orjson.dumps(e).decode() if e else None for e in extras], dtype=pl.Utf8))
    return [*kept, frame.with_columns(*updates, extra).select(list(TURN_SCHEMA))]


_FLAG = _rust_flag(HEADER_BODY)
_DATE = "(" + re.sub(r"\(\?P<\w+>", "(?:", DATE) + ")"
