"""IRC as columns: the dialect's header over every line, line shapes as Rust patterns, times as columns.

The same turns as ``irc.py``'s line-engine parse (tests compare the two on every golden, sample and
conformance input, and on generated logs): the header is the dialect's own pattern translated by
``parsers.columns.rust_pattern``; the message, action, notice and event shapes are matched as
columns (their Rust forms below spell Python's ``\\s`` as ``str.isspace`` sees it); the event lines
(joins, quits, modes...) go through ``irc.event_of`` in Python, one per row; ISO stamps are read as
a column (``columns.iso_times``); irssi's clock times take the day of the last ``Day changed`` /
``Log opened`` line above them in their own log, carried from chunk to chunk by ``Chunk.day``.
A batch's logs of one dialect are one table of lines (``turn_frames``); a streamed chunk is a table
of one text (``turn_frame``).
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
    LineTable,
    group_turns,
    iso_times,
    line_headers,
    per_distinct,
    rust_pattern,
)
from parsers.timeparse import from_parts, parse_iso

_WS = "".join(f"\\x{{{ord(c):x}}}" for c in PY_SPACE)
# An IRC line's shapes (message, event, action, notice) in Rust's syntax, tried in this order.
SHAPES = {
    "message": rf"(?s)^<[ ]?[@+%~&!]?(?P<nick>[^{_WS}>]+)>[ \t]?(?P<text>.*)$",
    "event": r"(?s)^(?:\*\*\*|-!-|=!=|-->|<--|---|--)[ \t]+(?P<text>.*)$",
    "action": rf"(?s)^\*[ \t]*(?P<nick>[^{_WS}*]+)[ \t]?(?P<text>.*)$",
    # The closing dash is the one before a blank: a nick may hold dashes (``-repo-bot- pushed ...``).
    "notice": rf"(?s)^-(?P<nick>[^{_WS}\-][^{_WS}]*?)(?:\([^)]*\))?-(?:[ \t]|$)(?P<text>.*)$",
}
# irc._CHANNEL without its lookbehind: the character before a channel is consumed, then dropped.
CHANNEL = rf"(?:^|[{_WS}(\[])[#&][^{_WS},:\]]+"
_DATE = re.compile(r"(?P<mon>[A-Z][a-z]{2}) +(?P<day>\d{1,2})(?: \d{2}:\d{2}:\d{2})? (?P<year>\d{4})")
MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}


def rust_headers(dialects: dict[str, re.Pattern]) -> dict[str, str]:
    return {name: rust_pattern(p) for name, p in dialects.items()}


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
               from_name: bool = False) -> Chunk:
    """The turn frame of these lines (``first_line``: the number of the first); ``day``: the day in
    force before them (a logger line's, or the file name's when ``from_name``): ``turn_frames`` of a
    table of one text."""
    return turn_frames(LineTable.of_lines(lines), dialect, rust, [day], [from_name], first_line)[0]


def turn_frames(table: LineTable, dialect: str, rust: str, days: list, from_names: list[bool], first_line: int = 1
                ) -> list[Chunk]:
    """The chunk of each text of a line table, all in one dialect: each text's clock times take its own
    day (``days[i]``, the file name's when ``from_names[i]``) until a logger line of its own sets one."""
    heads = line_headers(table.lines, rust)
    blocks = group_turns(heads.pieces(table.lines), heads.ok, first_line, table)
    chunks = [Chunk(pl.DataFrame(schema=TURN_SCHEMA), day=d, from_name=f)
              for d, f in zip(days, from_names, strict=True)]
    if first_line == 1:
        _preambles(chunks, table, heads)
    g, src = heads.groups.filter(heads.ok), table.source.filter(heads.ok)
    offset = None
    if dialect in ("irssi", "bracketed", "xchat"):  # irc.CLOCK_ONLY
        marker = g["marker"].is_not_null()
        _markers(chunks, table, blocks.filter(marker), src.filter(marker), dialect)
        time = _clock_times(chunks, table, g, marker, blocks["body"], src).filter(~marker)
        g, blocks, src = g.filter(~marker), blocks.filter(~marker), src.filter(~marker)
        raw = g["clock"]
    else:
        if "marker" in g.columns:  # weechat's info lines
            marker = g["marker"].is_not_null()
            _markers(chunks, table, blocks.filter(marker), src.filter(marker), dialect)
            g, blocks, src = g.filter(~marker), blocks.filter(~marker), src.filter(~marker)
        raw = g["ts"]
        time, offset = iso_times(raw, parse_iso)
        for chunk, bad in zip(chunks, table.counts(time.is_null(), src), strict=True):
            chunk.bad = bad
    frame = _shaped(chunks, table, _rewritten(blocks["body"], dialect), time, raw, offset, blocks, src)
    cuts = table.split(blocks["at"])
    for i, chunk in enumerate(chunks):
        chunk.frame = frame.slice(cuts[i], cuts[i + 1] - cuts[i])
    return chunks


def _preambles(chunks: list[Chunk], table: LineTable, heads: LineHeaders) -> None:
    """Lines before the first header of each text: its preamble, when not blank."""
    for i, (chunk, n) in enumerate(zip(chunks, table.preambles(heads.ok), strict=True)):
        if n:
            chunk.preamble = "\n".join(table.lines.slice(table.bounds[i], n).to_list())
            chunk.regions.append(Region(RegionKind.PREAMBLE, "text before the first log line", lines=(1, n)))


def _markers(chunks: list[Chunk], table: LineTable, blocks: pl.DataFrame, src: pl.Series, dialect: str) -> None:
    """The logger's own lines of each text: counted, and declared (one Python step per such line)."""
    for chunk, n in zip(chunks, table.counts(pl.repeat(True, len(src), eager=True), src), strict=True):
        chunk.markers = n
    reason = marker_reason(dialect)
    for i, start, end in zip(src.to_list(), blocks["line_start"].to_list(), blocks["line_end"].to_list(),
                             strict=True):
        chunks[i].regions.append(Region(RegionKind.BOILERPLATE, reason, lines=(start, end)))


def marker_reason(dialect: str) -> str:
    """Why a logger line of this dialect is a declared region, not a turn."""
    if dialect == "xchat":
        return ("xchat's own BEGIN/ENDING LOGGING line: it gives the year of the stamps that follow, nobody "
                "said it")
    if dialect == "weechat":
        return "weechat's own Beginning/End of log info line: nobody said it"
    return "irssi's own Log opened/closed or Day changed line: it dates the clock times that follow, nobody said it"


UNSET = object()


def _clock_times(chunks: list[Chunk], table: LineTable, g: pl.DataFrame, marker: pl.Series, bodies: pl.Series,
                 src: pl.Series) -> pl.Series:
    """Every header's time: the day the last logger line above it in its text set (its chunk's
    ``day`` before the first), plus its clock; counts each text's undated and unreadable turns and
    leaves each chunk the day in force at its end. Python runs once per logger line."""
    rows = marker.arg_true().to_list()
    sets = [(r, s) for r, s in zip(rows, map(day_setter, bodies.gather(rows).to_list()), strict=True) if s is not UNSET]
    n = len(marker)
    setter = pl.repeat(None, n, dtype=pl.Int64, eager=True)
    values = pl.repeat(None, n, dtype=pl.Datetime("us"), eager=True)
    if sets:
        at = [r for r, _ in sets]
        setter = setter.scatter(at, at)
        values = values.scatter(at, pl.Series([s for _, s in sets], dtype=pl.Datetime("us")))
    last = pl.DataFrame({"i": setter, "s": src}).select(pl.col("i").forward_fill().over("s")).to_series()
    start = pl.Series([c.day for c in chunks], dtype=pl.Datetime("us")).gather(src)
    day = pl.select(pl.when(last.is_null()).then(start).otherwise(values.gather(last.fill_null(0)))).to_series()
    turn = ~marker
    named = table.counts(turn & last.is_null() & day.is_not_null(), src)
    for chunk, count in zip(chunks, named, strict=True):
        chunk.named = count if chunk.from_name else 0
    owners = src.gather([r for r, _ in sets]).to_list()
    for i, (_, s) in zip(owners, sets, strict=True):  # the last logger line of a text leaves its day
        chunks[i].day, chunks[i].from_name = s, False
    time = _stamp_times(g, day) if "mon" in g.columns else _clock_on(day, g)
    valid = time.is_not_null()
    for chunk, undated, bad in zip(chunks, table.counts(turn & day.is_null(), src),
                                   table.counts(turn & day.is_not_null() & ~valid, src), strict=True):
        chunk.undated, chunk.bad = undated, bad
    return time


def _clock_on(day: pl.Series, g: pl.DataFrame) -> pl.Series:
    """The clock of each header on its day; null when the clock is no clock time."""
    h, mi, s = (g[c].cast(pl.Int64, strict=False) for c in ("h", "mi", "s"))
    s = s.fill_null(0)
    valid = (h <= 23) & (mi <= 59) & (s <= 59)
    return pl.select(pl.when(valid).then(day + pl.duration(hours=h, minutes=mi, seconds=s))).to_series()


def _stamp_times(g: pl.DataFrame, day: pl.Series) -> pl.Series:
    """``clock_time`` of each xchat stamp (its month and day, the year of the day in force), its date
    read once per distinct (year, month, day)."""
    month = g["mon"].str.to_lowercase().replace_strict(list(MONTHS), list(MONTHS.values()), default=None,
                                                       return_dtype=pl.Int64)
    year = day.dt.year().cast(pl.Int64) + (month < day.dt.month().cast(pl.Int64)).cast(pl.Int64)
    dd = g["dd"].str.strip_chars(" ").cast(pl.Int64, strict=False)
    key = pl.select(pl.concat_str(year, month, dd, separator="-")).to_series()
    date = per_distinct(key, lambda k: from_parts(*map(int, k.split("-"))), pl.Datetime("us"))
    return _clock_on(date, g)


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


def _shaped(chunks: list[Chunk], table: LineTable, body: pl.Series, time: pl.Series, raw: pl.Series, offset,
            blocks: pl.DataFrame, src: pl.Series) -> pl.DataFrame:
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
    system = (frame["role"] == "system").fill_null(False)
    for i, channel in _channels(frame["content"].filter(system), src.filter(system)):
        chunks[i].channels.add(channel)
    dated = frame["time"].is_not_null()
    firsts = pl.DataFrame({"s": src.filter(dated), "t": frame["time"].filter(dated)}).unique("s", keep="first",
                                                                                             maintain_order=True)
    for i, first in firsts.iter_rows():
        chunks[i].first_day = first.date()
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


def _channels(texts: pl.Series, src: pl.Series | None = None) -> list:
    """The distinct channels the texts name (with ``src``: (text index, channel) pairs)."""
    found = pl.DataFrame({"s": src if src is not None else pl.zeros(len(texts), pl.UInt32, eager=True),
                          "c": texts.str.extract_all(CHANNEL)}).explode("c").drop_nulls("c")
    found = found.with_columns(pl.col("c").str.strip_chars_start(PY_SPACE + "([")).unique(maintain_order=True)
    return found["c"].to_list() if src is None else found.rows()


def day_setter(body: str) -> Any:
    """The day an irssi logger line's text sets (None: not a calendar date), or ``UNSET`` when it
    names none, as irc.parse reads it."""
    m = _DATE.search(body)
    if m and m["mon"].lower() in MONTHS:
        return from_parts(int(m["year"]), MONTHS[m["mon"].lower()], int(m["day"]))
    return UNSET
