"""A line-oriented chat format no registered grammar knows, with a repeated header prefix: inferred.

Examples: ``<<2024/03/01 10:00>> alice | text``, ``#42 [alice] text``. The start of each line is
generalised into a shape: digit runs become ``\\d+``, white space ``[ \\t]+``, punctuation stays
literal, and the first run of letters after at least one digit or punctuation mark becomes the
speaker (up to four words), ended by the next punctuation mark, which closes the header. When one
shape starts at least 3 lines and at least 60% of the non-blank lines (the rest may be continuation
lines), it is taken as the file's header pattern.

Decisions:
- The pattern is a guess, so every session says so in ``coverage_reason`` (coverage cannot be
  guaranteed) and records the pattern as a heuristic ``H-INFER-<first 8 hex of its sha256>`` with its
  evidence (pattern, lines matched, sample line numbers) for a person to review and promote to a
  grammar (it lands in frankensteen_learning_db).
- Detection returns the share of lines the inferred header explains (headers and the lines after
  the first one) times 0.6 (a guess is less sure than a known grammar); its specificity is 0, so
  any real grammar within the margin wins.
  Text that starts like JSON is never claimed.
- A time is read only from a year-first date and clock in the header (``2024/03/01 10:00``); a
  clock time alone has no date, so its time stays None (raw kept, one warning). A header without
  a time keeps its text in ``extra.header``. Roles come from role words (``Assistant``), else user.
- Read as columns (``read``: the inferred header translated to Rust's syntax with its prefix
  captured): each log learns its header on its own, then a batch's logs of one learnt header are one
  table of lines.
- Lines before the first header are kept in meta as the preamble and declared as a preamble region.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson
import polars as pl
import regex

from models.records import Heuristic, ParsedSession, Region, RegionKind, SourceText
from models.settings import Settings
from parsers.base import Grammar
from parsers.columns import (
    PY_SPACE,
    TURN_SCHEMA,
    LineTable,
    Untranslatable,
    failed,
    group_turns,
    line_headers,
    nonblank,
    per_distinct,
    rust_pattern,
)
from parsers.registry import register
from parsers.speakers import role_of
from parsers.timeparse import from_parts

from ._lines import line_count, unreadable_times

_TOKEN = regex.compile(r"\d+|[^\W\d_]+|[ \t]+|.")
_STAMP = regex.compile(
    r"(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})[ T]+(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}))?"
)
_CLOCK = regex.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")
_JSON_START = regex.compile(r'\A\s*(?:\{\s*(?:"|$)|\[\s*(?:[\[{"\]]|$))')  # '{"', '[{', '[[', '["', '[]'
MIN_LINES, MIN_SHARE, SAMPLE_LINES = 3, 0.6, 2000
GUESS = 0.6
_MAX_NAME_WORDS = 4
_escape = lru_cache(maxsize=1024)(regex.escape)  # single punctuation tokens, escaped for every line detection reads


def shape(line: str) -> str | None:
    """The regex of a line's header, or None when it has none (no name, or no prefix before it)."""
    parts: list[str] = []
    named = prefixed = False
    words = 0
    for m in _TOKEN.finditer(line, 0, 80):  # lazily: most lines are settled in their first tokens
        tok = m.group()
        if named:
            if tok.isspace():
                continue
            if tok.isalnum() or tok in ".'-":
                words += 1
                if words > _MAX_NAME_WORDS:
                    return None  # a sentence, not a name before a delimiter
                continue
            parts.append(r"[ \t]*" + _escape(tok) + r"[ \t]?")
            return "^" + "".join(parts)
        if tok.isdigit():
            parts.append(r"\d+")
            prefixed = True
        elif tok.isspace():
            parts.append(r"[ \t]+")
        elif tok.isalpha():
            if not prefixed:
                return None
            parts.append(r"(?P<name>[^\n]{1,40}?)")
            named = True
        else:
            parts.append(_escape(tok))
            prefixed = True
    return None


def infer(text: str) -> tuple[str, float, list[int]] | None:
    """(pattern, share of non-blank lines it starts, its first line numbers) of the dominant header
    shape in the first lines of ``text``, or None when no shape qualifies."""
    if _JSON_START.match(text):
        return None
    numbered = [(i, ln) for i, ln in enumerate(text.split("\n", SAMPLE_LINES)[:SAMPLE_LINES], 1) if ln.strip()]
    shapes: Counter[str] = Counter()
    where: dict[str, list[int]] = {}
    for number, line in numbered:
        s = shape(line)
        if s:
            shapes[s] += 1
            where.setdefault(s, []).append(number)
    if not shapes:
        return None
    pattern, count = max(shapes.items(), key=lambda kv: (kv[1], kv[0]))
    share = count / len(numbered)
    if count < MIN_LINES or share < MIN_SHARE:
        return None
    return pattern, share, where[pattern][:5]


