"""IRC logs: supybot/limnoria, irssi, weechat, bracketed clocks (ZNC...), xchat/hexchat; one session per file.

Dialects (decided from the sample, one per file):
- supybot: ``2012-10-18T09:30:30+0000  <nick> text``, ``... *** nick has joined #chan``, ``... * nick waves``,
  ``... -nick- a notice``;
- irssi: ``10:00 <@nick> text``, ``10:01 -!- nick [~u@host] has joined #chan``, ``10:02  * nick waves``,
  ``10:03 -NickServ- a notice``, with ``--- Log opened Thu Oct 18 09:00:00 2012`` and ``--- Day changed
  Thu Oct 18 2012`` lines giving the date of the clock-only times that follow;
- weechat: ``2012-10-18 09:30:30<TAB>nick<TAB>text`` with ``-->``, ``<--``, ``--``, ``=!=`` and `` *``
  prefixes, an empty prefix (a line of the buffer's own: System), a nick written ``<nick>``, and its
  ``****  Beginning of log  ****`` / ``End of log`` info lines (logger lines, declared);
- bracketed (irclog2html's input, ZNC's log module, mIRC): ``[10:00] <nick> text``, ``[10:00:05] * nick
  waves``, ``[10:01] *** nick has joined #chan``, ZNC's ``*** Joins: nick (ident@host)`` / ``Parts:`` /
  ``Quits:``, ``[10:01] -!- ...``: clock-only times as irssi's;
- xchat / hexchat: ``dec 31 21:11:58 <nick> text`` (hexchat: a tab after the nick or the ``-->``, ``<--``,
  ``---``, ``*`` prefix), with ``**** BEGIN LOGGING AT Mon Dec 31 21:11:55 2001`` / ``ENDING LOGGING``
  lines that give the stamps their year (a stamp whose month is before the line's is in the next year).

An action written ``*nick waves`` (no space) keeps its nick. The dialects are data (``DIALECTS``).

Decisions:
- Every logged line is one turn (B1): messages, actions (kind ``action``) and notices (kind ``notice``)
  are their nick's turns; joins, parts, quits, kicks, nick, mode and topic changes are System turns
  with the nick who caused them as ``actor`` (kinds join/part/quit/topic, else system with
  ``extra.event``). Mode prefixes (``@``, ``+``...) are not part of a nick.
- The logger's own ``--- Log opened/closed``, ``--- Day changed``, ``**** BEGIN/ENDING LOGGING`` and
  weechat's info lines are not chat entries and not turns: they only date the clock times that follow
  (their count is in meta); each is a declared boilerplate region, and text before the first log line
  a preamble region.
- Clock-only times before any such line take the date in the file name (``#chan_2024-03-01.log``,
  ``2024-03-01.log``, ``#chan.20240301.log``: a logger that writes a file per day, ZNC's above all),
  recorded as an assumption with the count of turns it dated; with no date in the name they have none:
  time None, time_raw kept, one warning. No date is ever taken from the clock.
- supybot stamps carry a zone (aware times); weechat and irssi times are naive.
- Read as columns (``_irc_columns``, the same turns) and, above ``stream_text_bytes``, streamed in
  chunks through the same contract (``survey``, ``frames``): irssi's day, the counts and the channels
  named are carried from chunk to chunk; a log holding a line in another dialect's header shape is read whole.
- session_id: the file-name rule (``chat_<id>.log``...); otherwise, when the log names one channel
  (``has joined #ceph``, ``Log opened``/topic lines) and has a date, ``<channel>_<first date>``
  (``ceph_2012-10-18``, the channel without its ``#``), id_source ``source:channel``; else none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import PurePosixPath
from typing import Any

from models.records import ParsedSession, SourceText
from parsers.base import LineGrammar, Survey
from parsers.columns import LineTable, first_line_of, line_test, nonblank, unnamed
from parsers.linecount import LineCounts, LinePatterns, count
from parsers.registry import register
from parsers.sessions import file_name_id
from parsers.timeparse import from_parts

from . import _irc_columns as columns
from ._lines import unreadable_times

DIALECTS: dict[str, re.Pattern] = {
    "supybot": re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:?\d{2}))[ \t]+", re.M),
    # weechat: date and clock, a prefix column (a nick, or -->, <--, --, =!=, *), the text; its optional info
    # lines (logger.file.info_lines) are the logger's own.
    "weechat": re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\t"
                          r"(?P<marker>\*\*\*\*  (?:Beginning|End) of log  \*\*\*\*)?", re.M),
    "irssi": re.compile(
        r"^(?:(?P<clock>(?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?)[ \t]"
        r"|(?P<marker>--- (?:Log opened|Log closed|Day changed) ))", re.M
    ),
    # irclog2html's input, ZNC's log module, mIRC and others: a bracketed clock, the same lines after it.
    "bracketed": re.compile(
        r"^(?:\[(?P<clock>(?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?)\][ \t]"
        r"|(?P<marker>--- (?:Log opened|Log closed|Day changed) ))", re.M
    ),
    # xchat / hexchat: "dec 31 21:11:55 <nick> text" (hexchat puts a tab after the nick or event prefix),
    # the year from its "**** BEGIN LOGGING AT Mon Dec 31 21:11:55 2001" lines.
    "xchat": re.compile(
        r"^(?:(?P<clock>(?P<mon>[A-Za-z]{3}) (?P<dd> ?\d{1,2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}))[ \t]"
        r"|(?P<marker>\*\*\*\* (?:BEGIN|ENDING) LOGGING AT ))", re.M
    ),
}
CLOCK_ONLY = frozenset({"irssi", "bracketed", "xchat"})
"""Dialects whose stamp has no year: the day comes from the logger's own Log opened / Day changed (irssi)
or BEGIN LOGGING (xchat) lines, else from a date in the file name (``#chan_2024-03-01.log``: ZNC, and
any logger that writes a file per day), else the time is left empty with a warning."""
PATH_CHANNEL = re.compile(r"(?:^|[_.-])(?P<chan>[#&][^\s/_.]+)(?=$|[_.])")
"""A channel in a log's file or folder name (``#chan``, ``net_#chan_2024…``): its name up to ``_`` or ``.``."""
FILE_DATE = re.compile(r"(?<!\d)(?P<y>(?:19|20)\d\d)(?P<sep>[-._]?)(?P<m>0[1-9]|1[0-2])(?P=sep)"
                       r"(?P<d>0[1-9]|[12]\d|3[01])(?!\d)")
