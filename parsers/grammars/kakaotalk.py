"""KakaoTalk chat exported as text ("Export chat" / 대화 내보내기): PC and mobile, Korean and English.

Shapes (one file is one chat, one session; the patterns are data, ``_kakaotalk_data.py``)::

    홍길동 님과 카카오톡 대화                          <- title line (``KakaoTalk Chats with Ann``...)
    저장한 날짜 : 2024-03-01 12:40:00                 <- save time (``Date Saved : ...``): with the title,
                                                        a session_header region
    --------------- 2024년 3월 1일 금요일 ---------------   <- PC date line (``Friday, March 1, 2024``):
    [홍길동] [오후 12:34] 안녕하세요                   <- PC message, dated by the line above   boilerplate
    두 번째 줄                                        <- a continuation line of the message
    김철수님이 들어왔습니다.                           <- PC notice (a known ending): a System turn
    2024년 3월 1일 금요일                              <- mobile date line (``2024. 3. 1. 금요일``)
    2024년 3월 1일 오후 12:34, 홍길동 : 안녕하세요      <- Android message (iOS: ``2024. 3. 1. 오후 12:34, ``;
    Mar 1, 2024, 12:34 PM, Ann : Hello                  English: ``Mar 1, 2024, 12:34 PM, ``)
    2024. 3. 1. 12:36: 김철수님이 나갔습니다.           <- a mobile notice: no `` : `` after a name

Decisions:
- Every message line is one turn (B2); the lines after it until the next message, notice or date
  line are its text. A line of text that itself has a message line's shape starts a turn (the export
  gives no way to tell them apart), as in every line format.
- Times are naive local times (KakaoTalk writes no zone; ``source_tz`` applies). A PC message takes
  its day from the date line above it; one before any date line has no time (left empty, counted in
  one warning, never guessed). A mobile message carries its own day. A PC notice has no clock: no time.
- A mobile line with a stamp and no ``name : `` is a notice (a System turn); a name is read up to the
  first `` : ``, so a notice that itself holds `` : `` would be read as a message of that name.
- The lines before the first date, message or notice line are the export's header: a
  ``session_header`` region when it holds the title line (the title is the session's title, the save
  time ``meta.savedOn``), else a preamble region. Whole-message placeholders (``사진``, ``Photo``,
  ``파일: a.pdf``) are turns of kind ``media``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import Block, split_blocks
from parsers.linecount import LineCounts, LinePatterns, count
from parsers.registry import register
from parsers.timeparse import clock_24h, from_parts

from . import _kakaotalk_data as data
from ._lines import export_header, file_session, unreadable_times

_NOTICE_AHEAD = (r"(?P<pcnotice>(?=[^\[\n][^\n]*?(?:"
                 + "|".join(regex.escape(e) for e in data.NOTICE_ENDS) + r")[ \t]*$))")
HEADER = regex.compile(
    rf"^(?:(?P<dateline>{data.DATE_LINE})|{data.PC_MESSAGE}|{data.MOBILE_MESSAGE}|{_NOTICE_AHEAD})",
    regex.MULTILINE,
)
TITLE = regex.compile(r"^\ufeff?(?:" + "|".join(f"(?:{t})" for t in data.TITLES) + r")[ \t]*$", regex.MULTILINE)
SAVED = regex.compile(rf"^{data.SAVED}$", regex.MULTILINE)
MEDIA = regex.compile(data.MEDIA_PATTERN)
# The independent count: a PC message line, a mobile stamp followed by a name or a notice, a PC notice.
_COUNT = regex.compile(
    r"^(?:\[[^\]\n]+\] \[[^\]\n]*\d:\d\d[^\]\n]*\]"
    r"|\d{4}(?:년|\.) ?\d{1,2}(?:월|\.) ?\d{1,2}(?:일|\.),? [^\n]*?\d:\d\d(?: ?[AaPp]\.?[Mm]\.?)?[,:] "
    r"|[A-Z][a-z]{2,8}\.? \d{1,2}, \d{4}(?:,| at) [^\n]*?\d:\d\d(?: ?[AaPp]\.?[Mm]\.?)?[,:] "
    r"|[^\[\n][^\n]*?(?:" + "|".join(regex.escape(e) for e in data.NOTICE_ENDS) + r")[ \t]*$)",
    regex.MULTILINE,
)


_M = regex.MULTILINE
_NOTICE = (r"[^\[\n][^\n]*?(?:" + "|".join(regex.escape(e) for e in data.NOTICE_ENDS) + r")[ \t]*$")
_TAKEN = regex.compile(rf"^(?:{data.DATE_LINE}|{data.PC_MESSAGE})", _M)
DETECT_LINES = LinePatterns(2000, {
    "dateline": regex.compile(rf"^{data.DATE_LINE}", _M),
    "pc": regex.compile(rf"^{data.PC_MESSAGE}", _M),
    "mobile": regex.compile(rf"^{data.MOBILE_MESSAGE}", _M),
    "mobile named": regex.compile(rf"^{data.MOBILE_STAMP}, [^\n]+? : ", _M),
    "notice": regex.compile(rf"^{_NOTICE}", _M),
    "title": TITLE,
}, unless={"pc": regex.compile(rf"^{data.DATE_LINE}", _M), "mobile": _TAKEN, "mobile named": _TAKEN})
"""Detection's line patterns: HEADER's alternatives, each counting the lines an earlier one does not take
(the notice's lookahead read as text: nothing follows it), a mobile line with a name, and the title. A
mobile stamp can end in one place only where a ``,`` or ``:`` follows it, so a mobile line that has a
name after its stamp is one HEADER reads with its name."""


def explained_share(sample: str) -> float:
    """Header lines, date lines, message lines and their continuations over the sample's non-blank
    lines; 0 without a message line, or without a date line or stamped message to date it, or when
    message lines are rare. Lines before the first are explained when the first line is a title."""
    return counted_share(count(sample, DETECT_LINES))


def counted_share(counts: LineCounts) -> float:
    """``explained_share`` from the counts of ``DETECT_LINES``."""
    hits, first = counts.hits, counts.first
    messages = hits["pc"] + hits["mobile named"]  # a notice alone makes no chat
    dated = hits["dateline"] or hits["mobile"]
    if not messages or not dated or messages < 0.05 * counts.lines:
        return 0.0
    marks = ("dateline", "pc", "mobile", "notice")
    start = 0 if first["title"] == 0 else min(first[k] for k in marks if first[k] is not None)
    return (counts.lines - start) / counts.lines


def _day(h: regex.Match) -> datetime | None:
    if h["mon"]:
        month = data.MONTHS.get(h["mon"].lower())
        return from_parts(int(h["y"]), month, int(h["d"])) if month else None
    return from_parts(int(h["y"]), int(h["m"]), int(h["d"]))


def _time(day: datetime | None, h: regex.Match) -> datetime | None:
    hour = clock_24h(int(h["h"]), h["ampm"] or data.MERIDIEM.get(h["mer"] or ""))
    if day is None or hour is None or hour > 23 or int(h["mi"]) > 59 or int(h["s"] or 0) > 59:
        return None
    return day.replace(hour=hour, minute=int(h["mi"]), second=int(h["s"] or 0))


def _kind(text: str) -> str:
    return "media" if MEDIA.fullmatch(text.strip()) else "message"


@register
class KakaoTalk(Grammar):
    name = "kakaotalk"
    detect_needs = ("] [", " : ")  # a PC message line's brackets, a mobile message's name separator
    version = "1"
    description = ("KakaoTalk chat export as text, PC and mobile (Android, iOS), Korean and English "
                   "([name] [오후 2:30] text under date lines; 2024년 3월 1일 오후 2:30, name : text)")
    turn_shape = HEADER.pattern
    example = "--------------- 2024년 3월 1일 금요일 ---------------\n[홍길동] [오후 12:34] 안녕하세요"

    detect_lines = DETECT_LINES

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample)

    def detect_counted(self, sample: str, name: str, counts: LineCounts) -> float:
        return counted_share(counts)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        session = file_session(source)
        day: datetime | None = None
        undated = 0
        for block in split_blocks(source.text, HEADER):
            h, span = block.header, (block.line_start, block.line_end)
            if h is None:
                export_header(session, block.body, span, TITLE, SAVED)
            elif h["dateline"] is not None:
                day = _day(h)
                why = "a date line of the export" + (" and text after it" if block.body.strip() else "")
                session.regions.append(Region(RegionKind.BOILERPLATE, why, lines=span))
            else:
                turn = _turn(h, block, day)
                undated += turn.time is None and turn.time_raw is not None
                session.turns.append(turn)
        if undated:
            session.warnings.append(unreadable_times(undated, "no date line before the message, or not a clock"))
        yield session

    def count_turns(self, raw: Any) -> int:
        return len(_COUNT.findall(raw))


def _turn(h: regex.Match, block: Block, day: datetime | None) -> Turn:
    span = (block.line_start, block.line_end)
    if h["pcnotice"] is not None:  # an unstamped join/leave line of the PC export
        return Turn("System", "system", block.text, None, None, None, "notice", span)
    when = _time(_day(h) if h["day"] else day, h)
    raw = h.string[h.start("day"):h.end("clock")] if h["day"] else h["clock"]  # the stamp as written
    if h["name"] is None:  # a mobile notice: the stamp, then what happened
        return Turn("System", "system", block.text, when, raw, None, "notice", span)
    return Turn(h["name"], "user", block.text, when, raw, None, _kind(block.text), span)