def decided(lines: list[str]) -> str | None:
    """The pattern ``infer`` takes from these non-blank lines, or None where it takes none: the same
    answer, with the lines shaped only until it is settled. It is settled once the lines without a
    shape leave no shape its share, or once one shape starts its least number of lines and its share
    (more than half the lines, so no other shape can catch it up)."""
    n = len(lines)
    shapes: Counter[str] = Counter()
    shapeless = 0
    for line in lines:
        s = shape(line)
        if s is None:
            shapeless += 1
            if (n - shapeless) / n < MIN_SHARE:
                return None
            continue
        shapes[s] += 1
        if shapes[s] >= MIN_LINES and shapes[s] / n >= MIN_SHARE and 2 * shapes[s] > n:
            return s
    if not shapes:
        return None
    pattern, count = max(shapes.items(), key=lambda kv: (kv[1], kv[0]))
    return pattern if count >= MIN_LINES and count / n >= MIN_SHARE else None


def heuristic_id(pattern: str) -> str:
    return "H-INFER-" + hashlib.sha256(pattern.encode("utf-8")).hexdigest()[:8]


@register
class Inferred(Grammar):
    name = "inferred"
    specificity = 0
    version = "2"
    description = "Unknown line format with a repeated header prefix: pattern inferred, coverage partial"
    no_turn_shape = "its header pattern is inferred per file (an H- heuristic): there is no shape before it"
    example = "<<2024/03/01 10:00>> alice | the header shape is learned from the file"

    def detect(self, sample: str, name: str) -> float:
        """The share of non-blank lines the inferred header explains (its header lines and the lines
        after the first of them), discounted by ``GUESS``: a guessed header explains a line less
        surely than a known grammar's, so the inferred grammar wins only where no grammar explains
        about half of the lines (and its specificity, 0, loses every close call)."""
        if _JSON_START.match(sample):
            return 0.0
        lines = [ln for ln in sample.split("\n", SAMPLE_LINES)[:SAMPLE_LINES] if ln.strip()]
        pattern = decided(lines)
        if pattern is None:
            return 0.0
        header = regex.compile(pattern)
        first = next((i for i, ln in enumerate(lines) if header.match(ln)), len(lines))
        return GUESS * (len(lines) - first) / len(lines)


    def read(self, sources: list[SourceText], settings: Settings) -> list:
        """The session of each source with its turns as a frame: each source's header learnt on its own
        (``infer``), then the sources of each distinct learnt pattern read as one table of lines (the
        pattern translated to Rust's syntax with its prefix captured). Every header ``infer`` can learn
        translates (tests/parsers/test_inferred.py); should one not, its sources fail with the reason."""
        out: list = [None] * len(sources)
        learnt: dict[str, list[int]] = {}
        found: list = [None] * len(sources)
        for i, source in enumerate(sources):
            try:
                found[i] = infer(source.text)
            except Exception as exc:  # this source's own failure, raised where its sessions are taken
                out[i] = failed(exc)
                continue
            if found[i] is None:
                out[i] = iter(())
            else:
                learnt.setdefault(found[i][0], []).append(i)
        for pattern, members in learnt.items():
            try:
                read = _pattern_table(pattern, [sources[i] for i in members], [found[i] for i in members])
            except Untranslatable as exc:  # the sources of this header fail with the reason; the others go on
                read = [failed(exc) for _ in members]
            for i, sessions in zip(members, read, strict=True):
                out[i] = sessions
        return out

    def count_turns(self, raw: Any) -> int:
        # The pattern travels with the raw text; its matches are counted line by line, without the
        # block engine the parse uses.
        pattern, text = raw
        compiled = regex.compile(pattern)
        return sum(1 for line in text.split("\n") if compiled.match(line))


def _pattern_table(pattern: str, sources: list[SourceText], found: list) -> list:
    """The sessions of sources that share a learnt header pattern, read as one table of lines
    (``Untranslatable`` when Rust's regex cannot run the pattern)."""
    at = pattern.index("(?P<name>")
    rust = rust_pattern(regex.compile(f"^(?P<prefix>{pattern[1:at]}){pattern[at:]}", regex.MULTILINE))
    table = LineTable.of([s.text for s in sources])
    heads = line_headers(table.lines, rust)
    out = []
    for i, (source, (frame, clock_only, unreadable), preamble) in enumerate(zip(
            sources, _turn_frames(table, heads), _preambles(table, heads), strict=True)):
        session = _new_session(pattern, source.text)
        if preamble:
            _preamble(session, "\n".join(table.lines_of(i).head(preamble).to_list()), (1, preamble))
        session.frame = frame
        _conclude(session, found[i], source.name, frame.height, clock_only, unreadable)
        out.append(iter([session]))
    return out


