"""Turns as columns for the line grammars: the columnar twin of the line engine (parsers/engine.py).

A text is split into a column of lines; a grammar's header regex, translated to Rust's regex
syntax (polars), is matched against every line at once; continuation lines are attached to the
header above them by a cumulative sum over the header flags; each turn's body is the join of its
lines. No Python runs per line or per turn: a grammar runs Python once per *distinct* value (a
date, a clock, an author) and for the rare rows its vectorised tests flag (a notice, an
attachment), and falls back to its line-engine parse for what the Rust pattern cannot express.

The generic engine: ``rust_pattern`` translates a grammar's own line-anchored header pattern to
Rust's syntax (refusing, with the construct named, what Rust's regex cannot express or what could
cross a line end), ``line_headers`` runs it on every line with the rest of each header line,
``group_turns`` joins a turn's lines, ``inside_fences`` says which lines a ``skip_fenced`` grammar
would not cut at, ``per_distinct`` and ``iso_times`` read values once per distinct value (ISO
stamps as a column, checked by formatting back). WhatsApp, IRC, transcripts, Discord text and
inferred logs are read this way.

The turn frame (``TURN_SCHEMA``) is what the columnar assembler (normalizers/columns.py) reads:
one row per turn, in source order, ``time`` naive (the source zone applies; with the optional
``offset`` column, a wall time at that UTC offset), ``extra`` the turn's extra fields as a JSON
object string. ``turns_of`` turns it back into ``Turn`` records (tests and
fallbacks compare the two paths with it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta, timezone
from itertools import accumulate

import orjson
import polars as pl

from models.errors import Reason, ReconstructError
from models.records import ModelRef, Turn
from parsers.engine import TRAILING_BLANK

TURN_SCHEMA = {
    "speaker": pl.Utf8, "role": pl.Utf8, "kind": pl.Utf8, "content": pl.Utf8, "time": pl.Datetime("us"),
    "time_raw": pl.Utf8, "line_start": pl.Int64, "line_end": pl.Int64, "extra": pl.Utf8,
}
MODEL = {"model": pl.Utf8}
"""An optional column: the model a turn's source names, as a JSON ``[provider, name, version]``."""
OFFSET = {"offset": pl.Int64}
"""An optional column after ``TURN_SCHEMA``'s: the UTC offset in seconds of a time the source gives
with a zone (``time`` is then its wall time), null for a naive time (the source zone applies)."""
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


def extract(lines: pl.Series, pattern: str) -> pl.DataFrame:
    """The named groups of ``pattern`` (Rust syntax, anchored by the caller) on every line, one
    column each (null where a line does not match). Raises ``Untranslatable`` when Rust's regex
    refuses the pattern: the inputs read with it fail with that reason, never read another way."""
    try:
        return pl.DataFrame({"line": lines}).select(pl.col("line").str.extract_groups(pattern)).unnest("line")
    except pl.exceptions.ComputeError as exc:
        raise Untranslatable(f"Rust's regex refused the header pattern: {exc}") from exc


