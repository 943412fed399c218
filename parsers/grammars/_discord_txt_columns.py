"""DiscordChatExporter plain text as columns: the pages of a table of lines, each page's turns one frame.

A page is one text of a ``LineTable``: a whole export file (a batch's inputs, a partitioned export's
parts) or a chunk of a streamed one. Its header lines (``[date] author``) start its turns, each running to
the next header or to the exporter's closing lines (``posts``: the line they start at, known from the
whole file's survey); the lines before its first header are its preamble. Plain messages are columns;
the few that hold a section block (``{Attachments}``...) or read as a system notification are built by
the grammar's own ``message`` in Python, row by row, and put back into the columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson
import polars as pl

from parsers.columns import OFFSET, PY_SPACE, TURN_SCHEMA, LineTable, group_turns, line_headers

_SPACE = "".join(f"\\x{{{ord(c):x}}}" for c in PY_SPACE if c != "\n")
BLANK_TAIL = rf"(?:^|\n)[{_SPACE}]*(?:\n[{_SPACE}]*)*$"
"""The blank lines that end a message's text (all of it when it is blank), as ``str.strip`` sees blank."""
PINNED = orjson.dumps({"pinned": True}).decode()


class Message(NamedTuple):
    """A message's turn fields but its time (``discord_txt.message``)."""

    speaker: str
    role: str
    kind: str
    content: str
    extra: dict[str, Any] | None


@dataclass(slots=True)
class Page:
    """One text's turns (``TURN_SCHEMA``) and what the grammar declares of it."""

    frame: pl.DataFrame
    preamble: list[str] | None
    """The lines before its first header, when any holds more than white space."""
    first_line: int
    rows: int
    unread: int
    """Its turns whose time could not be read."""


def pages(table: LineTable, rust: dict[str, str], posts: list[int | None], first_line: int,
          read_time: list[Callable], message: Callable[..., Message]) -> list[Page]:
    """Each text's page (see the module docstring): ``posts[i]`` the line text ``i``'s closing lines start
    at (None: none in it), ``read_time[i]`` its stamps' reader (its export's day/month order), ``message``
    the grammar's own reader of a message for the rows with section blocks or a notice."""
    lines = table.lines
    heads = line_headers(lines, rust["header"])
    edge = heads.ok | _closing(table, posts, first_line)
    blocks = group_turns(heads.pieces(lines), edge, first_line, table=table)
    src = table.source.gather(blocks["at"])
    keep = heads.ok.gather(blocks["at"])
    g = heads.groups.gather(blocks["at"]).filter(keep)
    blocks, src = blocks.filter(keep), src.filter(keep)
    body = blocks["body"]
    text = pl.select(pl.when(body.str.starts_with("\n")).then(body.str.slice(1)).otherwise(body)
                     .str.replace(BLANK_TAIL, "")).to_series()
    keyed = pl.select(pl.concat_str(src.cast(pl.Utf8), pl.lit("|"), g["stamp"])).to_series()
    time, offset = _times(keyed, read_time)
    frame = pl.DataFrame({
        "speaker": g["author"], "role": pl.repeat("user", len(g), dtype=pl.Utf8, eager=True),
        "kind": pl.repeat("message", len(g), dtype=pl.Utf8, eager=True), "content": text, "time": time,
        "time_raw": g["stamp"], "line_start": blocks["line_start"], "line_end": blocks["line_end"],
        "extra": pl.select(pl.when(g["pinned"].is_not_null()).then(pl.lit(PINNED))).to_series(), "offset": offset,
    }, schema=TURN_SCHEMA | OFFSET)
    odd = (text.str.contains(rust["sections"]) | text.str.contains(rust["notice"])).fill_null(False)
    frame = _by_message(frame, odd.arg_true().to_list(), g["pinned"], message)
    cuts = table.split(blocks["at"])
    unread = table.counts(time.is_null(), src)
    firsts = table.preambles(edge)
    return [Page(frame.slice(cuts[i], cuts[i + 1] - cuts[i]),
                 table.lines_of(i).head(firsts[i]).to_list() if firsts[i] else None, first_line,
                 table.bounds[i + 1] - table.bounds[i], unread[i])
            for i in range(len(table))]


def _times(keyed: pl.Series, read_time: list[Callable]) -> tuple[pl.Series, pl.Series]:
    """Each turn's wall time and UTC offset (seconds; null for a naive time), its stamp read once per distinct
    (text, stamp): ``keyed`` is ``<text>|<stamp>``."""
    keys = keyed.unique().drop_nulls().to_list()
    read = [read_time[int(k.split("|", 1)[0])](k.split("|", 1)[1]) for k in keys]
    walls = [t.replace(tzinfo=None) if t is not None else None for t in read]
    offsets = [int(t.utcoffset().total_seconds()) if t is not None and t.utcoffset() is not None else None
               for t in read]
    return (keyed.replace_strict(keys, walls, default=None, return_dtype=pl.Datetime("us")),
            keyed.replace_strict(keys, offsets, default=None, return_dtype=pl.Int64))


def _closing(table: LineTable, posts: list[int | None], first_line: int) -> pl.Series:
    """The first of each text's closing lines (the exporter's count), where its turns end."""
    b = table.bounds
    rows = [b[i] + post - first_line for i, post in enumerate(posts)
            if post is not None and b[i] <= b[i] + post - first_line < b[i + 1]]
    flags = pl.repeat(False, len(table.lines), dtype=pl.Boolean, eager=True)
    return flags.scatter(rows, True) if rows else flags


def _by_message(frame: pl.DataFrame, rows: list[int], pinned: pl.Series, message: Callable[..., Message]
                ) -> pl.DataFrame:
    """The rows with a section block or a notice, each read by ``message`` from its columns."""
    if not rows:
        return frame
    picked = frame.select("speaker", "content").gather(rows)
    flags = pinned.gather(rows).is_not_null().to_list()
    made = [message(author, flag, "\n" + text) for (author, text), flag in zip(picked.iter_rows(), flags, strict=True)]
    at = pl.Series(rows, dtype=pl.UInt32)
    return frame.with_columns(
        frame[name].scatter(at, pl.Series(values, dtype=pl.Utf8)) for name, values in (
            ("speaker", [m.speaker for m in made]), ("role", [m.role for m in made]),
            ("kind", [m.kind for m in made]), ("content", [m.content for m in made]),
            ("extra", [orjson.dumps(m.extra).decode() if m.extra else None for m in made])))