"""A date in a log's file name: ``2024-03-01``, ``20240301``, ``2024.03.01``, ``2024_03_01``."""
# What a chat line looks like after its stamp, in any dialect: detection's second signature.
# weechat's columns are date, clock, nick (or an event prefix), text: a tab after the clock alone is
# not IRC's shape (Zoom's ``10:02:15\t From  Ann : hi`` has one).
# (A line has no line end: the negated classes name it so that polars can test the pattern line by line.)
_SHAPED = re.compile(r"^\S+(?: +\S+){0,2}[ \t]+(?:<[^>\s\n]+>|\*\*\*|-!-|-->|<--|---?[ \t]|[ \t]?\*[ \t]|-[^\s\n-]+-)"
                     r"|^\S+ \S+\t[^\t\n]*\t")
# (phrase, kind, event): the first phrase found in an event line decides.
_EVENT_KINDS = (
    ("has joined", "join", "join"), ("has left", "part", "part"), ("has quit", "quit", "quit"),
    ("Joins:", "join", "join"), ("Parts:", "part", "part"), ("Quits:", "quit", "quit"),  # ZNC's log module
    ("was kicked", "part", "kick"), ("is now known as", "system", "nick"),
    ("topic", "topic", "topic"), ("mode/", "system", "mode"), ("sets mode", "system", "mode"),
    ("Mode ", "system", "mode"),
)
_ZNC_WHO = re.compile(r"^(?:Joins|Parts|Quits): (?P<nick>\S+)")
_MODE_BY = re.compile(r"\bby (?P<nick>[^\s\]]+)\s*$")
_KICK_BY = re.compile(r"^(?P<target>\S+) was kicked from \S+ by (?P<nick>\S+)")
_NEW_NICK = re.compile(r"is now known as (?P<nick>\S+)")
_CHANNEL = re.compile(r"(?<![^\s(\[])[#&][^\s,:\]]+")


SHAPED = "shaped"
_LINES = LinePatterns(300, {**DIALECTS, SHAPED: _SHAPED})
"""Detection's line patterns: each dialect's stamp, and IRC's shapes after a stamp (a blank line has none)."""


