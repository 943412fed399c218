"""Discord text as columns: author lines, continuation stamps, dividers and reply contexts over every line.

The same session as ``discord_text.py``'s line-engine parse (tests compare the two on every golden and
sample input and on generated pastes): the header is the grammar's own without its two lookaheads,
tested on the lines themselves (an author line is no Markdown heading or quote; a reply context is
followed by an author-like line); every turn takes the groups of the author line above it by a
forward fill within its own paste; dates and clocks are read once per distinct value; the midnight
rule of a continuation stamp (its clock earlier than the message before it by the same author line)
is a column too (``_midnight``); the few rows that carry extra fields (edited, a bot tag, a relative
day, a reply) build them in Python. A batch's pastes are one table of lines, each paste's date order
its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import orjson
import polars as pl

from models.records import Region, RegionKind
from parsers.columns import PY_SPACE, LineTable, group_turns, line_headers, per_distinct


@dataclass(slots=True)
class Chunk:
    """A text's turns as a frame (what a streamed read's ranges add up: ``bad`` and ``extras``, none here)."""

    frame: pl.DataFrame
    bad: int = 0
    extras: list[dict] = field(default_factory=list)


def starts(lines: pl.Series, rust: dict[str, str]) -> pl.Series:
    """Author lines (no Markdown heading or quote) and reply-context-shaped lines (whatever is under them;
    the header's reply alternative: not an author line), an author line right under a reply-context-shaped
    line not: a cut there would part the reply from its turn. The lines ``headers`` finds, without captures."""
    shaped = lines.str.contains(rust["author"]).fill_null(False)
    reply = lines.str.contains(rust["reply"]).fill_null(False) & ~shaped
    author = shaped & ~lines.str.contains(rust["markdown"]).fill_null(False)
    return reply | (author & ~reply.shift(1, fill_value=False))


def survey(table: LineTable, heads, flagged: pl.Series) -> list[dict[str, Any]]:
    """Each text's part of a ``PasteSurvey``: its flagged lines, its author lines' names and runs of dates,
    a reply-context-shaped line with no author line under it (the last line of a text waits for the next
    text of its input: ``tail_reply``) and whether its first line is an author line."""
    src = table.source
    g = heads.groups
    author = (g["name"].is_not_null() & heads.ok).fill_null(False)
    reply = g["reply"].is_not_null()
    same = (src.shift(-1) == src).fill_null(False)
    flagged = flagged | (author & ~same.shift(1, fill_value=False))  # a text's first line has no line above it
    orphan = reply & ~(author.shift(-1, fill_value=False) & same)
    g = heads.groups.select("name", "date").with_columns(src=src).filter(author)
    texts = len(table)
    cuts = g["src"].search_sorted(pl.Series(range(texts + 1)), "left").to_list()
    names = g["name"].str.strip_chars(PY_SPACE).to_list()
    runs: list[list[tuple[str, int]]] = [[] for _ in range(texts)]
    dated = g.select("date", "src", pl.int_range(pl.len()).over("src").alias("i")).filter(pl.col("date").is_not_null())
    for date, text, i in dated.filter(((pl.col("date") != pl.col("date").shift(1)) | (pl.col("src") != pl.col("src")
                                       .shift(1))).fill_null(True)).iter_rows():
        runs[text].append((date, i))
    turns, orphans = table.counts(flagged), table.counts(orphan)
    top = max(len(author) - 1, 0)  # an empty text's rows (none) are read as any row: ``some`` drops them
    firsts, lasts = [min(b, top) for b in table.bounds[:-1]], [min(max(b - 1, 0), top) for b in table.bounds[1:]]
    tails = orphan.gather(lasts).to_list() if len(orphan) else [False] * texts
    heads_ = author.gather(firsts).to_list() if len(author) else [False] * texts
    out = []
    for i in range(texts):
        some = table.bounds[i + 1] > table.bounds[i]
        tail = some and tails[i]
        out.append({"turns": turns[i], "names": set(names[cuts[i]:cuts[i + 1]]), "runs": runs[i],
                    "authors": cuts[i + 1] - cuts[i], "tail_reply": tail,
                    "why": NO_REPLY if orphans[i] > tail else None, "head_author": some and heads_[i]})
    return out


NO_REPLY = "a reply-context-shaped line with no author line under it (a chunk cut there would split a message)"


@dataclass(slots=True)
class Paste:
    """What the columnar parse found besides the turn frame, for each text of a line table."""

    frame: pl.DataFrame
    """Every text's turns, in order; ``src`` the text of each."""
    regions: list[list[Region]]
    """Each text's declared regions, in the order the line engine declares them (block order)."""
    runs: list[list[tuple[str, int]]]
    continued: list[bool]
    """Some turn of the text is a continuation stamp (its date is its author line's)."""


def headers(table: LineTable, rust: str, markdown: str, author_like: str):
    """The header lines (``discord_text.HEADER``; the three patterns in Rust's syntax). A reply context
    is followed by an author-like line of its own text."""
    lines = table.lines
    heads = line_headers(lines, rust)
    g = heads.groups
    same_text = (table.source.shift(-1) == table.source).fill_null(False)
    next_author = lines.str.contains(author_like).fill_null(False).shift(-1, fill_value=False) & same_text
    heading = lines.str.contains(markdown).fill_null(False)
    bad = (g["name"].is_not_null() & heading) | (g["reply"].is_not_null() & ~next_author)
    heads.ok = heads.ok & ~bad.fill_null(False)
    return heads


EMPTY_STAMP = ("a time stamp with no text under it: the message it stamps (an attachment, an embed) was not"
               " copied as text, so it is no turn")


def paste(table: LineTable, heads, edited: tuple[str, ...]) -> Paste:
    """The turn frame before times and extra fields, and the declared regions (see the module docstring);
    a continuation stamp takes the author line above it in its own text only."""
    blocks = group_turns(heads.pieces(table.lines), heads.ok, table=table)
    g = heads.groups.filter(heads.ok).with_row_index("block").with_columns(
        at=blocks["at"], src=table.source.filter(heads.ok))
    author = pl.when(pl.col("name").is_not_null()).then(pl.col("block")).forward_fill().over("src")
    g = g.with_columns(author=author, blank=blocks["body"].str.strip_chars(PY_SPACE) == "")
    regions = _regions(table, heads, g, blocks)
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
    frame = pl.DataFrame({
        "speaker": by["name"].str.strip_chars(PY_SPACE),
        "role": pl.select(pl.when(by["tag"].is_not_null()).then(pl.lit("other")).otherwise(pl.lit("user"))
                          ).to_series(),
        "content": body, "time_raw": raw, "line_start": rows["line_start"], "line_end": rows["line_end"],
        "author": rows["author"], "date": by["date"], "clock": by["clock"], "rel": by["rel"], "tag": by["tag"],
        "edited": was_edited, "at": rows["at"], "block": rows["block"], "src": rows["src"],
    })
    continued = [n > 0 for n in table.counts(rows["name"].is_null() & by["rel"].is_null(), rows["src"])]
    return Paste(frame, regions, _runs(frame, len(table)), continued)


def _runs(frame: pl.DataFrame, texts: int) -> list[list[tuple[str, int]]]:
    """(date, index of its first turn in its text) per run of equal dates of the turns' author lines,
    for each text: a run never goes on into the next text."""
    dates = frame.select(pl.col("date"), pl.int_range(pl.len()).over("src").alias("i"), pl.col("src")).filter(
        pl.col("date").is_not_null())
    starts = dates.filter(((pl.col("date") != pl.col("date").shift(1)) | (pl.col("src") != pl.col("src").shift(1)))
                          .fill_null(True))
    out: list[list[tuple[str, int]]] = [[] for _ in range(texts)]
    for date, i, src in starts.iter_rows():
        out[src].append((date, i))
    return out


def _edited(body: pl.Series, markers: tuple[str, ...]) -> tuple[pl.Series, pl.Series]:
    """A trailing edited marker taken off (as a message's text ends), and where one was."""
    stripped = body.str.strip_chars_end(PY_SPACE)
    found = pl.Series([False] * len(body), dtype=pl.Boolean)
    out = body
    for marker in markers:
        hit = stripped.str.ends_with(marker) & ~found
        cut = stripped.str.slice(0, stripped.str.len_chars() - len(marker)).str.strip_chars_end(PY_SPACE)
        out = pl.select(pl.when(hit).then(cut).otherwise(out)).to_series()
        found = found | hit
    return out, found


_PREAMBLE = "text before the first author line (a channel title or a note)"
_EARLY = "a continuation stamp before the first author line"


def _regions(table: LineTable, heads, g: pl.DataFrame, blocks: pl.DataFrame) -> list[list[Region]]:
    """Each text's preamble, date dividers, continuation stamps before any author line and stamps
    with no text (one Python step per such block)."""
    out: list[list[tuple[int, Region]]] = [
        [(-1, Region(RegionKind.PREAMBLE, _PREAMBLE, lines=(1, n)))] if n else [] for n in table.preambles(heads.ok)]
    spans = blocks.select("line_start", "line_end").with_columns(block=g["block"], src=g["src"])
    stamp, author = pl.col("cstamp").is_not_null(), pl.col("author").is_not_null()
    for kind, reason, test in ((RegionKind.BOILERPLATE, "the client's date divider", pl.col("divider").is_not_null()),
                               (RegionKind.PREAMBLE, _EARLY, stamp & ~author),
                               (RegionKind.BOILERPLATE, EMPTY_STAMP, stamp & author & pl.col("blank"))):
        for start, end, block, src in spans.filter(g.select(test.fill_null(False)).to_series()).iter_rows():
            out[src].append((block, Region(kind, reason, lines=(start, end))))
    return [[r for _, r in sorted(mine, key=lambda r: r[0])] for mine in out]


def times(frame: pl.DataFrame, table: LineTable, orders: list[str], day_of, clock
          ) -> tuple[pl.Series, list[int], list[int]]:
    """Each turn's time (its author line's date in its text's day/month order, its own clock; a clock
    earlier than the message before it by the same author line means midnight passed), and each
    text's counts of relative-day and unreadable turns."""
    order = pl.Series(orders, dtype=pl.Utf8).gather(frame["src"])
    keyed = pl.select(pl.concat_str(order, frame["date"], separator="|")).to_series()
    day = per_distinct(keyed, lambda k: day_of(k[4:], k[:3]), pl.Datetime("us"))
    # the author line's own stamp reads its clock group; a continuation stamp is a clock itself
    is_author = frame["block"] == frame["author"]
    text = pl.select(pl.when(is_author).then(frame["clock"]).otherwise(frame["time_raw"])).to_series()
    delta = per_distinct(text, clock, pl.Duration("us"))
    base = pl.select(pl.when(frame["rel"].is_null()).then(day + delta)).to_series()
    relative = frame["rel"].is_not_null()
    return (_midnight(base, frame["author"]), table.counts(relative, frame["src"]),
            table.counts(~relative & base.is_null(), frame["src"]))


WRAP = timedelta(hours=12)
"""A continuation stamp more than this much earlier than the message before it (23:50, then 00:10)
wrapped past midnight; a smaller step back (13:30, then 13:00) stays on its author line's day: no
date is invented for it."""


def _midnight(base: pl.Series, author: pl.Series) -> pl.Series:
    """A continuation's time one day on when its clock wrapped past midnight after the readable turn
    before it, of the same author line, as columns. Every turn of an author
    line is on its day, and one wrap moves a turn by one day at most: a turn is moved when the last
    step of its author line's clock that was more than ``WRAP`` back or at least ``WRAP`` on was
    back (a step back after a moved turn, compared with that turn's time, is the same step)."""
    f = pl.DataFrame({"t": base, "a": author}).with_row_index("r").filter(pl.col("t").is_not_null())
    step = pl.col("t") - pl.col("t").shift(1).over("a")
    f = f.with_columns(moved=pl.when(step < -WRAP).then(True).when(step >= WRAP).then(False))
    f = f.with_columns(moved=pl.col("moved").forward_fill().over("a").fill_null(False))
    moved = f.filter(pl.col("moved"))
    if not moved.height:
        return base.alias("time")
    return base.scatter(moved["r"], moved["t"] + timedelta(days=1)).alias("time")


def extras(frame: pl.DataFrame, replies: dict[int, tuple[str, int]], names: list[list[str]]
           ) -> tuple[pl.Series, pl.Series]:
    """The extra fields of the rows that have any (in the line engine's key order), built in Python for
    those rows only, and each turn's first line (a reply context above it is part of the turn)."""
    flagged = (frame["edited"] | frame["tag"].is_not_null() | frame["rel"].is_not_null()).arg_true().to_list()
    rows = sorted(set(flagged) | set(replies))
    starts = frame["line_start"]
    if not rows:
        return pl.repeat(None, frame.height, dtype=pl.Utf8, eager=True).alias("extra"), starts
    picked = frame.select("edited", "tag", "rel", "src").gather(rows)
    out, moved, first = [], [], []
    for i, (edited, tag, rel, src) in zip(rows, picked.iter_rows(), strict=True):
        extra: dict[str, Any] = {}
        if edited:
            extra["edited"] = True
        if tag:
            extra["bot"] = tag
        if rel:
            extra["relativeDay"] = rel
        if (reply := replies.get(i)) is not None:
            to = next((n for n in names[src] if reply[0] == n or reply[0].startswith(n + " ")),
                      reply[0].split(" ", 1)[0])
            extra["replyTo"] = to
            extra["replyPreview"] = reply[0][len(to):].strip() or None
            moved.append(i)
            first.append(reply[1])
        out.append(orjson.dumps(extra).decode() if extra else None)
    extra = pl.repeat(None, frame.height, dtype=pl.Utf8, eager=True).scatter(rows, pl.Series(out, dtype=pl.Utf8))
    if moved:
        starts = starts.scatter(moved, pl.Series(first, dtype=starts.dtype))
    return extra.alias("extra"), starts


def replies(heads, table: LineTable, frame: pl.DataFrame) -> dict[int, tuple[str, int]]:
    """Turn index -> (reply context, its line in its text): a context belongs to the next turn of its
    text (the last one before it wins)."""
    g = heads.groups.filter(heads.ok).with_row_index("block").with_columns(
        line=table.row_in_text().filter(heads.ok) + 1, src=table.source.filter(heads.ok)).filter(
        pl.col("reply").is_not_null())
    if not g.height:
        return {}
    turn = frame["block"].search_sorted(g["block"], "right")
    found = g.with_columns(turn=turn).filter(pl.col("turn") < frame.height)
    found = found.filter(frame["src"].gather(found["turn"]) == found["src"])
    return {i: (text.strip(), line) for i, text, line in found.select("turn", "reply", "line").iter_rows()}
