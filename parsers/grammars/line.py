"""LINE chat history exported as text ("Export chat history": ``[LINE] Chat history with Ann.txt``).

Shapes (one file is one chat, one session)::

    [LINE] Chat history with Ann Lee               <- title line (``in <group>`` for a group;
    Saved on: 2024/05/02 21:14                        other languages: ``[LINE] 山田とのトーク履歴``,
                                                      ``保存日時：...``): a session_header region
    2024/05/01(Wed)                                <- a date line: boilerplate region; also
    10:15	Ann Lee	Morning!                          ``2024/5/1（水）``, ``2024.05.01 Wednesday``,
    10:16	Bo	"first line                              ``Wed, 05/01/2024``, ``2024/5/1周三``
    second line"                                   <- a multi-line message, in double quotes
    10:20		Ann Lee joined the group.             <- no name: a System turn

Clocks: ``10:15``, ``3:05pm``, ``3:05 PM``, and the CJK meridiem prefixes ``午前``/``午後``
(Japanese) and ``上午``/``下午`` (Chinese) before the clock.

Decisions:
- Every message line (a clock, a tab, a name) is one turn (B2), continuation lines belong to it.
  A multi-line message loses the double quotes LINE wraps it in; a one-line message keeps its text
  exactly. A line with an empty name, or with no second tab, is a System turn (the text names
  the actor: the export gives no separate field).
- A message's time is its date line's date with its clock, naive (LINE writes local time without a
  zone; ``source_tz`` applies). A message before any date line has no date: its time is left empty
  and counted in one warning, never guessed.
- The lines before the first date or message line are the export's header (a ``session_header``
  region); the title is the first line without ``[LINE]``, and ``Saved on`` is ``meta.savedOn``.
- Quoted text is not parsed for structure: a quoted line that itself looks like ``10:15<TAB>Name<TAB>``
  starts a turn (the export gives no way to tell them apart).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import split_blocks
from parsers.linecount import LineCounts, LinePatterns, count
from parsers.registry import register
from parsers.timeparse import clock_24h, from_parts

from ._lines import export_header, file_session, unreadable_times

MERIDIEM = {"午前": "am", "上午": "am", "午後": "pm", "下午": "pm"}
MEDIA = frozenset({"[Photo]", "[Sticker]", "[Video]", "[File]", "[Voice message]", "[Location]", "[Album]",
                   "[写真]", "[スタンプ]", "[動画]", "[ファイル]", "[ボイスメッセージ]", "[位置情報]",
                   "[照片]", "[贴图]", "[視頻]", "[视频]", "[影片]", "[文件]", "[檔案]", "[貼圖]", "[语音信息]",
                   "[語音訊息]", "[位置]"})
"""The export's placeholders for an attachment (English, Japanese, Chinese): kind ``media``."""

_CLOCK = r"(?P<pre>午前|午後|上午|下午)?(?P<h>\d{1,2}):(?P<mi>\d{2})(?:[ \u202f]?(?P<ampm>[AaPp]\.?[Mm]\.?))?"
_DATE = (r"(?:(?P<y>\d{4})[/.](?P<m>\d{1,2})[/.](?P<d>\d{1,2})"
         r"(?:[ \t]*[(（][^)）\n]{1,9}[)）]|[ \t]*周\S|[ \t]+\p{L}+)?"
         r"|\p{L}{2,9},[ \t]*(?P<m2>\d{1,2})/(?P<d2>\d{1,2})/(?P<y2>\d{4}))")
HEADER = regex.compile(
    rf"^(?:(?P<date>{_DATE})[ \t]*$"
    rf"|(?P<clock>{_CLOCK})\t(?:(?P<name>[^\t\n]*)\t)?)",
    regex.MULTILINE,
)
TITLE = regex.compile(r"^\ufeff?\[LINE\][ \t]*(?P<title>[^\n]*)")
SAVED = regex.compile(r"^[^\n:：\t]{1,20}[:：][ \t]*(?P<saved>\d{4}/\d{1,2}/\d{1,2}[^\n]*)$", regex.MULTILINE)
_COUNT = regex.compile(r"^(?:午前|午後|上午|下午)?\d{1,2}:\d\d[^\t\n]{0,6}\t", regex.MULTILINE)