def _dialect(sample: str) -> tuple[str | None, int, int]:
    counts = count(sample, _LINES)
    return *_best(counts.hits), counts.lines


def _best(hits: dict[str, int]) -> tuple[str | None, int]:
    """The dialect with the most lines (the first in ``DIALECTS`` of those tied) and its lines."""
    best, most = None, 0
    for name in DIALECTS:
        if hits[name] > most:
            best, most = name, hits[name]
    return best, most


def event_of(text: str) -> tuple[str, str | None, dict[str, Any]]:
    """(kind, actor, extra facts) of a join/part/quit/nick/mode/topic line (its text after the prefix)."""
    kind, event = "system", None
    for phrase, k, e in _EVENT_KINDS:
        if phrase in text:
            kind, event = k, e
            break
    first = text.split(" ", 1)[0] if text else ""
    actor = first if first and not first.endswith(":") else None  # 'Irssi: Join to #x was synced'
    extra: dict[str, Any] = {}
    by = _ZNC_WHO.match(text) if event in ("join", "part", "quit") else None  # ZNC: "Joins: nick (...)"
    by = _MODE_BY.search(text) if event == "mode" else by
    if by:
        actor = by["nick"]
    if event == "kick" and (m := _KICK_BY.match(text)):
        actor, extra["target"] = m["nick"], m["target"]
    elif event == "nick" and (m := _NEW_NICK.search(text)):
        extra["newNick"] = m["nick"]
    if event and kind == "system":
        extra["event"] = event
    if actor:
        extra["actor"] = actor
    return kind, actor, extra


RUST = columns.rust_headers(DIALECTS)
_TESTS = {name: unnamed(p) for name, p in RUST.items()}
_COUNTED = {  # the independent count's idea of a logged line in each dialect (no two match one line)
    "irssi": r"^\d\d:\d\d",
    "bracketed": r"^\[\d\d:\d\d",
    "xchat": r"^[A-Za-z]{3} +\d{1,2} \d\d:\d\d:\d\d[ \t]",
    "weechat": r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\t(?!\*\*\*\*  (?:Beginning|End) of log)",
    "supybot": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*\s",
}
_COUNTED_ALL = re.compile("|".join(f"(?P<{name}>{p})" for name, p in _COUNTED.items()), re.M)


def counted_by_dialect(text: str) -> dict[str, int]:
    """``count_turns`` of the text in every dialect, in one pass (a line is one dialect's at most)."""
    found = dict.fromkeys(DIALECTS, 0)
    for m in _COUNTED_ALL.finditer(text):
        found[m.lastgroup] += 1
    return found
_ANY_HEADER = "|".join(f"(?:{p})" for p in _TESTS.values())


