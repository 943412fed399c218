"""IRC as columns: the dialect's header over every line, line shapes as Rust patterns, times as columns.

The same turns as ``irc.py``'s line-engine parse (tests compare the two on every golden, sample and
conformance input, and on generated logs): the header is the dialect's own pattern translated by
``parsers.columns.rust_pattern``; the message, action, notice and event shapes are matched as
columns (their Rust forms below spell Python's ``\\s`` as ``str.isspace`` sees it); the event lines
(joins, quits, modes...) go through ``irc.event_of`` in Python, one per row; ISO stamps are read as
a column (``columns.iso_times``); irssi's clock times take the day of the last ``Day changed`` /
``Log opened`` line above them, carried from chunk to chunk by ``Chunk.day``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
import polars as pl

from models.records import Region, RegionKind
from parsers.columns import (
    PY_SPACE,
    TURN_SCHEMA,
    LineHeaders,
    group_turns,
    iso_times,
    line_headers,
    nonblank,
    rust_pattern,
)
from parsers.timeparse import from_parts, parse_iso

_WS = "".join(f"\\x{{{ord(c):x}}}" for c in PY_SPACE)
# irc._MESSAGE, _EVENT, _ACTION, _NOTICE (re.S) in Rust's syntax; tried in this order.
SHAPES = {
    "message": rf"(?s)^<[ ]?[@+%~&!]?(?P<nick>[^{_WS}>]+)>[ \t]?(?P<text>.*)$",
    "event": r"(?s)^(?:\*\*\*|-!-|=!=|-->|<--|---|--)[ \t]+(?P<text>.*)$",
    "action": rf"(?s)^\*[ \t]*(?P<nick>[^{_WS}*]+)[ \t]?(?P<text>.*)$",
    "notice": rf"(?s)^-(?P<nick>[^{_WS}\-][^{_WS}]*?)(?:\([^)]*\))?-[ \t]?(?P<text>.*)$",
}
# irc._CHANNEL without its lookbehind: the character before a channel is consumed, then dropped.
CHANNEL = rf"(?:^|[{_WS}(\[])[#&][^{_WS},:\]]+"
_DATE = re.compile(r"(?P<mon>[A-Z][a-z]{2}) +(?P<day>\d{1,2})(?: \d{2}:\d{2}:\d{2})? (?P<year>\d{4})")
MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}


def rust_headers(dialects: dict[str, re.Pattern]) -> dict[str, str]:
    return {name: rust_pattern(p) for name, p in dialects.items()}


def channels_in(text: str) -> set[str]:
    """The channels a text names (``irc._CHANNEL.findall``)."""
    return set(_channels(pl.Series([text])))


@dataclass(slots=True)
class Chunk:
    """The turns of a run of lines and what the session learns from them."""

    frame: pl.DataFrame
    bad: int = 0
    """Turns whose time could not be read (not a calendar date or clock time)."""
    undated: int = 0
    """irssi turns with a clock time before any date."""
    day: datetime | None = None
    """irssi: the day in force after these lines."""
    from_name: bool = False
    """Whether that day is still the one the file name gave (no logger line has set one yet)."""
    named: int = 0
    """Turns dated by the file name's day."""
    markers: int = 0
    regions: list[Region] = field(default_factory=list)
    preamble: str | None = None
    channels: set[str] = field(default_factory=set)
    first_day: Any = None
    extras: list = field(default_factory=list)


def turn_frame(lines: pl.Series, dialect: str, rust: str, day: datetime | None, first_line: int,
               from_name: bool = False) -> Chunk | None:
    """The turn frame of these lines (``first_line``: the number of the first); ``day``: the day in
    force before them (a logger line's, or the file name's when ``from_name``). None when polars
    cannot run the header pattern."""
    heads = line_headers(lines, rust)
    if heads is None:
        return None
    blocks = group_turns(heads.pieces(lines), heads.ok, first_line)
    chunk = Chunk(pl.DataFrame(schema=TURN_SCHEMA), day=day, from_name=from_name)
    _preamble(chunk, lines, heads, first_line)
    g = heads.groups.filter(heads.ok)
    if dialect in ("irssi", "bracketed", "xchat"):  # irc.CLOCK_ONLY
        marker = g["marker"].is_not_null()
        _markers(chunk, blocks.filter(marker), dialect)
        times = _irssi_times(chunk, g, marker, blocks["body"])
        g, blocks = g.filter(~marker), blocks.filter(~marker)
        time, offset = times[0].filter(~marker), None
        raw = g["clock"]
    else:
        if "marker" in g.columns:  # weechat's info lines
            marker = g["marker"].is_not_null()
            _markers(chunk, blocks.filter(marker), dialect)
            g, blocks = g.filter(~marker), blocks.filter(~marker)
        raw = g["ts"]
        time, offset = iso_times(raw, parse_iso)
        chunk.bad = int((time.is_null()).sum())
    chunk.frame = _shaped(chunk, _rewritten(blocks["body"], dialect), time, raw, offset, blocks)
    return chunk


