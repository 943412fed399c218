"""WhatsApp text exports (Android and iOS), one session per file.

Dialects: ``12/24/19, 11:23 - Name: text`` and ``15.04.2016, 15:04 - Name: text`` (Android),
``9/24/2019 11:30 p.m. - Name: text``, ``[8/15/23, 9:12:33 AM] Name: text`` (iOS), ``2019-12-24 11:23 -``
(year-first locales); 12 h or 24 h clocks, ``AM``/``p.m.``/``p. m.``/``a. m.``, seconds or not, 2- or
4-digit years, separators ``/ . -``, and the invisible U+200E / U+200F / U+202F marks WhatsApp puts
in and around headers. Marks are stripped from headers; message text is kept as it is except one
leading U+200E (iOS puts one before placeholders and notices).

Decisions:
- Day/month order is decided once for the whole file, from every header: a field above 12 is the
  day; when no field exceeds 12, the field that changes more often between consecutive messages is
  the day (days change more often than months); with no evidence at all, day first, with a warning.
  The decision and its evidence (value, line) go to session.assumptions; dates that contradict
  each other (both fields above 12 somewhere) are decided by the majority, with a warning.
- An hour above 12 ignores the meridiem (``13:37:00 p.m.`` occurs in real exports); ``0 AM`` is
  unreadable (time None, one aggregated warning).
- System notices are turns (B1) with speaker "System": lines with no ``Name: `` (``You were added``,
  ``+12 345 578 created group "X"``, the e2e notice), lines whose ``Name`` part holds a notice phrase
  (``Ann changed the subject to "Plans: v2"``), and notices that look authored (``Group: Messages and
  calls are end-to-end encrypted...``) or iOS group events (``Group: \u200eAnn added Bob``), whose
  label is kept as ``sourceLabel``. The person named before the notice phrase is the ``actor``.
  Notice and placeholder texts are data (NOTICES below, per language): another language is one
  more entry.
- Media placeholders (``image omitted``, ``<Media omitted>``, ``<attached: ...>``) are their author's
  turns with kind ``media``.
- Lines before the first header (not part of any message) are kept in meta as the preamble.

Speed: a 100 MB export has a million messages, and the parse is one pass over them. The header
pattern also captures the author and the first line; the scan jumps from line end to line end
(``_lines.scan``); times come from a per-date and a per-clock cache in the date order the first
64 KiB (or the first day above 12 anywhere) suggest, and are shifted once at the end in the rare
file whose whole run of dates decides otherwise; author checks are cached per distinct author; the
cyclic garbage collector is paused while the turns are built (``parsers.memory.paused_gc``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import chain, pairwise
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.memory import paused_gc
from parsers.registry import register
from parsers.sessions import file_name_id
from parsers.timeparse import clock_24h

from ._lines import drop_final_newline, line_count, line_patterns, scan, unreadable_times

_MARKS = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
_SP = "[ \u00a0\u202f\u200e\u200f]"  # a space in a header: WhatsApp uses NBSP, NNBSP and marks there
_DATE = r"(?P<d1>\d{1,4})[./-](?P<d2>\d{1,2})[./-](?P<d3>\d{1,4})"
_CLOCK = rf"(?P<h>\d{{1,2}})[:.](?P<mi>\d{{2}})(?:[:.](?P<s>\d{{2}}))?(?:{_SP}*(?P<ampm>[AaPp]\.?{_SP}?[Mm]\.?))?"
_HEAD = (
    rf"[{_MARKS}]*(?P<open>\[)?[{_MARKS}]*(?P<stamp>(?P<date>{_DATE}),?{_SP}+(?P<clock>{_CLOCK}))"
    rf"(?(open)[{_MARKS}]*\]|{_SP}+[-\u2013]){_SP}[{_MARKS}]*"
)
# The author is everything before the first ': ' within 60 characters; the rest of the line is text.
_AUTHOR_MAX = 60
_REST = rf"(?:(?P<author>[^\n]{{1,{_AUTHOR_MAX}}}?):(?: (?P<lrm>\u200e)?|(?=\n)|\Z))?(?P<text>[^\n]*)"
FIRST, HEADER = line_patterns(_HEAD + _REST)
# The independent counter's own, looser idea of a message start: a line that starts with a date
# and a clock time, whatever follows.
_LOOSE_FIRST, _LOOSE = line_patterns(
    rf"[{_MARKS}]*\[?\d{{1,4}}[./-]\d{{1,2}}[./-]\d{{1,4}},?{_SP}+\d{{1,2}}[:.]\d{{2}}")
_FIELDS = re.compile(r"\d+")
_OVER = r"(?:1[3-9]|2\d|3[01])"  # a field that can only be a day
_OVER_FIRST = re.compile(rf"\n[{_MARKS}]*\[?[{_MARKS}]*{_OVER}[./-]\d{{1,2}}[./-]\d{{2,4}},?{_SP}+\d{{1,2}}[:.]\d\d")
_OVER_SECOND = re.compile(rf"\n[{_MARKS}]*\[?[{_MARKS}]*\d{{1,2}}[./-]{_OVER}[./-]\d{{2,4}},?{_SP}+\d{{1,2}}[:.]\d\d")
_CLOCK_ONLY = re.compile(_CLOCK)


@dataclass(frozen=True)
class Notices:
    """What WhatsApp writes in one language for its own notices and placeholders."""

    e2e: tuple[str, ...]
    """Starts of the encryption notices (author-less, or after the group's name)."""
    events: tuple[str, ...]
    """Phrases of membership/group events; the text before one is the person who caused it."""
    authored_events: tuple[str, ...]
    """Event phrases that may be followed by a ': ' (a subject), so a 'Name: ' must be checked for them."""
    media: tuple[str, ...]
    """Whole-message placeholders of omitted media."""
    media_patterns: tuple[str, ...] = ()


NOTICES: dict[str, Notices] = {
    "en": Notices(
        e2e=("Messages and calls are end-to-end encrypted",
             "Messages you send to this group are now secured with end-to-end encryption",
             "Messages to this group are now secured with end-to-end encryption",
             "Messages you send to this chat and calls are now secured with end-to-end encryption"),
        events=(" created group ", " created this group", " added ", " removed ", " left", " joined using ",
                " joined", " changed the subject ", " changed this group's ", " changed the group ",
                " changed their phone number", " changed to ", " deleted this group's icon", " turned on ",
                " turned off ", " is a contact", " security code ", " now an admin", " pinned a message"),
        authored_events=(" changed the subject ", " changed the group ", " changed this group's ",
                         " created group ", " added ", " removed "),
        media=("<Media omitted>", "image omitted", "video omitted", "audio omitted", "sticker omitted",
               "GIF omitted", "document omitted", "Contact card omitted", "voice message omitted"),
        media_patterns=(r"<attached: [^>\n]+>", r"[^\n]+ \(file attached\)", r"[^\n]+ \u200e?document omitted"),
    ),
    # Other languages: what is known for sure; events and subjects stay English-only until seen.
    "de": Notices(
        e2e=("Nachrichten und Anrufe sind Ende-zu-Ende-verschlüsselt",),
        events=(), authored_events=(),
        media=("<Medien ausgeschlossen>",),
    ),
    "es": Notices(
        e2e=("Los mensajes y las llamadas están cifrados de extremo a extremo",),
        events=(), authored_events=(),
        media=("<Multimedia omitido>",),
    ),
}
# Lines that are notices from their first word, with nobody before them.
_LEADING = ("You were added", "You joined", "Missed voice call", "Missed video call", "Waiting for this message",
            "This chat is with a business account", "Disappearing messages", "Your security code with")

_E2E = tuple(p for n in NOTICES.values() for p in n.e2e)
_EVENT = re.compile("|".join(re.escape(p) for n in NOTICES.values() for p in n.events))
_AUTHORED_EVENT = re.compile("|".join(re.escape(p) for n in NOTICES.values() for p in n.authored_events))
_MEDIA = frozenset(p for n in NOTICES.values() for p in n.media)
_MEDIA_RE = re.compile("|".join(p for n in NOTICES.values() for p in n.media_patterns))
_MEDIA_LAST = frozenset(p[-1] for p in _MEDIA) | {">", ")", "d"}


def actor_of(line: str) -> str | None:
    """The person named before a notice phrase of an author-less line, or None."""
    if line.startswith(_LEADING) or line.startswith(_E2E):
        return None
    m = _EVENT.search(line)
    if m is None or m.start() == 0 or m.start() > _AUTHOR_MAX:
        return None
    return line[: m.start()].strip() or None


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
    """"year", "over12" (a field above 12), "changes" (which field changes more), "contradiction" or "none"."""


def date_order(runs: list[tuple[str, int]]) -> DateOrder:
    """Day/month order from the runs of equal dates of a file.

    ``runs``: (date text, index of its first message) for each run of equal consecutive dates.
    """
    if not runs:
        return DateOrder("dmy", "the file has no dates", None, "none")
    fields = [(_fields(d), i) for d, i in runs]
    for (a, _, _), i in fields:
        if a > 31:
            return DateOrder("ymd", f"the first field is a year, {a}", i, "year")
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


def _day(date: str, order: str) -> datetime | None:
    a, b, c = _fields(date)
    y, m, d = (a, b, c) if order == "ymd" else (c, a, b) if order == "mdy" else (c, b, a)
    if y < 100:
        y += 2000
    try:
        return datetime(y, m, d)
    except ValueError:
        return None


def _clock(clock: str) -> timedelta | None:
    m = _CLOCK_ONLY.fullmatch(clock)
    hour = clock_24h(int(m["h"]), m["ampm"]) if m else None
    if hour is None or hour > 23 or int(m["mi"]) > 59 or int(m["s"] or 0) > 59:
        return None
    return timedelta(hours=hour, minutes=int(m["mi"]), seconds=int(m["s"] or 0))


def chat_title(name: str) -> str | None:
    """``WhatsApp Chat with X.txt`` / ``WhatsApp Chat - X.txt`` (or a ``_chat.txt`` in such a folder) -> X."""
    parts = PurePosixPath(name).parts
    for part in reversed(parts):
        for prefix in ("WhatsApp Chat with ", "WhatsApp Chat - "):
            if part.startswith(prefix):
                return re.sub(r"\.(?:txt|zip)$", "", part[len(prefix):]) or None
    return None


@register
class WhatsApp(Grammar):
    name = "whatsapp"
    version = "2"
    description = "WhatsApp chat export (.txt), Android and iOS, 12 h and 24 h clocks, any date order"
    example = "12/24/19, 11:23 - John Doe: Lorem ipsum dolor sit amet."

    def detect(self, sample: str, name: str) -> float:
        lines = [ln for ln in sample.split("\n")[:300] if ln.strip()]
        hits = [m for ln in lines if (m := FIRST.match(ln))]
        if not hits or len(hits) < 0.2 * len(lines):
            return 0.0
        if "whatsapp" in name.lower() or PurePosixPath(name).name == "_chat.txt":
            return 0.95
        # '[2019-12-24 11:23:45] Name:' is also a plain transcript: only WhatsApp's own shapes decide
        # (a day or month first, the ' - ' separator, a meridiem, its invisible marks).
        native = any(len(m["d1"]) <= 2 or not m["open"] or m["ampm"] for m in hits) or "\u200e" in sample
        return 0.93 if native else 0.45

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        text = source.text
        session_id = file_name_id(source.name)
        session = ParsedSession(session_id, "file-name" if session_id else "none", [], raw=text,
                                title=chat_title(source.name))
        session.lines = (1, line_count(text))
        turns = session.turns
        append = turns.append
        # The date order is decided from the whole file, but times are built during the one pass, in
        # the order the first 64 KiB suggest; when the whole file decides otherwise (rare: the start
        # had no day above 12), they are rebuilt once at the end.
        guess = _guess_order(text)
        days: dict[str, datetime | None] = {}
        clocks: dict[str, timedelta | None] = {}
        raws: dict[str, str] = {}
        runs: list[tuple[str, int]] = []  # (date, index of its first turn) per run of equal dates
        last_date = None
        authors: dict[str, bool] = {}  # author -> its 'Name' part holds an event phrase (a notice)
        line = 1
        bad = 0
        with paused_gc():
            # (header, next header): a turn's body runs to the line end the next header starts at.
            for m, nxt in pairwise(chain(scan(text, FIRST, HEADER), (None,))):
                if m is None:  # no header at all
                    break
                if not turns:
                    line = self._first(session, text, m)
                stamp, date, clock, author, first, lrm = m.group(
                    "stamp", "date", "clock", "author", "text", "lrm")
                if date != last_date:
                    last_date = date
                    runs.append((date, len(turns)))
                day = days.get(date, _UNSEEN)
                if day is _UNSEEN:
                    day = days[date] = _day(date, guess)
                delta = clocks.get(clock, _UNSEEN)
                if delta is _UNSEEN:
                    delta = clocks[clock] = _clock(clock)
                if day is None or delta is None:
                    when = None
                    bad += 1
                else:
                    when = day + delta
                if stamp.isascii():
                    raw = stamp
                else:
                    raw = raws.get(stamp)
                    if raw is None:
                        raw = raws[stamp] = stamp.translate(_RAW)
                cont = text[m.end():nxt.start()] if nxt is not None else drop_final_newline(text[m.end():])
                if cont:
                    end = line + cont.count("\n")
                    content = first + cont
                else:
                    end, content = line, first
                if author is None:
                    actor = actor_of(first)
                    append(Turn("System", "system", content, when, raw, None, "system", (line, end),
                                extra={"actor": actor} if actor else None))
                else:
                    notice = authors.get(author)
                    if notice is None:
                        notice = authors[author] = _AUTHORED_EVENT.search(author) is not None
                    if notice:
                        full = text[m.start("author"):m.end()] + cont
                        actor = actor_of(full)
                        append(Turn("System", "system", full, when, raw, None, "system", (line, end),
                                    extra={"actor": actor} if actor else None))
                    elif first.startswith(_E2E):
                        append(Turn("System", "system", content, when, raw, None, "system", (line, end),
                                    extra={"sourceLabel": author}))
                    elif not cont and first[-1:] in _MEDIA_LAST and (first in _MEDIA or _MEDIA_RE.fullmatch(first)):
                        append(Turn(author, "user", content, when, raw, None, "media", (line, end)))
                    elif lrm and (actor := actor_of(first)):
                        # iOS writes group events as '<group>: \u200e<actor> <event>'
                        append(Turn("System", "system", content, when, raw, None, "system", (line, end),
                                    extra={"sourceLabel": author, "actor": actor}))
                    else:
                        append(Turn(author, "user", content, when, raw, None, "message", (line, end)))
                line = end + 1
            if not turns and text.strip():
                session.meta["preamble"] = drop_final_newline(text)
            order, evidence, at, basis = date_order(runs)
            if order != guess:
                bad = _redo_times(turns, runs, guess, order)

        where = f" (line {turns[at].lines[0]})" if at is not None else ""
        session.assumptions.append(f"date order {'/'.join(order.upper())}: {evidence}{where}")
        if basis in ("contradiction", "none"):
            session.warnings.append(f"date order uncertain, {'/'.join(order.upper())} used: {evidence}")
        if bad:
            session.warnings.append(unreadable_times(bad, "not a calendar date or clock time"))
        yield session

    @staticmethod
    def _first(session: ParsedSession, text: str, m: re.Match) -> int:
        """At the first header: keep any text before it (nobody's message) and say which dialect this is."""
        start = m.start() if m.start() == 0 else m.start() + 1  # a later match starts at its line end
        session.meta["dialect"] = "ios" if m.group("open") else "android"
        if start == 0:
            return 1
        preamble = text[:start]
        session.meta["preamble"] = drop_final_newline(preamble)
        return 1 + preamble.count("\n")

    def count_turns(self, raw: Any) -> int:
        return (1 if _LOOSE_FIRST.match(raw) else 0) + len(_LOOSE.findall(raw))


# Raw stamps keep the source text without its invisible marks; odd spaces become plain ones.
_RAW = str.maketrans({**dict.fromkeys(map(ord, _MARKS)), 0x00A0: " ", 0x202F: " "})


_UNSEEN = object()
_STAMP = re.compile(rf"(?P<date>{_DATE}),?{_SP}+(?P<clock>{_CLOCK})")


def _redo_times(turns: list[Turn], runs: list[tuple[str, int]], old: str, new: str) -> int:
    """Move every turn's time from date order ``old`` to ``new``; return how many are unreadable.

    Each run of equal dates moves by one shift; a turn whose date only reads in the new order is
    read again from its raw stamp.
    """
    bad = 0
    bounds = [i for _, i in runs[1:]] + [len(turns)]
    for (date, start), stop in zip(runs, bounds, strict=True):
        before, after = _day(date, old), _day(date, new)
        for turn in turns[start:stop]:
            if after is None:
                turn.time = None
            elif before is not None and turn.time is not None:
                turn.time += after - before
            else:
                m = _STAMP.fullmatch(turn.time_raw)
                delta = _clock(m["clock"]) if m else None
                turn.time = after + delta if delta is not None else None
            bad += turn.time is None
    return bad


def _guess_order(text: str) -> str:
    """The date order the first 64 KiB decide, else the one the first header with a field above 12
    decides, else the sample's best guess. Only a guess: the whole file decides after the pass."""
    sample = date_order(_runs(text[:65536]))
    if sample.basis in ("year", "over12"):
        return sample.order
    over1, over2 = _OVER_FIRST.search(text), _OVER_SECOND.search(text)
    if over1 and over2:
        return "dmy" if over1.start() < over2.start() else "mdy"
    if over1 or over2:
        return "dmy" if over1 else "mdy"
    return sample.order


def _runs(sample: str) -> list[tuple[str, int]]:
    """(date text, index of its first header) per run of equal dates in a sample of the file."""
    runs: list[tuple[str, int]] = []
    for i, m in enumerate(scan(sample, FIRST, HEADER)):
        date = m.group("date")
        if not runs or runs[-1][0] != date:
            runs.append((date, i))
    return runs