@dataclass(slots=True)
class LineTable:
    """The lines of many texts as one column, so that a line grammar reads a batch of inputs with one
    polars call per step instead of one per input: text ``i``'s lines are rows ``bounds[i]`` to
    ``bounds[i + 1] - 1`` (``split_lines`` of each text), ``source`` the index of each row's text."""

    made: tuple[pl.Series, pl.Series, list[int]] | None
    """(lines, source, bounds), made from ``texts`` when first asked (a grammar may read a batch
    through another table of its own, as transcripts do their sessions' lines)."""
    texts: list[str] | None = None
    """The texts themselves, when the table was made of them (``of``)."""
    memo: dict = field(default_factory=dict)
    """What a grammar computed over this table once, for the next step to reuse (its header columns)."""

    @classmethod
    def of(cls, texts: list[str]) -> LineTable:
        """The table of these texts, split into lines when its lines are first asked."""
        return cls(None, texts)

    @staticmethod
    def _split(texts: list[str]) -> tuple[pl.Series, pl.Series, list[int]]:
        if not texts:
            return split_lines(""), pl.Series("source", [], pl.UInt32), [0]
        if len(texts) == 1:  # one text: no list column to build
            return LineTable.of_lines(split_lines(texts[0])).made
        split = pl.DataFrame({"text": texts}).select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("source"), pl.when(
            pl.col("text").str.ends_with("\n") | (pl.col("text") == ""))
            .then(pl.col("text").str.split("\n").list.slice(0, pl.col("text").str.split("\n").list.len() - 1))
            .otherwise(pl.col("text").str.split("\n")).alias("line"))
        counts = split["line"].list.len().cum_sum().to_list()
        rows = split.explode("line").drop_nulls("line")  # an empty list explodes to a null row
        return rows["line"], rows["source"], [0, *counts]

    @classmethod
    def of_lines(cls, lines: pl.Series) -> LineTable:
        """One text's lines (a chunk of a streamed input) as a table."""
        return cls((lines, pl.zeros(len(lines), pl.UInt32, eager=True).alias("source"), [0, len(lines)]))

    def _made(self) -> tuple[pl.Series, pl.Series, list[int]]:
        if self.made is None:
            self.made = self._split(self.texts)
        return self.made

    @property
    def lines(self) -> pl.Series:
        return self._made()[0]

    @property
    def source(self) -> pl.Series:
        """The index of each row's text."""
        return self._made()[1]

    @property
    def bounds(self) -> list[int]:
        """Text ``i``'s rows are ``bounds[i]`` to ``bounds[i + 1] - 1``."""
        return self._made()[2]

    def __len__(self) -> int:
        return len(self.texts) if self.texts is not None else len(self.bounds) - 1

    def lines_of(self, i: int) -> pl.Series:
        return self.lines.slice(self.bounds[i], self.bounds[i + 1] - self.bounds[i])

    def subset(self, texts: list[int]) -> LineTable:
        """The table of some of its texts (ascending indices), numbered from 0 in that order."""
        if len(texts) == len(self):
            return self
        keep = self.source.is_in(texts)
        sizes = [self.bounds[i + 1] - self.bounds[i] for i in texts]
        source = self.source.filter(keep).replace_strict(texts, range(len(texts)), return_dtype=pl.UInt32)
        return LineTable((self.lines.filter(keep), source, [0, *accumulate(sizes)]),
                         None if self.texts is None else [self.texts[i] for i in texts])

    def row_in_text(self) -> pl.Series:
        """Each row's index among its own text's lines."""
        starts = pl.Series(self.bounds[:-1], dtype=pl.Int64)
        return pl.int_range(len(self.lines), dtype=pl.Int64, eager=True) - starts.gather(self.source)

    def counts(self, flags: pl.Series, source: pl.Series | None = None) -> list[int]:
        """How many rows each text has flagged (``source``: the text of each flag, the table's own by
        default)."""
        src = (self.source if source is None else source).filter(flags.fill_null(False))
        out = [0] * len(self)
        for i, n in zip(*src.value_counts(name="n").to_dict(as_series=False).values(), strict=True):
            out[i] = n
        return out

    def preambles(self, ok: pl.Series) -> list[int]:
        """For each text, how many of its lines come before its first flagged line (all of them when
        none is) when any of those holds anything but whitespace: its preamble; else 0."""
        at = ok.arg_true()
        cuts = self.split(at)
        owned = [i for i in range(len(self)) if cuts[i] < cuts[i + 1]]
        first = dict(zip(owned, at.gather([cuts[i] for i in owned]).to_list(), strict=True))
        ends = [first.get(i, self.bounds[i + 1]) for i in range(len(self))]
        seen = pl.concat([pl.Series([0], dtype=pl.Int64), nonblank(self.lines).cast(pl.Int64).cum_sum()])
        filled = (seen.gather(ends) - seen.gather(self.bounds[:-1])).to_list()
        return [end - start if n else 0 for start, end, n in zip(self.bounds[:-1], ends, filled, strict=True)]

    def split(self, rows: pl.Series) -> list[int]:
        """For ascending row numbers (a column of turns' ``at``), the index of the first of each text's,
        and their count at the end: text ``i`` owns ``rows[out[i]:out[i + 1]]``."""
        return rows.search_sorted(pl.Series(self.bounds, dtype=rows.dtype), "left").to_list()


