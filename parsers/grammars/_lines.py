"""Helpers shared by the line-oriented human chat grammars (whatsapp, irc, inferred, discord-text):
line counts, the aggregated unreadable-time warning, and the day/month order of numeric dates
decided from a whole file. The line engine itself is ``parsers/engine.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from itertools import pairwise
from typing import NamedTuple

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from parsers.engine import Block, split_blocks
from parsers.sessions import file_name_id

_FIELDS = re.compile(r"\d+")


def line_count(text: str) -> int:
    """Number of lines of a text (a last line without a line end counts; an empty text has none)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def file_session(source: SourceText) -> ParsedSession:
    """The one session of a text file that is one chat: its id from the file name, all its lines."""
    sid = file_name_id(source.name)
    session = ParsedSession(sid, "file-name" if sid else "none", [], raw=source.text)
    session.lines = (1, line_count(source.text))
    return session


def blocks_session(source: SourceText, header: regex.Pattern, turn: Callable[[Block], Turn],
                   title: str | None) -> ParsedSession:
    """The one session of a chat file whose turns start at ``header``: each block's ``turn``, the text
    before the first header a preamble region."""
    session = file_session(source)
    session.title = title
    for block in split_blocks(source.text, header):
        if block.header is None:
            session.regions.append(Region(RegionKind.PREAMBLE, "text before the first message",
                                          lines=(block.line_start, block.line_end)))
            continue
        session.turns.append(turn(block))
    return session


def export_header(session: ParsedSession, body: str, span: tuple[int, int], title: regex.Pattern,
                  saved: regex.Pattern) -> None:
    """The lines before a chat export's first message (LINE, KakaoTalk): a ``session_header`` region
    when they hold the export's title line (its ``title`` group is the session's title; a ``saved``
    group, the save time, is ``meta.savedOn``), else a preamble region."""
    named = title.search(body)
    if named:
        session.title = named["title"].strip() or None
    stamp = saved.search(body)
    if stamp:
        session.meta["savedOn"] = stamp["saved"].strip()
    kind = RegionKind.SESSION_HEADER if named else RegionKind.PREAMBLE
    session.regions.append(Region(kind, "the export's title and save time" if named else
                                  "text before the first date or message line", lines=span))


