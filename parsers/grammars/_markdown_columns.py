"""Markdown transcripts as columns: each turn's lines joined, trimmed and timed over a table of lines.

The same turns as the turn-by-turn parse (``tests/oracle/markdown.py``; tests compare the two on every
golden, sample and conformance input): the grammar decides in Python, from the few lines that may be
fences or role labels, which rows start turns (``Start``); everything done to every line is a polars
step over the whole table: a turn's rows up to the next start, the separators ending it (blank lines,
rules, navigation, exchange headings; on a session's last turn the exporter's footer too) left out and
declared, a bold label's text on its line, a quoted prompt's ``>`` marks, an exporter's
``<time datetime>`` line under the heading, the join of the lines. Names, roles and models are the
starts' own; times are read once per distinct stamp (``parsers.columns.iso_times``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

import orjson
import polars as pl
import regex

from models.records import ModelRef, Region, RegionKind
from parsers.columns import MODEL, OFFSET, PY_SPACE, TURN_SCHEMA, LineTable, iso_times, rust_pattern
from parsers.timeparse import parse_iso

SCHEMA = {**TURN_SCHEMA, **OFFSET, **MODEL}
KINDS = {"system": "system", "tool": "tool_result"}
"""A turn's kind by its role (any other role: a message)."""


@dataclass(slots=True)
class Start:
    """A row that starts a turn, with the candidate it reads as (``markdown.Candidate``)."""

    row: int
    head: object
    inline: str | None = None
    """The exchange dialect's turns without a label: "quote" (a quoted prompt) or "text"."""


@dataclass(slots=True)
class Text:
    """What a text of the table decided for itself."""

    first_line: int
    ends: bool
    """Whether the text ends its session (its last turn is the session's: the footer is declared)."""
    zone: ZoneInfo | None = None
    model: ModelRef | None = None
    """The model of assistant turns that name none."""


@dataclass(slots=True)
class Chunk:
    """A text's turns (``frame``) and the separators ending them, declared."""

    frame: pl.DataFrame
    bad: int = 0
    extras: list = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    unread: int = 0
    """Turns whose time could not be read."""


@dataclass(frozen=True, slots=True)
class Furniture:
    """The line patterns of separators: rules, navigation, exchange headings (every line), the footer (a
    session's last turn) and the time tag (a turn's first line), in Python's syntax."""

    separator: str
    """``markdown._furniture`` in Rust's syntax."""
    banner: regex.Pattern
    time_tag: regex.Pattern
    reason: str
    """Why the separators ending a turn are declared."""


def furniture(separators: tuple[regex.Pattern, ...], banner: regex.Pattern, time_tag: regex.Pattern,
              reason: str) -> Furniture:
    """The patterns, the separators' translated once (``parsers.columns.rust_pattern``)."""
    return Furniture("|".join(f"(?:{rust_pattern(p)})" for p in separators), banner, time_tag, reason)


_BLANK = pl.col("line").str.strip_chars(PY_SPACE).str.len_bytes() == 0
_WORDY = r"(?i)(?:export|generat|creat|sav|download|convert|archiv|powered|made)"
"""What a banner line must hold (``markdown.BANNER``'s words), to ask it of no other line."""


def turn_frames(table: LineTable, starts: list[Start], texts: list[Text], marks: Furniture) -> list[Chunk]:
    """Each text's turns: ``starts`` (ascending rows of the table) start them; a turn runs to the next
    start of its text or the text's end."""
    at = pl.Series("at", [s.row for s in starts], dtype=pl.Int64)
    cuts = table.split(at) if starts else [0] * (len(texts) + 1)
    if not starts:
        return [Chunk(pl.DataFrame(schema=SCHEMA)) for _ in texts]
    of_text = [i for i in range(len(texts)) for _ in range(cuts[i + 1] - cuts[i])]
    offset = pl.Series([t.first_line - b for t, b in zip(texts, table.bounds, strict=False)], dtype=pl.Int64)
    rows = _rows(table, at, cuts, marks)
    cut = _cuts(rows, at, [cuts[i + 1] - 1 for i, t in enumerate(texts) if t.ends and cuts[i + 1] > cuts[i]], marks)
    content, tags = _content(rows, starts, cut, marks)
    stamps = pl.Series([tags.get(t, s.head.stamp) for t, s in enumerate(starts)], dtype=pl.Utf8)
    time, zone_offset = _times(stamps, of_text, texts)
    base = at + offset.gather(of_text)
    frame = pl.DataFrame({
        **_speakers(starts, [texts[i].model for i in of_text]), "content": content, "time": time,
        "time_raw": stamps, "line_start": base, "line_end": base + (cut - 1).clip(lower_bound=0),
        "extra": pl.repeat(None, len(starts), dtype=pl.Utf8, eager=True), "offset": zone_offset,
    }).select(*SCHEMA)
    regions = _tails(rows, cut, base, marks)
    unread = (time.is_null() & stamps.is_not_null()).cast(pl.Int64)
    out = []
    for i in range(len(texts)):
        a, b = cuts[i], cuts[i + 1]
        out.append(Chunk(frame.slice(a, b - a), regions=[r for t in range(a, b) for r in regions.get(t, ())],
                         unread=int(unread.slice(a, b - a).sum())))
    return out


