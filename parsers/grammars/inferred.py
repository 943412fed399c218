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
  Text that starts like JSON or like an HTML or XML document is never claimed.
- A time is read only from a year-first date and clock in the header (``2024/03/01 10:00``); a
  clock time alone has no date, so its time stays None (raw kept, one warning). A header without
  a time keeps its text in ``extra.header``. Roles come from role words (``Assistant``), else user.
- A line grammar (``LineGrammar``): each log learns its header from what its survey counts of its
  first 2,000 lines (for a streamed log, its blocks' counts added up), then a batch's logs of one learnt
  header are one table of lines (the header translated to Rust's syntax with its prefix captured). A
  large log is streamed, cut at lines that look like a header (``_inferred_columns.HEADER_LIKE``) once its
  survey has checked that each of them starts a turn under the learnt header; else it is read whole and
  says why (``HeaderSurvey.whole_only``).
- Lines before the first header are kept in meta as the preamble and declared as a preamble region.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import polars as pl
import regex

from models.records import Heuristic, ParsedSession, Region, RegionKind, SourceText
from parsers.base import LineGrammar, Survey
from parsers.columns import LineTable, Untranslatable, first_line_of, rust_pattern, split_lines
from parsers.registry import register

from . import _inferred_columns as columns
from ._lines import line_count, unreadable_times

_TOKEN = regex.compile(r"\d+|[^\W\d_]+|[ \t]+|.")
_NOT_A_LOG = regex.compile(r'\A\s*(?:\{\s*(?:"|$)|\[\s*(?:[\[{"\]]|$)'  # JSON: '{"', '[{', '[[', '["', '[]'
                         r'|<(?:!--|(?:!doctype|\?xml|html|head|body|div|table|meta)\b))', regex.IGNORECASE)  # markup
"""Text that starts like JSON or like an HTML or XML document: data another grammar reads, or none; never a
log whose header could be learnt (an unknown HTML page read so gives speakers such as ``div class``)."""
MIN_LINES, MIN_SHARE, SAMPLE_LINES = 3, 0.6, 2000
GUESS = 0.6
LOOSE_LINES = 64
"""How many lines a streamed log's blocks without a header-like line may hold that could start a turn of some
learnt header (kept to be matched once the header is learnt); more, and the log is read whole."""
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
    if _NOT_A_LOG.match(text):
        return None
    return Head.of(text, 1).learnt()


@dataclass(slots=True)
class Head:
    """What the first ``SAMPLE_LINES`` lines of an input say of its header shapes: what ``infer`` learns
    from. Pieces of an input, counted apart, add up to the whole input's (``then``)."""

    nonblank: int = 0
    shapes: Counter = field(default_factory=Counter)
    where: dict[str, list[int]] = field(default_factory=dict)
    """Each shape's first five line numbers."""

    @classmethod
    def of(cls, text: str, first_line: int) -> Head:
        """The head of a piece of an input that starts at line ``first_line``."""
        head = cls()
        room = SAMPLE_LINES - first_line + 1
        if room <= 0:
            return head
        for number, line in enumerate(text.split("\n", room)[:room], first_line):
            if not line.strip():
                continue
            head.nonblank += 1
            if s := shape(line):
                head.shapes[s] += 1
                seen = head.where.setdefault(s, [])
                if len(seen) < 5:
                    seen.append(number)
        return head

    def then(self, more: Head) -> None:
        self.nonblank += more.nonblank
        self.shapes.update(more.shapes)
        for s, lines in more.where.items():
            seen = self.where.setdefault(s, [])
            seen.extend(lines[:5 - len(seen)])

    def learnt(self) -> tuple[str, float, list[int]] | None:
        """The dominant shape when it qualifies (``infer``'s rule)."""
        if not self.shapes:
            return None
        pattern, count = max(self.shapes.items(), key=lambda kv: (kv[1], kv[0]))
        share = count / self.nonblank
        if count < MIN_LINES or share < MIN_SHARE:
            return None
        return pattern, share, self.where[pattern][:5]


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


def header_rust(pattern: str) -> str:
    """A learnt header in Rust's syntax, its prefix captured (``Untranslatable`` when Rust cannot run it)."""
    at = pattern.index("(?P<name>")
    return rust_pattern(regex.compile(f"^(?P<prefix>{pattern[1:at]}){pattern[at:]}", regex.MULTILINE))


@register
class Inferred(LineGrammar):
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
        if _NOT_A_LOG.match(sample):
            return 0.0
        lines = [ln for ln in sample.split("\n", SAMPLE_LINES)[:SAMPLE_LINES] if ln.strip()]
        pattern = decided(lines)
        if pattern is None:
            return 0.0
        header = regex.compile(pattern)
        first = next((i for i, ln in enumerate(lines) if header.match(ln)), len(lines))
        return GUESS * (len(lines) - first) / len(lines)

    starts = staticmethod(columns.header_like)

    def survey(self, sources: list[SourceText], table: LineTable, first_lines: list[int]) -> list[HeaderSurvey]:
        """Each text's head (the shapes of its lines among the input's first ``SAMPLE_LINES``), whether it starts
        like JSON (a text that starts its input), its header-like lines and its line count; the checks a
        streamed read needs are taken when first asked (``HeaderSurvey.census``)."""
        cuts = table.split(self.starts(table.lines).arg_true())
        translated: dict[str, str] = {}  # each learnt header translated once per table
        out = []
        for i in range(len(sources)):
            text = table.texts[i] if table.texts is not None else "\n".join(table.lines_of(i).to_list())
            first = first_lines[i]
            out.append(HeaderSurvey(first - 1 + table.bounds[i + 1] - table.bounds[i], cuts[i + 1] - cuts[i],
                                    Head.of(text, first), _NOT_A_LOG.match(text) is not None if first == 1 else None,
                                    text, first,
                                    translated=translated))
        return out

    def sessions(self, source: SourceText, survey: HeaderSurvey) -> list[ParsedSession]:
        """The input's one session under its learnt header, or none when it learns none; an input whose header
        Rust cannot run fails alone (``Untranslatable``)."""
        found = survey.learnt
        if found is None:
            return []
        known = survey.translated
        if found[0] not in known:
            known[found[0]] = header_rust(found[0])
        survey.rust = known[found[0]]
        session = _new_session(found[0], source.text)
        session.lines = (1, survey.lines)
        return [session]

    def frames(self, sources: list[SourceText], table: LineTable, surveys: list[HeaderSurvey],
               sessions: list[list[ParsedSession]], first_lines: list[int]) -> list[list[columns.Chunk]]:
        """Each text's turns, the texts of one learnt header read as one table; the preamble of a text that
        starts its input into its session; the time notes added onto its survey."""
        first = first_line_of(first_lines)
        out: list[list[columns.Chunk]] = [[] for _ in sources]
        by_header: dict[str, list[int]] = {}
        for i, found in enumerate(sessions):
            if found:
                by_header.setdefault(surveys[i].rust, []).append(i)
        for rust, members in by_header.items():
            for i, got in zip(members, columns.read(table.subset(members), rust, first), strict=True):
                survey = surveys[i]
                survey.read_turns += got.frame.height
                survey.clock_only += got.clock_only
                survey.unreadable += got.unreadable
                if got.preamble:
                    _preamble(sessions[i][0], "\n".join(table.lines_of(i).head(got.preamble).to_list()),
                              (1, got.preamble))
                out[i] = [columns.Chunk(got.frame)]
        return out

    def conclude(self, sessions: list[ParsedSession], source: SourceText, survey: HeaderSurvey, chunks: list) -> None:
        for session in sessions:
            _conclude(session, survey.learnt, source.name, survey.read_turns, survey.clock_only, survey.unreadable)

    def count_turns(self, raw: Any) -> int:
        # The pattern travels with the raw text; its matches are counted line by line, without the
        # block engine the parse uses.
        pattern, text = raw
        compiled = regex.compile(pattern)
        return sum(1 for line in text.split("\n") if compiled.match(line))


@dataclass(slots=True)
class HeaderSurvey(Survey):
    """What an inferred log's pieces tell of it (``Inferred.survey``): its head, from which its header is
    learnt, and, for a streamed log, whether each line it is cut at starts a turn under that header and its
    independent turn count (``census``, per piece: the header of a piece's header-like lines, the lines
    that header starts, the first line it would not)."""

    lines: int
    turns: int
    """The piece's header-like lines (``Inferred.starts``): where a stream is cut."""
    head: Head
    json: bool | None
    """Whether the piece that starts the input starts like JSON; None for a later piece."""
    text: str | None
    """The piece's text, until its census is taken."""
    first: int
    shape: str | None = None
    """The header shape of the piece's header-like lines (the first of them that has one)."""
    first_like: int | None = None
    """The piece's first header-like line of a header shape (``shape`` is its)."""
    stray: int | None = None
    """The first header-like line that ``shape`` would not start a turn at (a stream cut there would split one)."""
    count: int = 0
    """The lines ``shape`` starts (``count_turns``'s rule), in the pieces with a shape."""
    loose: list[tuple[int, str, bool]] = field(default_factory=list)
    """Pieces without a header-like line of a header shape: their lines that could start a turn of some learnt
    header (number, text, whether header-like: a stream is cut there, so it must start one)."""
    overflow: bool = False
    settled: bool = True
    """Whether ``json`` is settled by the piece alone: not when it is blank or the answer would change with
    what follows it (``census``)."""
    rust: str | None = None
    """The learnt header in Rust's syntax (``Inferred.sessions``)."""
    translated: dict[str, str] = field(default_factory=dict)
    """The headers translated to Rust's syntax so far, shared by the surveys of one table."""
    read_turns: int = 0
    clock_only: int = 0
    unreadable: int = 0

    def then(self, more: HeaderSurvey) -> HeaderSurvey:
        """This survey, the next piece's added (in place)."""
        self.census()
        more.census()
        self.lines = more.lines
        self.turns += more.turns
        self.head.then(more.head)
        self.stray = self.stray if self.stray is not None else more.stray
        if more.shape is not None and self.shape is None:
            self.shape, self.first_like = more.shape, more.first_like
        elif more.shape is not None and more.shape != self.shape and self.stray is None:
            self.stray = more.first_like  # another header shape: one of the two is not the learnt one
        self.count += more.count
        self.loose.extend(more.loose)
        self.overflow = self.overflow or more.overflow or len(self.loose) > LOOSE_LINES
        if self.overflow:
            self.loose.clear()
        return self

    def census(self) -> HeaderSurvey:
        if self.text is None:
            return self
        text, self.text = self.text, None
        if self.json is not None:  # what follows the piece could change the answer when it reaches its end
            self.settled = text.strip() != "" and self.json == (_NOT_A_LOG.match(text + "x") is not None)
        lines = text.split("\n")
        series = split_lines(text)
        like = columns.header_like(series).arg_true().to_list()
        shaped = next(((k, s) for k in like if (s := shape(lines[k])) is not None), None)
        if shaped is None:  # no header-like line with a shape: its lines are matched once the header is learnt
            marked = set(like)
            self.loose = [(self.first + k, ln, k in marked) for k, ln in enumerate(lines) if _could_start(ln)]
            self.overflow = len(self.loose) > LOOSE_LINES
            if self.overflow:
                self.loose.clear()
            return self
        self.first_like, self.shape = self.first + shaped[0], shaped[1]
        try:
            starting = series.gather(like).str.contains(header_rust(self.shape)).fill_null(False)
        except Untranslatable:  # no turn can be cut out under it: the whole read says why
            self.stray = self.first_like
            return self
        missed = (~starting).arg_true()
        if len(missed):
            self.stray = self.first + like[int(missed[0])]
        compiled = regex.compile(self.shape)
        self.count = sum(1 for line in lines if compiled.match(line))
        return self

    @property
    def learnt(self) -> tuple[str, float, list[int]] | None:
        """The input's learnt header (``infer``'s answer): None when it starts like JSON or learns none."""
        if self.json:
            return None
        return self.head.learnt()

    @property
    def counted(self) -> int:
        self.census()
        found = self.learnt
        if found is None:
            return 0
        compiled = regex.compile(found[0])
        return (self.count if self.shape == found[0] else 0) + sum(1 for _, ln, _ in self.loose if compiled.match(ln))

    @property
    def whole_only(self) -> str | None:
        self.census()
        if self.json is None or not self.settled:
            return "its first block is blank or does not settle whether it starts like JSON"
        found = self.learnt
        if found is None:
            return "no header pattern is learnt from its first 2,000 lines"
        line = self.stray
        if self.shape is not None and self.shape != found[0]:
            line = self.first_like if line is None else min(line, self.first_like)
        elif line is None:
            try:
                line = _stray(self.loose, header_rust(found[0]))
            except Untranslatable as exc:
                return f"its learnt header cannot be run over lines: {exc}"
        if line is not None:
            return (f"line {line} looks like a header but starts no turn under the learnt one"
                    " (a chunk cut there would split a turn)")
        if self.overflow:
            return (f"more than {LOOSE_LINES} lines without a header-like line around them could start a turn:"
                    " they are matched only in the whole text")
        return None


def _stray(loose: list[tuple[int, str, bool]], rust: str) -> int | None:
    """The first header-like line among ``loose`` that the learnt header (``rust``) does not start a turn at."""
    like = [(number, line) for number, line, marked in loose if marked]
    if not like:
        return None
    starting = pl.Series([line for _, line in like], dtype=pl.Utf8).str.contains(rust).fill_null(False)
    missed = (~starting).arg_true()
    return like[int(missed[0])][0] if len(missed) else None


def _could_start(line: str) -> bool:
    """Whether a line could start a turn under some learnt header: every one starts with digits, blanks or
    punctuation, never with a word (``shape``'s tokens)."""
    tok = _TOKEN.match(line)
    return tok is not None and not tok.group().isalpha()


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