def first_line_of(first_lines: list[int]) -> int:
    """The first line of every text of a table whose texts share it: a batch's inputs start at line 1,
    a streamed chunk is alone in its table."""
    if len(set(first_lines)) > 1:
        raise ValueError("the texts of this table must start at the same line")
    return first_lines[0] if first_lines else 1


def each_source(sources: list, read) -> list:
    """A table read done one source at a time (``read(source)``: its sessions or None): a source whose
    read raises gives its failure when its sessions are iterated, the others theirs."""
    return [own(read, source) for source in sources]


def own(read, *args):
    """``read(*args)``: one source's sessions (or None); when it raises, its failure, raised when its
    sessions are taken, so that the other sources of a table keep theirs."""
    try:
        return read(*args)
    except Exception as exc:  # the source's own failure, raised where its sessions are taken
        return failed(exc)


def failed(error: Exception):
    """The sessions of a source whose own reading raised ``error``: none, then the failure, raised
    where its sessions are taken (``each_source``'s contract for a table read by hand). A generator
    each: one is spent once it has raised."""
    raise error
    yield


def group_turns(pieces: pl.Series, is_header: pl.Series, first_line: int = 1, table: LineTable | None = None
                ) -> pl.DataFrame:
    """One row per header: its row index (``at``), its line span, and ``body``: its own piece joined
    with every following line up to the next header by ``\\n``. Lines before the first header belong
    to no turn (the caller declares them). Most turns are one line: only the others are grouped. With
    ``table``, the pieces are the table's lines: no turn runs across two texts, and line numbers count
    from each text's first line."""
    frame = pl.DataFrame({"piece": pieces, "head": is_header}).with_row_index("at")
    if table is None:
        frame = frame.with_columns(turn=pl.col("head").cast(pl.Int64).cum_sum()).filter(pl.col("turn") > 0)
        base = pl.lit(first_line, pl.Int64)
    else:  # a text's first line also starts a group; one without a header is nobody's
        new = pl.col("head") | (table.source != table.source.shift(1)).fill_null(True)
        frame = frame.with_columns(turn=new.cast(pl.Int64).cum_sum(), src=table.source).filter(
            pl.when(new).then(pl.col("head")).forward_fill())
        base = (pl.lit(first_line, pl.Int64)
                - pl.lit(pl.Series(table.bounds[:-1], dtype=pl.Int64)).gather(pl.col("src")))
    last = frame.select(pl.col("at").filter(pl.col("head").shift(-1, fill_value=True))).to_series()
    turns = frame.filter(pl.col("head")).select("at", "piece", base.alias("base")).with_columns(last=last)
    long = ((turns["last"] - turns["at"]) > 0).arg_true()
    if len(long):
        more = frame.filter(~pl.col("head")).group_by("turn", maintain_order=True).agg(pl.col("piece").str.join("\n"))
        bodies = pl.select(pl.concat_str(turns["piece"].gather(long), pl.lit("\n"), more["piece"])
                           .str.replace(TRAILING_BLANK, "")).to_series()
        turns = turns.with_columns(turns["piece"].scatter(long, bodies))
    return turns.select(pl.col("at"), (pl.col("at") + pl.col("base")).alias("line_start"),
                        (pl.col("last") + pl.col("base")).alias("line_end"), pl.col("piece").alias("body"))