@register
class Irc(LineGrammar):
    name = "irc"
    version = "2"
    description = ("IRC log (supybot/limnoria, irssi, weechat, bracketed clocks: irclog2html, ZNC, mIRC; "
                   "xchat/hexchat); clock-only logs dated by their own date lines or the date in the file name")
    example = "2012-10-18T09:30:30+0000  <jamespage> the new ones do things quite differently"
    turn_shape = "|".join(f"(?:{p.pattern})" for p in DIALECTS.values())  # any dialect's stamp
    detect_lines = _LINES

    def detect(self, sample: str, name: str) -> float:
        """The share of non-blank lines that are log lines of the sample's dialect (every IRC line is
        one; the logger's own ``---`` lines are explained too). A sample whose lines have a stamp but
        not IRC's shapes after it (``<nick>``, ``-!-``, ``***``, a tab column) is discounted below
        the threshold."""
        return self.detect_counted(sample, name, count(sample, _LINES))

    def detect_counted(self, sample: str, name: str, counts: LineCounts) -> float:
        dialect, hits = _best(counts.hits)
        if not dialect or not counts.lines:
            return 0.0
        share = hits / counts.lines
        return share if counts.hits[SHAPED] >= 0.5 * hits else share * 0.45


    # The lines a chunk may start at: a header of any dialect. A streamed log has no header of
    # another dialect than its own (``LogSurvey.whole_only``), so these are its own turn starts.
    starts = staticmethod(line_test(_ANY_HEADER))

    def survey(self, sources: list[SourceText], table: LineTable, first_lines: list[int]) -> list[LogSurvey]:
        """Each text's line count, independent turn counts and header lines per dialect (the dialect is
        decided from the input's first 64 KiB, as ``parse``), from one ``str.contains`` per dialect
        over the whole table."""
        flags = {name: table.lines.str.contains(test).fill_null(False) for name, test in _TESTS.items()}
        early = (table.row_in_text() < 300) & nonblank(table.lines)
        hits = {name: table.counts(f & early) for name, f in flags.items()}
        heads = {name: table.counts(f) for name, f in flags.items()}
        any_heads = table.counts(self.starts(table.lines))
        out = []
        for i, text in enumerate(table.texts):
            found = LogSurvey(first_lines[i] + table.bounds[i + 1] - table.bounds[i] - 1, any_heads[i], text[:65536],
                              {name: n[i] for name, n in heads.items()}, text)
            if len(text) <= 65536:  # the whole sample is in this table
                found.hits = {name: n[i] for name, n in hits.items()}
            out.append(found)
        return out

    def sessions(self, source: SourceText, survey: LogSurvey) -> list[ParsedSession]:
        return [_new_session(survey.dialect, source.text, survey.lines)]

    def frames(self, sources: list[SourceText], table: LineTable, surveys: list[LogSurvey],
               sessions: list[list[ParsedSession]], first_lines: list[int]) -> list[list[columns.Chunk]]:
        """Each text's turn frame, the texts of one dialect read together; what spans chunks (irssi's
        day, the counts, the channels named) is carried on the survey's ``facts``."""
        facts = [v.started(s.name) for s, v in zip(sources, surveys, strict=True)]
        dialects = [v.dialect for v in surveys]
        out: list = [None] * len(surveys)
        for dialect in dict.fromkeys(dialects):
            mine = [i for i, d in enumerate(dialects) if d == dialect]
            chunks = columns.turn_frames(table.subset(mine), dialect, RUST[dialect], [facts[i].day for i in mine],
                                         [facts[i].from_name for i in mine], first_line_of(first_lines))
            for i, chunk in zip(mine, chunks, strict=True):
                _absorb(sessions[i][0], facts[i], chunk)
                out[i] = [chunk]
        return out

    def conclude(self, sessions: list[ParsedSession], source: SourceText, survey: LogSurvey, chunks: list) -> None:
        _conclude(sessions[0], source.name, survey.facts)

    def count_turns(self, raw: Any) -> int:
        dialect, text = raw
        return len(re.findall(_COUNTED.get(dialect, _COUNTED["supybot"]), text, re.M))


@dataclass(slots=True)
class Facts:
    """What a log's turns tell the session beyond themselves (counted across chunks when streamed)."""

    markers: int = 0
    undated: int = 0
    unreadable: int = 0
    channels: set[str] = field(default_factory=set)
    first_day: date | None = None
    day: datetime | None = None
    """irssi: the day in force at the end of the lines read so far."""
    from_name: bool = False
    """Whether that day is the file name's (no logger line has set one yet)."""
    named: int = 0
    """Turns dated by the file name's day."""


@dataclass(slots=True)
class LogSurvey(Survey):
    """What a log tells of itself as a whole (``Irc.survey``), and the facts its chunks add as they are read."""

    lines: int
    turns: int
    """Header lines of any dialect."""
    sample: str
    """The input's first 64 KiB, from which its dialect is decided."""
    heads_by: dict[str, int]
    """Header lines of each dialect."""
    text: str | None
    """The piece's text, until its turns are counted (``counted_by``: only when asked)."""
    counts: dict[str, int] | None = None
    hits: dict[str, int] | None = None
    """Each dialect's headers among the first 300 non-blank lines, when the whole sample was surveyed at once."""
    decided: str | None = None
    facts: Facts | None = None
    """What the turns read so far tell (``started`` before the first chunk)."""

    def then(self, more: LogSurvey) -> LogSurvey:
        """This survey, the next block's added (in place)."""
        self.lines = more.lines
        self.turns += more.turns
        if len(self.sample) < 65536:
            self.sample += more.sample[:65536 - len(self.sample)]
        self.hits = self.decided = None
        counted = self.counted_by
        for name, n in more.counted_by.items():
            counted[name] += n
        for name, n in more.heads_by.items():
            self.heads_by[name] += n
        return self

    @property
    def dialect(self) -> str:
        if self.decided is None:
            best = _best(self.hits)[0] if self.hits is not None else _dialect(self.sample)[0]
            self.decided = best or "supybot"
        return self.decided

    @property
    def counted_by(self) -> dict[str, int]:
        """The independent turn count in each dialect (``counted_by_dialect``), counted once, when first asked."""
        return self.census().counts

    @property
    def counted(self) -> int:
        return self.counted_by[self.dialect]

    def census(self) -> LogSurvey:
        if self.counts is None:  # counted now, on this thread
            self.counts, self.text = counted_by_dialect(self.text), None
        return self

    @property
    def whole_only(self) -> str | None:
        if self.heads_by[self.dialect] != self.turns:
            return "a line has another IRC dialect's header: the log is read whole"
        return None

    def started(self, name: str) -> Facts:
        """The facts carried from chunk to chunk, begun with the file name's day for a clock-only dialect."""
        if self.facts is None:
            day = file_day(name) if self.dialect in CLOCK_ONLY else None
            self.facts = Facts(day=day, from_name=day is not None)
        return self.facts