_DATE_LINE = regex.compile(rf"^(?:{_DATE})[ \t]*$", regex.MULTILINE)
DETECT_LINES = LinePatterns(2000, {
    "date": _DATE_LINE,
    "clock": regex.compile(rf"^{_CLOCK}\t", regex.MULTILINE),
    "title": TITLE,
}, unless={"clock": _DATE_LINE})
"""Detection's line patterns: HEADER's two alternatives (a message line is one the date line alternative,
tried first, does not take) and the title."""


def explained_share(sample: str) -> float:
    """Date lines, message lines and their continuations over the sample's non-blank lines, plus
    the header lines of a file that starts with ``[LINE]``; 0 without a date line or that title
    (tab-separated clock lines alone are too common to claim), or when message lines are rare."""
    return counted_share(count(sample, DETECT_LINES))


def counted_share(counts: LineCounts) -> float:
    """``explained_share`` from the counts of ``DETECT_LINES``."""
    messages, first = counts.hits["clock"], counts.first
    titled = first["title"] == 0
    if not messages or not (titled or counts.hits["date"]) or messages < 0.05 * counts.lines:
        return 0.0
    start = 0 if titled else min(i for i in (first["date"], first["clock"]) if i is not None)
    return (counts.lines - start) / counts.lines


def _time(day: datetime | None, h: regex.Match) -> datetime | None:
    meridiem = h["ampm"] or MERIDIEM.get(h["pre"] or "")
    hour = clock_24h(int(h["h"]), meridiem)
    if day is None or hour is None or hour > 23 or int(h["mi"]) > 59:
        return None
    return day.replace(hour=hour, minute=int(h["mi"]))


def _day(h: regex.Match) -> datetime | None:
    if h["y"]:
        return from_parts(int(h["y"]), int(h["m"]), int(h["d"]))
    return from_parts(int(h["y2"]), int(h["m2"]), int(h["d2"]))


def _text(body: str) -> str:
    """A message's text: LINE wraps a multi-line message in double quotes, which are not part of it."""
    if "\n" in body and body.startswith('"') and body.endswith('"'):
        return body[1:-1]
    return body


def _turn(h: regex.Match, body: str, span: tuple[int, int], when: datetime | None) -> Turn:
    text = _text(body)
    name = h["name"]
    raw = h["clock"]
    if not name:  # no name field, or an empty one: the export's own notice (joins, leaves, unsends)
        return Turn("System", "system", text, when, raw, None, "system", span)
    return Turn(name, "user", text, when, raw, None, "media" if text in MEDIA else "message", span)


@register
class Line(Grammar):
    name = "line"
    detect_needs = ("\t",)  # the tab after a message line's clock
    version = "1"
    description = "LINE chat history text export ([LINE] Chat history with ..., date lines, TIME<TAB>name<TAB>text)"
    turn_shape = HEADER.pattern
    example = "10:15\tAnn Lee\tMorning!"

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
            elif h["date"]:
                day = _day(h)
                # Text between a date line and the next message line is nobody's message: declared with it.
                why = "a date line of the export" + (" and text after it" if block.body.strip() else "")
                session.regions.append(Region(RegionKind.BOILERPLATE, why, lines=span))
            else:
                when = _time(day, h)
                undated += when is None
                session.turns.append(_turn(h, block.text, span, when))
        if undated:
            session.warnings.append(unreadable_times(undated, "no date line before the message, or not a clock"))
        yield session

    def count_turns(self, raw: Any) -> int:
        return len(_COUNT.findall(raw))