def _preamble(chunk: Chunk, lines: pl.Series, heads: LineHeaders, first_line: int) -> None:
    """Lines before the first header of a text's first lines: its preamble, when not blank."""
    if first_line != 1:
        return
    first = heads.first()
    head = lines if first is None else lines.head(first)
    if len(head) and nonblank(head).any():
        chunk.preamble = "\n".join(head.to_list())
        chunk.regions.append(Region(RegionKind.PREAMBLE, "text before the first log line", lines=(1, len(head))))


def _markers(chunk: Chunk, blocks: pl.DataFrame, dialect: str) -> None:
    chunk.markers = blocks.height
    for start, end in zip(blocks["line_start"].to_list(), blocks["line_end"].to_list(), strict=True):
        chunk.regions.append(Region(RegionKind.BOILERPLATE, marker_reason(dialect), lines=(start, end)))


def marker_reason(dialect: str) -> str:
    """Why a logger line of this dialect is a declared region, not a turn."""
    if dialect == "xchat":
        return ("xchat's own BEGIN/ENDING LOGGING line: it gives the year of the stamps that follow, nobody "
                "said it")
    if dialect == "weechat":
        return "weechat's own Beginning/End of log info line: nobody said it"
    return "irssi's own Log opened/closed or Day changed line: it dates the clock times that follow, nobody said it"


UNSET = object()


def _irssi_times(chunk: Chunk, g: pl.DataFrame, marker: pl.Series, bodies: pl.Series):
    """Every header's time: the day the last logger line above it set (``chunk.day`` before the
    first), plus its clock; counts the undated and unreadable turns and leaves the last day."""
    sets = [day_setter(b) if m else UNSET for b, m in zip(bodies.to_list(), marker.to_list(), strict=True)]
    setter = [i if s is not UNSET else None for i, s in enumerate(sets)]
    values = pl.Series([s if s is not UNSET else None for s in sets], dtype=pl.Datetime("us"))
    last = pl.Series(setter, dtype=pl.Int64).forward_fill()
    day = pl.select(pl.when(last.is_null()).then(pl.lit(chunk.day, pl.Datetime("us")))
                    .otherwise(values.gather(last.fill_null(0)))).to_series()
    turn = ~marker
    if chunk.from_name:
        chunk.named = int((turn & last.is_null() & day.is_not_null()).sum())
    for s in reversed(sets):
        if s is not UNSET:
            chunk.day, chunk.from_name = s, False
            break
    if "mon" in g.columns:  # a stamp with its month and day (xchat): the day in force gives the year
        rows = zip(day.to_list(), turn.to_list(), g.select("mon", "dd", "h", "mi", "s").iter_rows(), strict=True)
        time = pl.Series([clock_time(d, *row) if d is not None and t else None for d, t, row in rows],
                         dtype=pl.Datetime("us"))
        valid = time.is_not_null()
    else:
        h, mi, s = (g[c].cast(pl.Int64, strict=False) for c in ("h", "mi", "s"))
        s = s.fill_null(0)
        valid = (h <= 23) & (mi <= 59) & (s <= 59)
        time = pl.select(pl.when(valid).then(day + pl.duration(hours=h, minutes=mi, seconds=s))).to_series()
    chunk.undated = int((turn & day.is_null()).sum())
    chunk.bad = int((turn & day.is_not_null() & ~valid).sum())
    return time, day


def clock_time(day: datetime, mon: str | None, dd: str | None, h: str, mi: str, s: str | None) -> datetime | None:
    """A clock-only stamp's time on ``day`` (the day in force); a stamp with its month and day
    (``dec 31 21:11:55``) takes the year only, the next one when its month is before the day's (a
    log opened in December that runs into January). None when the calendar or the clock says no."""
    if mon is None:
        y, m, d = day.year, day.month, day.day
    else:
        m = MONTHS.get(mon.lower())
        if m is None:
            return None
        y, d = day.year + (m < day.month), int(dd)
    return from_parts(y, m, d, int(h), int(mi), int(s or 0))