def _rows(table: LineTable, at: pl.Series, cuts: list[int], marks: Furniture) -> pl.DataFrame:
    """The rows in turns: ``t`` the turn, ``k`` the row's place in it, ``sep`` a separator line."""
    n = len(table.lines)
    is_start = pl.repeat(False, n, dtype=pl.Boolean, eager=True).scatter(at, True)
    turn = is_start.cast(pl.Int64).cum_sum() - 1
    first = pl.Series(cuts[:-1], dtype=pl.Int64).gather(table.source)  # each row's text's first turn
    return (pl.DataFrame({"line": table.lines, "t": turn}).with_row_index("row").filter(turn >= first)
            .with_columns(k=pl.col("row").cast(pl.Int64) - pl.lit(at).gather(pl.col("t")),
                          sep=_BLANK | pl.col("line").str.contains(marks.separator)))


def _cuts(rows: pl.DataFrame, at: pl.Series, last: list[int], marks: Furniture) -> pl.Series:
    """How many rows of each turn are its text: up to its last row that is no separator; on a
    session's last turn (``last``) a banner is a separator too."""
    per = rows.group_by("t", maintain_order=True).agg(
        (pl.col("k").filter(~pl.col("sep")).max() + 1).fill_null(0).alias("cut"), pl.len().alias("n"))
    cut = per["cut"].cast(pl.Int64)
    if not last:
        return cut
    place = pl.concat([pl.Series([0], dtype=pl.Int64), per["n"].cast(pl.Int64).cum_sum()]).to_list()
    lines, sep = rows["line"], rows["sep"]
    moved = {}
    for t in last:
        j = cut[t] - 1
        while j >= 0 and (sep[place[t] + j] or marks.banner.match(lines[place[t] + j])):
            j -= 1
        moved[t] = j + 1
    return cut.scatter(list(moved), list(moved.values()))


def _content(rows: pl.DataFrame, starts: list[Start], cut: pl.Series, marks: Furniture
             ) -> tuple[pl.Series, dict[int, str]]:
    """Each turn's text, and the stamps of the time tags under headings without a time."""
    rest = pl.Series([s.head.rest or None for s in starts], dtype=pl.Utf8)
    inline = pl.Series([s.inline is not None for s in starts], dtype=pl.Boolean)
    quote = pl.Series([s.inline == "quote" for s in starts], dtype=pl.Boolean)
    t, k = pl.col("t"), pl.col("k")
    own_rest = (k == 0) & pl.lit(rest).gather(t).is_not_null()
    body = rows.filter(own_rest | ((k < pl.lit(cut).gather(t)) & ((k >= 1) | pl.lit(inline).gather(t)))).select(
        t, k, pl.when(own_rest).then(pl.lit(rest).gather(t))
        .when(pl.lit(quote).gather(t)).then(pl.col("line").str.replace(r"^>[ \t]?", ""))
        .otherwise(pl.col("line")).alias("piece"))
    tags = _time_tags(body, [s.head.stamp is None for s in starts], marks)
    if tags:  # the tag line and the blank lines above it are not text
        upto = pl.repeat(-1, len(starts), dtype=pl.Int64, eager=True).scatter(list(tags), [k for _, k in tags.values()])
        body = body.filter(k > pl.lit(upto).gather(t))
    joined = body.group_by("t", maintain_order=True).agg(pl.col("piece").str.join("\n"))
    content = pl.repeat("", len(starts), dtype=pl.Utf8, eager=True).scatter(joined["t"], joined["piece"])
    return content.str.strip_chars("\n").alias("content"), {n: dt for n, (dt, _) in tags.items()}


