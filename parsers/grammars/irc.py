"""IRC logs: supybot/limnoria, irssi and weechat styles, one session per file.

Dialects (decided from the sample, one per file):
- supybot: ``2012-10-18T09:30:30+0000  <nick> text``, ``... *** nick has joined #chan``, ``... * nick waves``,
  ``... -nick- a notice``;
- irssi: ``10:00 <@nick> text``, ``10:01 -!- nick [~u@host] has joined #chan``, ``10:02  * nick waves``,
  ``10:03 -NickServ- a notice``, with ``--- Log opened Thu Oct 18 09:00:00 2012`` and ``--- Day changed
  Thu Oct 18 2012`` lines giving the date of the clock-only times that follow;
- weechat: ``2012-10-18 09:30:30<TAB>nick<TAB>text`` with ``-->``, ``<--``, ``--`` and `` *`` prefixes.

Decisions:
- Every logged line is one turn (B1): messages, actions (kind ``action``) and notices (kind ``notice``)
  are their nick's turns; joins, parts, quits, kicks, nick, mode and topic changes are System turns
  with the nick who caused them as ``actor`` (kinds join/part/quit/topic, else system with
  ``extra.event``). Mode prefixes (``@``, ``+``...) are not part of a nick.
- The logger's own ``--- Log opened/closed`` and ``--- Day changed`` lines are not chat entries and
  not turns: they only date the irssi clock times that follow (their count is in meta); each is a
  declared boilerplate region, and text before the first log line a preamble region. Irssi times
  before any such line have no date: time None, time_raw kept, one warning.
- supybot stamps carry a zone (aware times); weechat and irssi times are naive.
- session_id: the file-name rule (``chat_<id>.log``...); otherwise, when the log names one channel
  (``has joined #ceph``, ``Log opened``/topic lines) and has a date, ``<channel>_<first date>``
  (``ceph_2012-10-18``, the channel without its ``#``), id_source ``source:channel``; else none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import split_blocks
from parsers.registry import register
from parsers.sessions import file_name_id
from parsers.timeparse import from_parts, parse_iso

from ._lines import line_count, unreadable_times

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
DIALECTS: dict[str, re.Pattern] = {
    "supybot": re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:?\d{2}))[ \t]+", re.M),
    "weechat": re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\t", re.M),
    "irssi": re.compile(
        r"^(?:(?P<clock>(?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?)[ \t]"
        r"|(?P<marker>--- (?:Log opened|Log closed|Day changed) ))", re.M
    ),
}
# What a chat line looks like after its stamp, in any dialect: detection's second signature.
# weechat's columns are date, clock, nick (or an event prefix), text: a tab after the clock alone is
# not IRC's shape (Zoom's ``10:02:15\t From  Ann : hi`` has one).
_SHAPED = re.compile(r"^\S+(?: \S+)?[ \t]+(?:<[^>\s]+>|\*\*\*|-!-|-->|<--|--[ \t]|[ \t]?\* |-[^\s-]+-)"
                     r"|^\S+ \S+\t[^\t]*\t")
_IRSSI_DATE = re.compile(r"(?P<mon>[A-Z][a-z]{2}) +(?P<day>\d{1,2})(?: \d{2}:\d{2}:\d{2})? (?P<year>\d{4})")
_NICK = r"[@+%~&!]?(?P<nick>[^\s>]+)"
_MESSAGE = re.compile(rf"^<[ ]?{_NICK}>[ \t]?(?P<text>.*)$", re.S)
_ACTION = re.compile(r"^\*[ \t]+(?P<nick>[^\s*]+)[ \t]?(?P<text>.*)$", re.S)
_NOTICE = re.compile(r"^-(?P<nick>[^\s-][^\s]*?)(?:\([^)]*\))?-[ \t]?(?P<text>.*)$", re.S)
_EVENT = re.compile(r"^(?:\*\*\*|-!-|-->|<--|--)[ \t]+(?P<text>.*)$", re.S)
# (phrase, kind, event): the first phrase found in an event line decides.
_EVENT_KINDS = (
    ("has joined", "join", "join"), ("has left", "part", "part"), ("has quit", "quit", "quit"),
    ("was kicked", "part", "kick"), ("is now known as", "system", "nick"),
    ("topic", "topic", "topic"), ("mode/", "system", "mode"), ("sets mode", "system", "mode"),
    ("Mode ", "system", "mode"),
)
_MODE_BY = re.compile(r"\bby (?P<nick>[^\s\]]+)\s*$")
_KICK_BY = re.compile(r"^(?P<target>\S+) was kicked from \S+ by (?P<nick>\S+)")
_NEW_NICK = re.compile(r"is now known as (?P<nick>\S+)")
_CHANNEL = re.compile(r"(?<![^\s(\[])[#&][^\s,:\]]+")


def _dialect(sample: str) -> tuple[str | None, int, int]:
    lines = [ln for ln in sample.split("\n")[:300] if ln.strip()]
    best, hits = None, 0
    for name, pattern in DIALECTS.items():
        n = sum(1 for ln in lines if pattern.match(ln))
        if n > hits:
            best, hits = name, n
    return best, hits, len(lines)


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
    if event == "mode" and (m := _MODE_BY.search(text)):
        actor = m["nick"]
    elif event == "kick" and (m := _KICK_BY.match(text)):
        actor, extra["target"] = m["nick"], m["target"]
    elif event == "nick" and (m := _NEW_NICK.search(text)):
        extra["newNick"] = m["nick"]
    if event and kind == "system":
        extra["event"] = event
    if actor:
        extra["actor"] = actor
    return kind, actor, extra


@register
class Irc(Grammar):
    name = "irc"
    version = "2"
    description = "IRC log (supybot/limnoria, irssi, weechat)"
    example = "2012-10-18T09:30:30+0000  <jamespage> the new ones do things quite differently"

    def detect(self, sample: str, name: str) -> float:
        """The share of non-blank lines that are log lines of the sample's dialect (every IRC line is
        one; the logger's own ``---`` lines are explained too). A sample whose lines have a stamp but
        not IRC's shapes after it (``<nick>``, ``-!-``, ``***``, a tab column) is discounted below
        the threshold."""
        dialect, hits, lines = _dialect(sample)
        if not dialect or not lines:
            return 0.0
        share = hits / lines
        shaped = sum(1 for ln in sample.split("\n")[:300] if _SHAPED.search(ln))
        return share if shaped >= 0.5 * hits else share * 0.45

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        text = source.text
        dialect, _, _ = _dialect(text[:65536])
        dialect = dialect or "supybot"
        session = ParsedSession(None, "none", [], raw=(dialect, text))
        session.lines = (1, line_count(text))
        session.meta["dialect"] = dialect
        day: datetime | None = None
        undated = unreadable = markers = 0
        turns = session.turns
        for block in split_blocks(text, DIALECTS[dialect]):
            h = block.header
            if h is None:
                session.meta["preamble"] = block.body
                session.regions.append(Region(RegionKind.PREAMBLE, "text before the first log line",
                                              lines=(block.line_start, block.line_end)))
                continue
            if dialect == "irssi" and h["marker"]:
                markers += 1
                session.regions.append(Region(RegionKind.BOILERPLATE, "irssi's own Log opened/closed or Day changed"
                                              " line: it dates the clock times that follow, nobody said it",
                                              lines=(block.line_start, block.line_end)))
                m = _IRSSI_DATE.search(block.body)
                if m and m["mon"].lower() in _MONTHS:
                    day = from_parts(int(m["year"]), _MONTHS[m["mon"].lower()], int(m["day"]))
                continue
            if dialect == "irssi":
                raw = h["clock"]
                when = None
                if day is None:
                    undated += 1
                else:
                    when = from_parts(day.year, day.month, day.day, int(h["h"]), int(h["mi"]), int(h["s"] or 0))
                    unreadable += when is None
            else:
                raw = h["ts"]
                when = parse_iso(raw)
                unreadable += when is None
            turns.append(_turn(block.body, dialect, when, raw, (block.line_start, block.line_end)))
        if markers:
            session.meta["loggerLines"] = markers
        if undated:
            session.warnings.append(unreadable_times(undated, "a clock time before any Day changed/Log opened date"))
        if unreadable:
            session.warnings.append(unreadable_times(unreadable, "not a calendar date or clock time"))
        self._identify(session, source.name)
        yield session

    @staticmethod
    def _identify(session: ParsedSession, name: str) -> None:
        sid = file_name_id(name)
        if sid:
            session.session_id, session.id_source = sid, "file-name"
            return
        channels = {c for t in session.turns if t.role == "system" for c in _CHANNEL.findall(t.content)}
        channels |= set(_CHANNEL.findall(session.meta.get("preamble", "")))
        first_day = next((t.time for t in session.turns if t.time is not None), None)
        if len(channels) == 1 and first_day is not None:
            channel = channels.pop()
            session.session_id = f"{channel.lstrip('#&')}_{first_day.date().isoformat()}"
            session.id_source = "source:channel"
            session.meta["channel"] = channel
        elif len(channels) > 1:
            session.assumptions.append(f"no session id: the log names {len(channels)} channels")

    def count_turns(self, raw: Any) -> int:
        dialect, text = raw
        if dialect == "irssi":
            return len(re.findall(r"^\d\d:\d\d", text, re.M))
        if dialect == "weechat":
            return len(re.findall(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\t", text, re.M))
        return len(re.findall(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*\s", text, re.M))


def _turn(body: str, dialect: str, when: datetime | None, raw: str, lines: tuple[int, int]) -> Turn:
    if dialect == "weechat":
        # weechat puts the nick (or an event prefix) in a column of its own: rewrite it as the
        # other dialects write it so one set of line shapes serves all three.
        prefix, _, text = body.partition("\t")
        prefix = prefix.strip()
        if prefix in ("-->", "<--", "--"):
            body = f"{prefix} {text}"
        elif prefix == "*":
            body = f"* {text}"
        else:
            body = f"<{prefix}> {text}"
    else:
        body = body.lstrip(" \t")
    if m := _MESSAGE.match(body):
        return Turn(m["nick"], "user", m["text"], when, raw, None, "message", lines)
    if m := _EVENT.match(body):
        kind, _, extra = event_of(m["text"])
        return Turn("System", "system", m["text"], when, raw, None, kind, lines, extra=extra or None)
    if m := _ACTION.match(body):
        return Turn(m["nick"], "user", m["text"], when, raw, None, "action", lines)
    if m := _NOTICE.match(body):
        return Turn(m["nick"], "user", m["text"], when, raw, None, "notice", lines)
    return Turn("System", "system", body, when, raw, None, "system", lines)