def _preambles(table: LineTable, heads) -> list[int]:
    """For each text, how many lines precede its first header when any of them is not blank, else 0."""
    at = heads.ok.arg_true()
    cuts = table.split(at)
    n = len(table)
    firsts = iter(at.gather([cuts[i] for i in range(n) if cuts[i] < cuts[i + 1]]).to_list())
    stops = [next(firsts) if cuts[i] < cuts[i + 1] else table.bounds[i + 1] for i in range(n)]
    filled = pl.concat([pl.Series([0], dtype=pl.Int64), nonblank(table.lines).cast(pl.Int64).cum_sum()])
    counts = filled.gather([*table.bounds[:-1], *stops]).to_list()
    return [stops[i] - table.bounds[i] if counts[n + i] > counts[i] else 0 for i in range(n)]


def _new_session(pattern: str, text: str) -> ParsedSession:
    session = ParsedSession(None, "none", [], raw=(pattern, text))
    session.lines = (1, line_count(text))
    session.coverage_reason = (
        f"the header pattern was inferred from this file ({heuristic_id(pattern)}): a guessed pattern cannot"
        " guarantee that every turn was found"
    )
    return session


def _preamble(session: ParsedSession, text: str, lines: tuple[int, int]) -> None:
    session.meta["preamble"] = text
    session.regions.append(Region(RegionKind.PREAMBLE, "text before the first line with the inferred header (a"
                                  " title or an exporter's banner)", lines=lines))


def _stamp_of(prefix: str) -> tuple[str | None, datetime | None, int, int]:
    """(raw time, time, 1 when not a calendar date or clock time, 1 for a clock alone) of a header's prefix."""
    if m := _STAMP.search(prefix):
        when = from_parts(int(m["y"]), int(m["m"]), int(m["d"]), int(m["H"]), int(m["M"]), int(m["S"] or 0))
        return m.group(0), when, int(when is None), 0
    if m := _CLOCK.search(prefix):
        return m.group(0), None, 0, 1
    return None, None, 0, 0


def _conclude(session: ParsedSession, found: tuple[str, float, list[int]], name: str, turns: int, clock_only: int,
              unreadable: int) -> None:
    pattern, share, samples = found
    if clock_only:
        session.warnings.append(unreadable_times(clock_only, "a clock time without a date"))
    if unreadable:
        session.warnings.append(unreadable_times(unreadable, "not a calendar date or clock time"))
    session.heuristics.append(Heuristic(heuristic_id(pattern), "Turn header pattern inferred from a repeated line"
                                        " prefix", {"pattern": pattern, "linesMatched": turns,
                                                    "sampleShare": round(share, 3), "sampleLines": samples,
                                                    "source": name}))


def _turn_frames(table: LineTable, heads) -> list[tuple[pl.DataFrame, int, int]]:
    """Each text's turn frame, and its counts of clock-only and unreadable times."""
    turns = group_turns(heads.pieces(table.lines), heads.ok, 1, table)
    h = heads.groups.filter(heads.ok)
    prefix = h["prefix"]
    keys = prefix.unique().to_list()
    read = [_stamp_of(k) for k in keys]
    which = prefix.replace_strict(keys, range(len(keys)), return_dtype=pl.UInt32)  # each row's distinct prefix
    raw, when, bad, clock = (pl.Series([r[j] for r in read], dtype=dtype).gather(which) for j, dtype in
                             enumerate((pl.Utf8, pl.Datetime("us"), pl.Int64, pl.Int64)))
    speaker = h["name"].str.strip_chars(PY_SPACE)
    # A header without a time keeps its text (stripped) as extra.header, when it has a prefix at all.
    plain = (raw.is_null() & (prefix.str.strip_chars(PY_SPACE).str.len_chars() > 0)).arg_true()
    matched = heads.matched(table.lines).filter(heads.ok).gather(plain).to_list()
    extra = pl.repeat(None, h.height, dtype=pl.Utf8, eager=True).scatter(
        plain, pl.Series([orjson.dumps({"header": m.strip()}).decode() for m in matched], dtype=pl.Utf8))
    frame = pl.DataFrame({
        "speaker": speaker, "role": per_distinct(speaker, role_of, pl.Utf8), "content": turns["body"],
        "time": when, "time_raw": raw, "line_start": turns["line_start"], "line_end": turns["line_end"],
        "extra": extra,
    }).with_columns(kind=pl.lit("message", pl.Utf8)).select(list(TURN_SCHEMA))
    cuts = table.split(turns["at"])
    zero = pl.Series([0], dtype=pl.Int64)
    clocks = pl.concat([zero, clock.cum_sum()]).gather(cuts).to_list()
    bads = pl.concat([zero, bad.cum_sum()]).gather(cuts).to_list()
    return [(frame.slice(cuts[i], cuts[i + 1] - cuts[i]), clocks[i + 1] - clocks[i], bads[i + 1] - bads[i])
            for i in range(len(table))]
