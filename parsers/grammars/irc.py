"""IRC logs: supybot/limnoria, irssi and weechat styles, one session per file.

Dialects (decided from the sample, one per file):
- supybot: ``2012-10-18T09:30:30+0000  <nick> text``, ``... *** nick has joined #chan``, ``... * nick waves``;
- irssi: ``10:00 <@nick> text``, ``10:01 -!- nick [~u@host] has joined #chan``, ``10:02  * nick waves``,
  with ``--- Log opened Thu Oct 18 09:00:00 2012`` and ``--- Day changed Thu Oct 18 2012`` lines
  giving the date of the clock-only times that follow (without one: no date, and a warning);
- weechat: ``2012-10-18 09:30:30<TAB>nick<TAB>text`` with ``-->``, ``<--``, ``--`` and `` *`` prefixes.

Every line is a turn (B1): messages and notices of people, actions (kind ``action``), and joins,
parts, quits, nick and topic changes as System turns with the nick as ``actor``. Mode prefixes
(``@``, ``+``) are not part of a nick. The ``--- Log opened/closed`` and ``Day changed`` lines are
the logger's own and are not turns.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import split_blocks
from parsers.registry import register
from parsers.sessions import file_name_id
from parsers.timeparse import parse_iso

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
DIALECTS: dict[str, re.Pattern] = {
    "supybot": re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:?\d{2}))[ \t]+", re.M),
    "weechat": re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\t", re.M),
    "irssi": re.compile(
        r"^(?:(?P<clock>\d{2}:\d{2}(?::\d{2})?)[ \t]|(?P<marker>--- (?:Log opened|Log closed|Day changed) ))", re.M
    ),
}
_IRSSI_DATE = re.compile(r"(?P<mon>[A-Z][a-z]{2}) (?P<day>\d{1,2})(?: \d{2}:\d{2}:\d{2})? (?P<year>\d{4})")
_NICK = r"[@+%~& ]?(?P<nick>[^\s>]+)"
_MESSAGE = re.compile(rf"^<{_NICK}>[ \t]?(?P<text>.*)$", re.S)
_ACTION = re.compile(r"^\*[ \t]+(?P<nick>[^\s*]+)[ \t]?(?P<text>.*)$", re.S)
_NOTICE = re.compile(r"^-(?P<nick>[^\s-][^\s]*?)(?:\([^)]*\))?-[ \t]?(?P<text>.*)$", re.S)
_EVENT = re.compile(r"^(?:\*\*\*|-!-|-->|<--|--)[ \t]+(?P<text>.*)$", re.S)
_EVENT_KIND = (("has joined", "join"), ("has left", "part"), ("has quit", "quit"), ("is now known as", "nick"),
               ("changed the topic", "topic"), ("mode/", "mode"), ("sets mode", "mode"))


def _dialect(sample: str) -> tuple[str | None, int, int]:
    lines = [ln for ln in sample.split("\n")[:300] if ln.strip()]
    best, hits = None, 0
    for name, pattern in DIALECTS.items():
        n = sum(1 for ln in lines if pattern.match(ln))
        if n > hits:
            best, hits = name, n
    return best, hits, len(lines)


def _event(text: str) -> tuple[str, str | None]:
    kind = next((k for phrase, k in _EVENT_KIND if phrase in text), "system")
    actor = text.split(" ", 1)[0] if text else None
    return kind, actor


@register
class Irc(Grammar):
    name = "irc"
    version = "1"
    description = "IRC log (supybot/limnoria, irssi, weechat)"
    example = "2012-10-18T09:30:30+0000  <jamespage> the new ones do things quite differently"

    def detect(self, sample: str, name: str) -> float:
        dialect, hits, lines = _dialect(sample)
        if not dialect or hits < max(1, 0.5 * lines):
            return 0.0
        shaped = sum(1 for ln in sample.split("\n")[:300]
                     if re.search(r"^\S+(?: \S+)?[ \t]+(?:<[^>\s]+>|\*\*\*|-!-|-->|<--|\* )", ln)
                     or "\t" in ln)
        return 0.93 if shaped >= 0.5 * hits else 0.4

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        text = source.text
        dialect, _, _ = _dialect(text[:65536])
        header = DIALECTS[dialect or "supybot"]
        sid = file_name_id(source.name)
        session = ParsedSession(sid, "file-name" if sid else "none", [], raw=(dialect, text))
        session.lines = (1, text.count("\n") + (0 if text.endswith("\n") else 1))
        session.meta["dialect"] = dialect
        day: datetime | None = None
        undated = 0
        for block in split_blocks(text, header):
            h = block.header
            if h is None:
                if block.body.strip():
                    session.meta["preamble"] = block.body.strip("\n")
                continue
            if dialect == "irssi" and h["marker"]:
                m = _IRSSI_DATE.search(block.body)
                if m and m["mon"].lower() in _MONTHS:
                    day = datetime(int(m["year"]), _MONTHS[m["mon"].lower()], int(m["day"]))
                continue
            when, raw = self._time(h, dialect, day)
            if when is None and dialect == "irssi":
                undated += 1
            session.turns.append(self._turn(block.body, dialect, when, raw, (block.line_start, block.line_end)))
        if undated:
            session.warnings.append(f"{undated} lines have a clock time but no Day changed/Log opened date: no date")
        yield session

    @staticmethod
    def _time(h: re.Match, dialect: str | None, day: datetime | None) -> tuple[datetime | None, str]:
        if dialect == "irssi":
            raw = h["clock"]
            if day is None:
                return None, raw
            parts = [int(p) for p in raw.split(":")]
            return day.replace(hour=parts[0], minute=parts[1], second=parts[2] if len(parts) > 2 else 0), raw
        raw = h["ts"]
        return parse_iso(raw), raw

    @staticmethod
    def _turn(body: str, dialect: str | None, when, raw: str, lines: tuple[int, int]) -> Turn:
        if dialect == "weechat":
            prefix, _, text = body.partition("\t")
            prefix = prefix.strip()
            if prefix in ("-->", "<--", "--"):
                body = f"{prefix} {text}"
            elif prefix == "*":
                body = f"* {text}"
            else:
                body = f"<{prefix}> {text}"
        body = body.lstrip(" ") if not body.startswith(" *") else body.lstrip()
        if m := _MESSAGE.match(body):
            return Turn(m["nick"], "user", m["text"], when, raw, None, "message", lines)
        if m := _EVENT.match(body):
            kind, actor = _event(m["text"])
            return Turn("System", "system", m["text"], when, raw, None, kind, lines,
                        extra={"actor": actor} if actor else None)
        if m := _ACTION.match(body):
            return Turn(m["nick"], "user", m["text"], when, raw, None, "action", lines)
        if m := _NOTICE.match(body):
            return Turn(m["nick"], "user", m["text"], when, raw, None, "notice", lines)
        return Turn("System", "system", body, when, raw, None, "system", lines)

    def count_turns(self, raw: Any) -> int:
        dialect, text = raw
        if dialect == "irssi":
            return sum(1 for ln in text.split("\n") if re.match(r"\d{2}:\d{2}", ln))
        return len(DIALECTS[dialect or "supybot"].findall(text))