def turns_of(frame: pl.DataFrame) -> list[Turn]:
    """The turn frame as ``Turn`` records (lines and extra as the line-engine parse gives them)."""
    out = []
    for row in frame.iter_rows(named=True):
        extra = orjson.loads(row["extra"]) if row["extra"] is not None else None
        if row.get("offset") is not None and row["time"] is not None:  # an aware time: its own offset
            row["time"] = row["time"].replace(tzinfo=timezone(timedelta(seconds=row["offset"])))
        model = ModelRef(*orjson.loads(row["model"])) if row.get("model") is not None else None
        out.append(Turn(row["speaker"], row["role"], row["content"], row["time"], row["time_raw"], model,
                        row["kind"], (row["line_start"], row["line_end"]), extra=extra))
    return out


@dataclass(slots=True)
class LineHeaders:
    """A header pattern over a column of lines: ``ok`` flags the header lines, ``groups`` holds the
    pattern's named groups (null off headers) and ``rest`` the line after the header's match."""

    groups: pl.DataFrame
    ok: pl.Series
    rest: pl.Series

    def pieces(self, lines: pl.Series) -> pl.Series:
        """What each line gives its turn's body: a header line its rest, any other line itself."""
        return pl.select(pl.when(self.ok).then(self.rest).otherwise(lines)).to_series()

    def matched(self, lines: pl.Series) -> pl.Series:
        """The header match of each header line (``Match.group(0)``)."""
        return pl.select(pl.when(self.ok).then(
            lines.str.slice(0, lines.str.len_chars() - self.rest.str.len_chars()))).to_series()

    def first(self) -> int | None:
        """The row of the first header line."""
        at = self.ok.arg_true()
        return int(at[0]) if len(at) else None


def line_headers(lines: pl.Series, rust: str) -> LineHeaders:
    """``rust`` (``rust_pattern`` of a header) on every line (``Untranslatable`` when polars refuses it)."""
    groups = extract(lines, f"(?:{rust})(?P<_rest>.*)")
    rest = groups["_rest"]
    groups = groups.drop("_rest")
    twice = [c for c in groups.columns if _DUPLICATE in c]
    if twice:  # at most one group of a name takes part in a match: the one that did
        merged = {c.split(_DUPLICATE)[0] for c in twice}
        groups = groups.with_columns(pl.coalesce(pl.col(n), *(pl.col(c) for c in twice if c.split(_DUPLICATE)[0] == n))
                                     .alias(n) for n in merged).drop(twice)
    return LineHeaders(groups, rest.is_not_null(), rest)


def line_test(rust: str):
    """A grammar's ``starts``: which lines match ``rust`` (a pattern without captures: ``unnamed``)."""
    def test(lines: pl.Series) -> pl.Series:
        return lines.str.contains(rust).fill_null(False)
    return test


FENCE_LINE = r"^[ \t]{0,3}(?:```|~~~)"  # parsers.engine.FENCE, per line


def inside_fences(lines: pl.Series) -> pl.Series:
    """Whether each line lies inside a fenced code block (``engine.fenced_regions``: an unclosed
    fence runs to the end; the fence lines themselves are outside), as ``skip_fenced`` reads it."""
    fence = lines.str.contains(FENCE_LINE).fill_null(False)
    before = fence.cast(pl.Int64).cum_sum() - fence.cast(pl.Int64)
    return (before % 2 == 1) & ~fence


def per_distinct(values: pl.Series, read, dtype) -> pl.Series:
    """``read`` once per distinct non-null value, joined back (null stays null)."""
    keys = values.unique().drop_nulls().to_list()
    return values.replace_strict(keys, [read(k) for k in keys], default=None, return_dtype=dtype)


_WALL = "%Y-%m-%dT%H:%M:%S"
_ISO_FAST = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:?\d{2})?$"