def _time_tags(body: pl.DataFrame, stampless: list[bool], marks: Furniture) -> dict:
    """turn -> (the stamp of its time tag, the tag's place): the first non-blank line of a turn without
    a time, when it is an exporter's ``<time datetime=...>`` line."""
    lead = body.filter(pl.col("piece").str.strip_chars(PY_SPACE).str.len_bytes() > 0).group_by(
        "t", maintain_order=True).first()
    lead = lead.filter(pl.lit(pl.Series(stampless, dtype=pl.Boolean)).gather(pl.col("t"))
                       & pl.col("piece").str.contains("<time", literal=True))
    out = {}
    for t, k, piece in lead.select("t", "k", "piece").iter_rows():
        if (m := marks.time_tag.match(piece)) is not None:
            out[t] = (m["dt"], k)
    return out


def _tails(rows: pl.DataFrame, cut: pl.Series, base: pl.Series, marks: Furniture) -> dict[int, list[Region]]:
    """The separators ending each turn, declared: one region from their first to their last non-blank
    line, holding what its banners say."""
    t, k = pl.col("t"), pl.col("k")
    tail = rows.filter((k >= pl.lit(cut).gather(t)) & ~_BLANK)
    if not tail.height:
        return {}
    spans = tail.group_by("t", maintain_order=True).agg(k.first().alias("a"), k.last().alias("b"))
    said: dict[int, list[str]] = {}
    for n, line in tail.filter(pl.col("line").str.contains(_WORDY)).select("t", "line").iter_rows():
        if marks.banner.match(line):
            said.setdefault(n, []).append(line)
    lines = base.to_list()
    out: dict[int, list[Region]] = {}
    for n, a, b in spans.iter_rows():
        out[n] = [Region(RegionKind.BOILERPLATE, marks.reason, lines=(lines[n] + a, lines[n] + b),
                         content="\n".join(said[n]) if n in said else None)]
    return out


def _speakers(starts: list[Start], models: list[ModelRef | None]) -> dict[str, pl.Series]:
    """Speaker, role, kind and model of each turn: its start's (read once per distinct candidate), the text's
    model for an assistant naming none."""
    read: dict[tuple[int, int], tuple] = {}
    rows = []
    for s, default in zip(starts, models, strict=True):
        key = (id(s.head), id(default))
        if key not in read:
            c, role = s.head, s.head.speaker_role
            model = c.model if c.model is not None or role != "assistant" else default
            read[key] = (c.name, role, KINDS.get(role, "message"), _named(model))
        rows.append(read[key])
    names = ("speaker", "role", "kind", "model")
    if not rows:
        return {n: pl.Series(n, [], pl.Utf8) for n in names}
    return {n: pl.Series(n, list(column), pl.Utf8) for n, column in zip(names, zip(*rows, strict=True), strict=True)}


def _named(model: ModelRef | None) -> str | None:
    return orjson.dumps([model.provider, model.name, model.version]).decode() if model is not None else None


def _times(stamps: pl.Series, of_text: list[int], texts: list[Text]) -> tuple[pl.Series, pl.Series]:
    """(time, UTC offset) of each stamp, read in its text's front-matter zone."""
    zones = [texts[i].zone for i in of_text]
    if len(set(zones)) == 1:
        return iso_times(stamps, _reader(zones[0]), fast=zones[0] is None)
    time = pl.repeat(None, len(stamps), dtype=pl.Datetime("us"), eager=True).alias("time")
    offset = pl.repeat(None, len(stamps), dtype=pl.Int64, eager=True).alias("offset")
    for zone in set(zones):
        at = pl.Series([n for n, z in enumerate(zones) if z == zone], dtype=pl.Int64)
        t, o = iso_times(stamps.gather(at), _reader(zone), fast=zone is None)
        time, offset = time.scatter(at, t), offset.scatter(at, o)
    return time, offset


def _reader(zone: ZoneInfo | None):
    def read(raw: str):
        when = parse_iso(raw)
        if when is not None and when.tzinfo is None and zone is not None:
            when = when.replace(tzinfo=zone)
        return when
    return read