def _rewritten(body: pl.Series, dialect: str) -> pl.Series:
    """irc._turn's first step: weechat's nick column written as the other dialects write it."""
    if dialect != "weechat":
        return body.str.strip_chars_start(" \t")
    parts = body.str.splitn("\t", 2).struct.rename_fields(["prefix", "text"]).struct.unnest()
    prefix, text = parts["prefix"].str.strip_chars(PY_SPACE), parts["text"].fill_null("")
    bracketed = prefix.str.starts_with("<") & prefix.str.ends_with(">") & (prefix.str.len_chars() > 2)
    return pl.select(
        pl.when(prefix.is_in(WEECHAT_EVENTS)).then(pl.concat_str(prefix, pl.lit(" "), text))
        .when(prefix == "*").then(pl.concat_str(pl.lit("* "), text))
        .when(prefix == "").then(pl.concat_str(pl.lit("-- "), text))
        .when(bracketed).then(pl.concat_str(prefix, pl.lit(" "), text))
        .otherwise(pl.concat_str(pl.lit("<"), prefix, pl.lit("> "), text))).to_series()


WEECHAT_EVENTS = ["-->", "<--", "--", "=!="]
"""weechat's prefixes of lines nobody said: joins, parts and quits, other events, errors."""


def _shaped(chunk: Chunk, body: pl.Series, time: pl.Series, raw: pl.Series, offset, blocks: pl.DataFrame
            ) -> pl.DataFrame:
    """Speaker, role, kind, content and extra of each turn by the first line shape it has."""
    frame = pl.DataFrame({"body": body})
    found = {k: frame.select(pl.col("body").str.extract_groups(p)).unnest("body") for k, p in SHAPES.items()}
    kind = pl.lit("system")
    speaker, content = pl.lit("System"), pl.col("body")
    for name in ("notice", "action", "event", "message"):  # the first shape that matches wins
        hit = found[name]["text"].is_not_null()
        kind = pl.when(hit).then(pl.lit(name)).otherwise(kind)
        content = pl.when(hit).then(found[name]["text"]).otherwise(content)
        if name != "event":
            speaker = pl.when(hit).then(found[name]["nick"]).otherwise(speaker)
        else:
            speaker = pl.when(hit).then(pl.lit("System")).otherwise(speaker)
    out = frame.select(speaker.alias("speaker"), kind.alias("shape"), content.alias("content"))
    shape = out["shape"]
    role = pl.select(pl.when(shape.is_in(["message", "action", "notice"])).then(pl.lit("user"))
                     .otherwise(pl.lit("system"))).to_series()
    kinds = pl.select(pl.when(shape == "event").then(pl.lit("system")).otherwise(shape)).to_series()
    frame = pl.DataFrame({
        "speaker": out["speaker"], "role": role, "kind": kinds, "content": out["content"], "time": time,
        "time_raw": raw, "line_start": blocks["line_start"], "line_end": blocks["line_end"],
        "extra": pl.Series([None] * out.height, dtype=pl.Utf8),
    })
    frame = _events(frame, (shape == "event").arg_true())
    if offset is not None:
        frame = frame.with_columns(offset=offset)
    sys_rows = frame.filter(pl.col("role") == "system")["content"]
    chunk.channels = set(_channels(sys_rows))
    firsts = frame["time"].drop_nulls()
    chunk.first_day = firsts[0].date() if len(firsts) else None
    return frame


def _events(frame: pl.DataFrame, rows: pl.Series) -> pl.DataFrame:
    """The event rows' kind and extra fields, by ``irc.event_of`` (one call per row)."""
    if not len(rows):
        return frame
    from .irc import event_of  # irc imports this module: its own reading of an event, at call time

    read = [event_of(t) for t in frame["content"].gather(rows).to_list()]
    kinds = pl.Series([k for k, _, _ in read], dtype=pl.Utf8)
    extras = pl.Series([orjson.dumps(e).decode() if e else None for _, _, e in read], dtype=pl.Utf8)
    return frame.with_columns(frame["kind"].scatter(rows, kinds), frame["extra"].scatter(rows, extras))


def _channels(texts: pl.Series) -> list[str]:
    found = texts.str.extract_all(CHANNEL).explode().drop_nulls().unique()
    return found.str.strip_chars_start(PY_SPACE + "([").to_list()


def day_setter(body: str) -> Any:
    """The day an irssi logger line's text sets (None: not a calendar date), or ``UNSET`` when it
    names none, as irc.parse reads it."""
    m = _DATE.search(body)
    if m and m["mon"].lower() in MONTHS:
        return from_parts(int(m["year"]), MONTHS[m["mon"].lower()], int(m["day"]))
    return UNSET