def iso_times(raw: pl.Series, read, fast: bool = True) -> tuple[pl.Series, pl.Series]:
    """(wall time, UTC offset in seconds or null when naive) of each raw stamp as ``read`` (a
    datetime or None per text: ``timeparse.parse_iso``) reads it. With ``fast``, the common
    ``YYYY-MM-DD[T ]HH:MM:SS[zone]`` is parsed as a column and checked by formatting it back; the
    rest, and the zones, go through ``read`` once per distinct value."""
    fast = raw.str.contains(_ISO_FAST).fill_null(False) & fast
    head = raw.str.slice(0, 19).str.replace(" ", "T", literal=True)
    wall = pl.select(pl.when(fast).then(head.str.strptime(pl.Datetime("us"), _WALL, strict=False))).to_series()
    fast = fast & (wall.dt.strftime(_WALL) == head).fill_null(False)
    zone = pl.select(pl.when(fast).then(raw.str.slice(19))).to_series()
    offset = per_distinct(zone, lambda z: _offset(read(f"2000-01-01T00:00:00{z}")), pl.Int64)
    fast = fast & ~((zone != "") & offset.is_null()).fill_null(False)  # a zone it cannot read: read it whole
    slow = raw.filter(~fast & raw.is_not_null())
    if len(slow):
        read_slow = {k: read(k) for k in slow.unique().to_list()}
        rows = (~fast & raw.is_not_null()).arg_true()
        got = [read_slow[k] for k in slow.to_list()]
        wall = wall.scatter(rows, pl.Series([t.replace(tzinfo=None) if t else None for t in got],
                                            dtype=pl.Datetime("us")))
        offset = offset.scatter(rows, pl.Series([_offset(t) for t in got], dtype=pl.Int64))
    return wall.alias("time"), offset.alias("offset")


def _offset(value) -> int | None:
    if value is None or value.tzinfo is None:
        return None
    return int(value.utcoffset().total_seconds())


# -- the header pattern in Rust's syntax ------------------------------------------------------

class Untranslatable(ReconstructError):
    """A header pattern holds a construct Rust's regex has no equivalent for, or polars refused it:
    the inputs read with it fail with this reason (every fixed grammar's pattern translates, checked by
    the tests; so does every header ``inferred`` can learn); ``detail`` names the construct."""

    def __init__(self, construct: str) -> None:
        super().__init__(Reason.UNTRANSLATABLE, construct)


_DUPLICATE = "__"
"""A group name met again is suffixed ``__2``, ``__3``...; ``line_headers`` merges them back."""
_RUST_META = set("\\.+*?()|[]{}^$#&-~")
_REFUSED_GROUPS = {"(?=": "a lookahead", "(?!": "a negative lookahead", "(?<=": "a lookbehind",
                   "(?<!": "a negative lookbehind", "(?P=": "a backreference", "(?(": "a conditional group",
                   "(?>": "an atomic group", "(?#": "a comment group", "(?|": "a branch reset"}
_COUNT = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")
_FLAGS = re.compile(r"\(\?([a-zA-Z]+)(\)|:)")
# A Python ``re`` pattern's \s is ``str.isspace``; Rust's (and the ``regex`` module's) is Unicode White_Space.
_PY_SPACE_CLASS = "".join(f"\\x{{{ord(c):x}}}" for c in PY_SPACE)


