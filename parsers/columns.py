"""Turns as columns for the line grammars: the columnar twin of the line engine (parsers/engine.py).

A text is split into a column of lines; a grammar's header regex, translated to Rust's regex
syntax (polars), is matched against every line at once; continuation lines are attached to the
header above them by a cumulative sum over the header flags; each turn's body is the join of its
lines. No Python runs per line or per turn: a grammar runs Python once per *distinct* value (a
date, a clock, an author) and for the rare rows its vectorised tests flag (a notice, an
attachment), and falls back to its line-engine parse for what the Rust pattern cannot express.

The turn frame (``TURN_SCHEMA``) is what the columnar assembler (normalizers/columns.py) reads:
one row per turn, in source order, ``time`` naive (the source zone applies), ``extra`` the turn's
extra fields as a JSON object string. ``turns_of`` turns it back into ``Turn`` records (tests and
fallbacks compare the two paths with it).
"""

from __future__ import annotations

import orjson
import polars as pl

from models.records import Turn

TURN_SCHEMA = {
    "speaker": pl.Utf8, "role": pl.Utf8, "kind": pl.Utf8, "content": pl.Utf8, "time": pl.Datetime("us"),
    "time_raw": pl.Utf8, "line_start": pl.Int64, "line_end": pl.Int64, "extra": pl.Utf8,
}
# Python's str.isspace() characters: what ``line.strip()`` removes (Rust's White_Space differs).
PY_SPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
            "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def split_lines(text: str) -> pl.Series:
    """The lines of a text; a final line end does not start another line (``_lines.line_count``)."""
    if not text:
        return pl.Series("line", [], pl.Utf8)
    lines = pl.Series("line", [text]).str.split("\n").explode()
    return lines.head(-1) if text.endswith("\n") else lines


def nonblank(lines: pl.Series) -> pl.Series:
    """Whether each line holds anything but whitespace, as Python's ``str.strip`` sees it."""
    return lines.str.strip_chars(PY_SPACE).str.len_bytes() > 0


def extract(lines: pl.Series, pattern: str) -> pl.DataFrame | None:
    """The named groups of ``pattern`` (Rust syntax, anchored by the caller) on every line, one
    column each (null where a line does not match); None when Rust's regex refuses the pattern."""
    try:
        return pl.DataFrame({"line": lines}).select(pl.col("line").str.extract_groups(pattern)).unnest("line")
    except pl.exceptions.ComputeError:
        return None


def group_turns(pieces: pl.Series, is_header: pl.Series, first_line: int = 1) -> pl.DataFrame:
    """One row per header: its row index (``at``), its line span, and ``body``: its own piece joined
    with every following line up to the next header by ``\\n``. Lines before the first header belong
    to no turn (the caller declares them). Most turns are one line: only the others are grouped."""
    frame = pl.DataFrame({"piece": pieces, "head": is_header}).with_row_index("at")
    frame = frame.with_columns(turn=pl.col("head").cast(pl.Int64).cum_sum()).filter(pl.col("turn") > 0)
    last = frame.select(pl.col("at").filter(pl.col("head").shift(-1, fill_value=True))).to_series()
    turns = frame.filter(pl.col("head")).select("at", "piece").with_columns(last=last)
    long = ((turns["last"] - turns["at"]) > 0).arg_true()
    if len(long):
        more = frame.filter(~pl.col("head")).group_by("turn", maintain_order=True).agg(pl.col("piece").str.join("\n"))
        bodies = pl.select(pl.concat_str(turns["piece"].gather(long), pl.lit("\n"), more["piece"])).to_series()
        turns = turns.with_columns(turns["piece"].scatter(long, bodies))
    return turns.select(pl.col("at"), (pl.col("at") + first_line).alias("line_start"),
                        (pl.col("last") + first_line).alias("line_end"), pl.col("piece").alias("body"))


def turns_of(frame: pl.DataFrame) -> list[Turn]:
    """The turn frame as ``Turn`` records (lines and extra as the line-engine parse gives them)."""
    out = []
    for row in frame.iter_rows(named=True):
        extra = orjson.loads(row["extra"]) if row["extra"] is not None else None
        out.append(Turn(row["speaker"], row["role"], row["content"], row["time"], row["time_raw"], None,
                        row["kind"], (row["line_start"], row["line_end"]), extra=extra))
    return out