def drop_final_newline(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


def unreadable_times(count: int, why: str) -> str:
    """The one aggregated warning line for the turns whose time could not be read."""
    return f"{count} turn time{'s' if count != 1 else ''} could not be read ({why}): time left empty, raw text kept"


def _fields(date: str) -> tuple[int, int, int]:
    a, b, c = (int(x) for x in _FIELDS.findall(date))
    return a, b, c


class DateOrder(NamedTuple):
    order: str
    """"dmy", "mdy" or "ymd"."""
    evidence: str
    at: int | None
    """Index of the message the evidence is at, if one."""
    basis: str
    """"year", "over12" (a field above 12), "forward" (the order under which the dates run forward),
    "changes" (which field changes more), "contradiction" or "none"."""


def date_order(runs: list[tuple[str, int]]) -> DateOrder:
    """Day/month order from the runs of equal dates of a file.

    ``runs``: (date text, index of its first message) for each run of equal consecutive dates.
    A date whose first field is a year (above 31) is year-first whatever the rest of the file says,
    so only the other dates decide between day-first and month-first.
    """
    if not runs:
        return DateOrder("dmy", "the file has no dates", None, "none")
    fields = [(_fields(d), i) for d, i in runs]
    rest = [(f, i) for f, i in fields if f[0] <= 31]
    if not rest:
        (a, _, _), i = fields[0]
        return DateOrder("ymd", f"the first field is a year, {a}", i, "year")
    return _day_or_month(rest)


def _day_or_month(fields: list[tuple[tuple[int, int, int], int]]) -> DateOrder:
    (top1, _, _), at1 = max(fields, key=lambda fi: fi[0][0])
    (_, top2, _), at2 = max(fields, key=lambda fi: fi[0][1])
    if top1 > 12 and top2 > 12:
        # Two locales in one file (an edited or merged export): the majority decides, with a warning.
        over1 = sum(1 for f, _ in fields if f[0] > 12)
        over2 = sum(1 for f, _ in fields if f[1] > 12)
        first = over1 >= over2
        return DateOrder("dmy" if first else "mdy",
                         f"contradictory dates: the first field exceeds 12 in {over1} dates, the second in"
                         f" {over2}; the {'first' if first else 'second'} is taken as the day",
                         at1 if first else at2, "contradiction")
    if top1 > 12:
        return DateOrder("dmy", f"first field reaches {top1}", at1, "over12")
    if top2 > 12:
        return DateOrder("mdy", f"second field reaches {top2}", at2, "over12")
    forward = _forward(fields)
    if forward is not None:
        return forward
    changes1 = sum(1 for x, y in pairwise(fields) if x[0][0] != y[0][0])
    changes2 = sum(1 for x, y in pairwise(fields) if x[0][1] != y[0][1])
    if changes1 != changes2:
        first = changes1 > changes2
        return DateOrder("dmy" if first else "mdy",
                         f"no field exceeds 12; the {'first' if first else 'second'} field changes more often"
                         f" between messages ({max(changes1, changes2)} vs {min(changes1, changes2)} times),"
                         " so it is the day", None, "changes")
    return DateOrder("dmy", f"no field exceeds 12 and neither changes more often ({changes1} times each):"
                     " day first", None, "none")


def _backwards(fields: list[tuple[tuple[int, int, int], int]], first: bool) -> list[tuple[tuple, tuple]]:
    """The consecutive dates that go back in time when the first field is the day (``first``) or the month."""
    def key(f: tuple[int, int, int]) -> tuple[int, int, int]:
        return (f[2], f[1], f[0]) if first else (f[2], f[0], f[1])
    return [(x[0], y[0]) for x, y in pairwise(fields) if key(y[0]) < key(x[0])]


def _forward(fields: list[tuple[tuple[int, int, int], int]]) -> DateOrder | None:
    """With no field above 12: the order under which the chat's dates run forward, when one of the two
    makes them go back in time fewer times (a chat is written in time order); None on a tie."""
    back1, back2 = _backwards(fields, True), _backwards(fields, False)
    if len(back1) == len(back2):
        return None
    first = len(back1) < len(back2)
    (x, y) = (back2 if first else back1)[0]
    rejected = "month" if first else "day"
    return DateOrder("dmy" if first else "mdy",
                     f"no field exceeds 12; read {'day' if first else 'month'} first the dates run forward"
                     f" ({min(len(back1), len(back2))} steps back, against {max(len(back1), len(back2))} read"
                     f" {rejected} first, the first {'/'.join(map(str, x))} then {'/'.join(map(str, y))});"
                     " an assumption", None, "forward")


def _ymd(y: int, m: int, d: int) -> datetime | None:
    if y < 100:
        y += 2000
    try:
        return datetime(y, m, d)
    except ValueError:
        return None


def day_of(date: str, order: str, *, strict: bool = False) -> datetime | None:
    """The calendar day of a header's date in the file's order. A date whose first field is a year is
    year-first. A date impossible in the file's order but a calendar date in the other (``5/18/19``
    in a day-first file that mixes dialects) is read in the other, unless ``strict``."""
    a, b, c = _fields(date)
    if a > 31 or order == "ymd":
        return _ymd(a, b, c)
    day = _ymd(c, a, b) if order == "mdy" else _ymd(c, b, a)
    if day is None and not strict:
        day = _ymd(c, b, a) if order == "mdy" else _ymd(c, a, b)
    return day




# The line engine lives in parsers/engine.py; these names stay importable from here.
from parsers.engine import line_patterns, scan  # noqa: E402, F401