def rust_pattern(pattern) -> str:
    """A line-anchored header pattern (a compiled ``re``/``regex`` pattern under MULTILINE, starting
    with ``^``) in Rust's regex syntax, to be matched against one line at a time. Raises
    ``Untranslatable`` naming the construct when there is no exact equivalent: lookarounds,
    backreferences, conditionals, atomic groups, possessive quantifiers, and anything that could
    match a line end (``\\n``, ``\\s``, ``\\D``, ``\\W``, a negated class without ``\\n``, DOTALL) or
    the text's ends (``\\A``, ``\\Z``), which a pattern seen one line at a time cannot honour."""
    source, flags = pattern.pattern, pattern.flags
    py_re = isinstance(pattern, re.Pattern)  # else the ``regex`` module, whose classes are Rust's
    prefix = "(?i)" if flags & re.IGNORECASE else ""
    if flags & (re.DOTALL | re.VERBOSE):
        raise Untranslatable("DOTALL or VERBOSE flags")
    body = source
    lead = _FLAGS.match(body)
    if lead and lead[2] == ")":
        prefix = _inline_flags(lead[1]) or prefix
        body = body[lead.end():]
    if not body.startswith("^"):
        raise Untranslatable("a header not anchored at a line start (^)")
    return prefix + _Translator(body, py_re).run()


_NAMED = re.compile(r"(?<!\\)\(\?P?<(?![=!])\w+>")


def unnamed(rust: str) -> str:
    """A Rust pattern without its named groups: a plain test (captures cost Rust's regex most of
    its time, and patterns joined by ``|`` may share names)."""
    return _NAMED.sub("(?:", rust)


def _inline_flags(letters: str) -> str:
    if set(letters) - set("imuLV01"):
        raise Untranslatable(f"the inline flags {letters!r}")
    return "(?i)" if "i" in letters else ""


