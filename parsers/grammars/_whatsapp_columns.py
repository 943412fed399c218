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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl

from parsers.columns import TURN_SCHEMA, extract, group_turns

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


def headers(lines: pl.Series, rest: str) -> Headers | None:
    """Every line's header groups; None when polars cannot run the translated pattern."""
    groups = extract(lines, _head_only(rest))
    if groups is None:
        return None
    text = pl.DataFrame({"line": lines, "head": groups["head"]}).select(
        pl.when(pl.col("head").is_not_null()).then(pl.col("line").str.slice(pl.col("head").str.len_chars())))
    groups = groups.drop("head").with_columns(text.to_series().alias("text"))
    ok = groups.select(pl.col("stamp").is_not_null()
                       & (pl.col("open").is_null() == ~pl.col("close").str.ends_with("]"))).to_series()
    return Headers(groups, ok.fill_null(False))


def header_dates(lines: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(row of each header line, its date), without the full pattern's captures: a header line's
    date is the first date-shaped run in it (the pre-pass of a streamed input reads only these)."""
    at = header_lines(lines).arg_true()
    return at, lines.gather(at).str.extract(_DATE, 1)


def date_runs(heads: Headers | pl.Series, offset: int = 0) -> list[tuple[str, int]]:
    """(date, index of its first turn) for each run of equal consecutive dates; ``offset``: the
    index of the first turn of these lines in the session. ``heads``: the headers, or their dates."""
    dates = heads.groups["date"].filter(heads.ok) if isinstance(heads, Headers) else heads
    starts = (dates != dates.shift(1)).fill_null(True)
    at = pl.int_range(0, len(dates), eager=True).filter(starts)
    return [(d, int(i) + offset) for d, i in zip(dates.filter(starts).to_list(), at.to_list(), strict=True)]


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
    """The turn frame of these lines (``parsers.columns.TURN_SCHEMA``). ``special(row, line, body)``
    gives the Python parse's Turn for a flagged row (``row``: its header groups)."""
    g = heads.groups
    pieces = pl.DataFrame({"line": lines, "text": g["text"], "ok": heads.ok}).select(
        pl.when(pl.col("ok")).then(pl.col("text")).otherwise(pl.col("line"))).to_series()
    turns = group_turns(pieces, heads.ok, first_line)
    h = g.filter(heads.ok)
    day = _mapped(h["date"], lambda d: day_of(d, order), _TIME["day"])
    delta = _mapped(h["clock"], clock_delta, _TIME["delta"])
    frame = pl.DataFrame({
        "speaker": h["author"].fill_null("System"), "content": turns["body"], "time": day + delta,
        "time_raw": h["stamp"].str.replace_all(f"[{MARKS}]", "").str.replace_all("[\u00a0\u202f]", " "),
        "line_start": turns["line_start"], "line_end": turns["line_end"],
    }).with_columns(role=pl.lit("user", pl.Utf8), kind=pl.lit("message", pl.Utf8))
    chunk = Chunk(frame, bad=int(frame["time"].null_count()))
    _specials(chunk, lines, h, turns, special)
    return chunk


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


def _specials(chunk: Chunk, lines: pl.Series, h: pl.DataFrame, turns: pl.DataFrame, special) -> None:
    """Replace the flagged rows by the Python parse's reading of them."""
    rows = special.flag(h)
    index = rows.arg_true()
    if not len(index):
        chunk.frame = chunk.frame.with_columns(extra=pl.lit(None, pl.Utf8)).select(list(TURN_SCHEMA))
        return
    at = turns["at"].gather(index).to_list()
    line_of = lines.gather(at).to_list()
    bodies = turns["body"].gather(index).to_list()
    got = [special(line, body) for line, body in zip(line_of, bodies, strict=True)]
    extras = [t.extra for t in got]
    special.mark(extras)  # attachments present beside the chat, before the extras are encoded
    chunk.extras = [e for e in extras if e]
    frame = chunk.frame
    columns = {"speaker": [t.speaker for t in got], "role": [t.role for t in got],
               "kind": [t.kind for t in got], "content": [t.content for t in got]}
    updates = [frame[c].scatter(index, pl.Series(v, dtype=pl.Utf8)) for c, v in columns.items()]
    extra = pl.Series("extra", [None] * frame.height, pl.Utf8).scatter(
        index, pl.Series([orjson.dumps(e).decode() if e else None for e in extras], dtype=pl.Utf8))
    chunk.frame = frame.with_columns(*updates, extra).select(list(TURN_SCHEMA))


_FLAG = _rust_flag(HEADER_BODY)
_DATE = "(" + re.sub(r"\(\?P<\w+>", "(?:", DATE) + ")"