def file_day(name: str) -> datetime | None:
    """The date a log's file name holds (its base name: ``#chan_2024-03-01.log``), or None."""
    m = FILE_DATE.search(PurePosixPath(name).name)
    return from_parts(int(m["y"]), int(m["m"]), int(m["d"])) if m else None


def _new_session(dialect: str, text: str, lines: int) -> ParsedSession:
    session = ParsedSession(None, "none", [], raw=(dialect, text))
    session.lines = (1, lines)
    session.meta["dialect"] = dialect
    return session


def _absorb(session: ParsedSession, facts: Facts, chunk: columns.Chunk) -> None:
    """A chunk's declared regions and preamble into the session, its counts into ``facts``."""
    session.regions.extend(chunk.regions)
    if chunk.preamble is not None:
        session.meta["preamble"] = chunk.preamble
    facts.markers += chunk.markers
    facts.undated += chunk.undated
    facts.unreadable += chunk.bad
    facts.channels |= chunk.channels
    facts.first_day = facts.first_day or chunk.first_day
    facts.day = chunk.day
    facts.from_name = chunk.from_name
    facts.named += chunk.named


def _conclude(session: ParsedSession, name: str, facts: Facts) -> None:
    """The logger-line count, the time warnings and the session id, once every turn is read."""
    if facts.markers:
        session.meta["loggerLines"] = facts.markers
    if facts.named:
        day = file_day(name)  # the file name's date, which dated them
        session.assumptions.append(
            f"{facts.named} clock time{'s' if facts.named != 1 else ''} dated {day:%Y-%m-%d}, the date in the file "
            f"name {PurePosixPath(name).name!r}: the log holds no date of its own for them")
    if facts.undated:
        session.warnings.append(unreadable_times(facts.undated, "a clock time before any Day changed/Log opened"
                                                 " date"))
    if facts.unreadable:
        session.warnings.append(unreadable_times(facts.unreadable, "not a calendar date or clock time"))
    _identify(session, name, facts.channels | set(_CHANNEL.findall(session.meta.get("preamble", ""))),
              facts.first_day)


def _identify(session: ParsedSession, name: str, channels: set[str], first_day: date | None) -> None:
    sid = file_name_id(name)
    if sid:
        session.session_id, session.id_source = sid, "file-name"
        return
    if len(channels) == 1 and first_day is not None:
        channel = channels.pop()
        session.session_id = f"{channel.lstrip('#&')}_{first_day.isoformat()}"
        session.id_source = "source:channel"
        session.meta["channel"] = channel
    elif len(channels) > 1:
        session.assumptions.append(f"no session id: the log names {len(channels)} channels")
    elif not channels and first_day is not None and (named := _path_channel(name)):
        session.session_id = f"{named.lstrip('#&')}_{first_day.isoformat()}"
        session.id_source = "source:channel in the file's path"
        session.meta["channel"] = named
        session.assumptions.append(f"the channel {named} is taken from the file's path (the log names none)")


def _path_channel(name: str) -> str | None:
    """The channel a logger's path names, when it names one: ZNC's ``#chan/2024-03-01.log`` or
    ``network_#chan_20240301.log``, irssi's ``#chan.log``."""
    found = {m["chan"] for part in PurePosixPath(name).parts for m in PATH_CHANNEL.finditer(part)}
    return found.pop() if len(found) == 1 else None