class _Translator:
    """One left-to-right pass over a pattern's source (see ``rust_pattern``)."""

    def __init__(self, source: str, py_re: bool) -> None:
        self.s, self.py_re, self.i, self.out = source, py_re, 0, []
        self.names: dict[str, int] = {}
        self.quantified = False  # the last token was a quantifier (a '+' after it is possessive)

    def run(self) -> str:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            quantified = False
            if c == "\\":
                self.out.append(self._escape(in_class=False))
            elif c == "[":
                self.out.append(self._class())
            elif c == "(":
                self.out.append(self._group())
            elif c in "*+?":
                if c == "+" and self.quantified:
                    raise Untranslatable("a possessive quantifier")
                self.out.append(c)
                self.i += 1
                quantified = True
                if self.i < len(s) and s[self.i] == "?":  # lazy
                    self.out.append("?")
                    self.i += 1
                    quantified = False
            elif c == "{":
                quantified = self._count()
            elif c == "}":
                self.out.append("\\}")
                self.i += 1
            else:
                self.out.append(c)
                self.i += 1
            self.quantified = quantified
        return "".join(self.out)

    def _count(self) -> bool:
        m = _COUNT.match(self.s, self.i)
        if m is None:  # Python reads a '{' that opens no count as a literal
            self.out.append("\\{")
            self.i += 1
            return False
        low, comma, high = m.groups()
        if not low and not comma:
            self.out.append("\\{")
            self.i += 1
            return False
        self.out.append("{" + (low or "0") + (comma or "") + (high or "") + "}")
        self.i = m.end()
        if self.i < len(self.s) and self.s[self.i] == "?":
            self.out.append("?")
            self.i += 1
            return False
        return True

    def _group(self) -> str:
        s, i = self.s, self.i
        for opening, what in _REFUSED_GROUPS.items():
            if s.startswith(opening, i):
                raise Untranslatable(what)
        named = re.match(r"\(\?P?<(\w+)>", s[i:])
        if named is not None:  # the regex module allows a name twice (in alternatives); Rust does not
            self.i += named.end()
            name = named[1]
            self.names[name] = self.names.get(name, 0) + 1
            return f"(?P<{name}{_DUPLICATE}{self.names[name]}>" if self.names[name] > 1 else f"(?P<{name}>"
        if s.startswith("(?:", i) or not s.startswith("(?", i):
            self.i += 1
            return "("
        flags = _FLAGS.match(s, i)
        if flags is None:
            raise Untranslatable(f"the group {s[i:i + 4]!r}")
        self.i = flags.end()
        inline = _inline_flags(flags[1])
        return inline[:-1] + flags[2] if inline else ("(?:" if flags[2] == ":" else "")

    def _escape(self, in_class: bool) -> str:
        s, i = self.s, self.i
        if i + 1 >= len(s):
            raise Untranslatable("a trailing backslash")
        c = s[i + 1]
        self.i = i + 2
        if (c.isdigit() and c != "0") or c == "g":
            raise Untranslatable("a backreference")
        if c in "AZzG":
            raise Untranslatable(f"\\{c} (the text's ends, not a line's)")
        if c in "bB" and self.py_re:
            raise Untranslatable(r"\b in a Python re pattern (its word characters are not Rust's)")
        if c in "wW" and self.py_re:
            raise Untranslatable(r"\w in a Python re pattern (its word characters are not Rust's)")
        if c in "DW" and not in_class:
            raise Untranslatable(f"\\{c}, which matches a line end")
        if c == "s":
            if not in_class:
                raise Untranslatable(r"\s, which matches a line end")
            return _PY_SPACE_CLASS if self.py_re else "\\s"
        if c == "S" and self.py_re:
            return "[^" + _PY_SPACE_CLASS + "]"  # Rust nests a class in a class
        if c == "n":
            if not in_class:
                raise Untranslatable(r"\n (a header over several lines)")
            return "\\n"
        if c in "pP":
            return self._property(c, in_class)
        if c in "dbBwStrfvax0":
            return self._hex(c) if c in "x0" else "\\" + c
        if c in "uUN":
            return self._unicode(c)
        if c.isalnum():
            raise Untranslatable(f"the escape \\{c}")
        return "\\" + c if c in _RUST_META else c

    def _hex(self, c: str) -> str:
        s = self.s
        if c == "x":
            digits = s[self.i:self.i + 2]
            self.i += 2
            return f"\\x{{{digits}}}"
        octal = re.match(r"[0-7]{0,2}", s[self.i:])[0]
        self.i += len(octal)
        return f"\\x{{{int('0' + octal, 8):x}}}"

    def _unicode(self, c: str) -> str:
        s = self.s
        if c == "N":
            raise Untranslatable(r"a \N{...} character name")
        width = 4 if c == "u" else 8
        digits = s[self.i:self.i + width]
        self.i += width
        return f"\\x{{{digits}}}"

    def _property(self, c: str, in_class: bool) -> str:
        m = re.match(r"\{(\^?)([^}]+)\}", self.s[self.i:])
        if m is None:
            raise Untranslatable(f"the property escape \\{c}")
        self.i += m.end()
        negated = (c == "P") != bool(m[1])
        name = m[2].split("=")[-1]
        if negated or name.startswith(("C", "Z")) or name.lower() in ("any", "white_space", "space"):
            raise Untranslatable(f"\\{c}{{{m[2]}}}, which may match a line end")
        return f"\\p{{{m[2]}}}"

    def _class(self) -> str:
        s = self.s
        self.i += 1
        negated = s.startswith("^", self.i)
        self.i += negated
        parts, line_end = [], False
        first = True
        while self.i < len(s) and (s[self.i] != "]" or first):
            c = s[self.i]
            first = False
            if c == "\\":
                before = self.i
                piece = self._escape(in_class=True)
                line_end = line_end or s[before + 1] in "nsDW"
                parts.append(piece)
            elif c in "[]&~":
                parts.append("\\" + c)
                self.i += 1
            elif c == "-" and parts and parts[-1] == "-":
                parts.append("\\-")
                self.i += 1
            else:
                parts.append(c)
                self.i += 1
        if self.i >= len(s):
            raise Untranslatable("an unclosed character class")
        self.i += 1
        if negated and not line_end:
            raise Untranslatable("a negated class without \\n, which matches a line end")
        if not negated and line_end:
            raise Untranslatable("a class that matches a line end")
        return "[" + ("^" if negated else "") + "".join(parts) + "]"
