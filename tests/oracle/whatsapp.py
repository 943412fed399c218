"""WhatsApp's turn-by-turn parse (one pass over the headers with Python's regex), kept as the oracle of
the product's table of lines (``WhatsApp.read``)."""

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import chain, pairwise

from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.engine import scan, trim_blank_tail
from parsers.grammars._lines import date_order, day_of, drop_final_newline
from parsers.grammars._whatsapp_headers import STAMP
from parsers.grammars.whatsapp import (
    _ATTACHED_LAST,
    _AUTHORED_EVENT,
    _E2E,
    _MARKS,
    _MEDIA,
    _MEDIA_FORM_ENDS,
    FIRST,
    HEADER,
    PROFILE_MARK,
    _attachments,
    _clock,
    _conclude,
    _headerless,
    _preamble,
    _session,
    actor_of,
    authored,
    is_media,
)
from parsers.memory import paused_gc

_OVER = r"(?:1[3-9]|2\d|3[01])"  # a field that can only be a day

# Raw stamps keep the source text without its invisible marks; odd spaces become plain ones.
_RAW = str.maketrans({**dict.fromkeys(map(ord, _MARKS)), 0x00A0: " ", 0x202F: " "})
_MEDIA_LAST = frozenset(c for p in _MEDIA for c in (p[-1].lower(), p[-1].upper()))
_E2E_FIRST = frozenset(p[0] for p in _E2E)
_TAIL = r"[./-]\d{2,4}[^\n\d]{1,8}?\d{1,2}[:.]\d\d"
_OVER_FIRST = re.compile(rf"\n[{_MARKS}]*\[?[{_MARKS}]*{_OVER}[./-]\d{{1,2}}{_TAIL}")
_OVER_SECOND = re.compile(rf"\n[{_MARKS}]*\[?[{_MARKS}]*\d{{1,2}}[./-]{_OVER}{_TAIL}")


def parse(grammar, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
    """The sessions of one input, turn by turn (``grammar``: the product's grammar object)."""
    text = source.text
    session = _session(source, text)
    # The date order is decided from the whole file, but times are built during the one pass, in
    # the order the first 64 KiB suggest; when the whole file decides otherwise (rare: the start
    # had no day above 12), they are rebuilt once at the end.
    guess = _guess_order(text)
    with paused_gc():
        runs, bad = _read_turns(session, text, guess)
        order, evidence, at, basis = date_order(runs)
        if order != guess:
            bad = _redo_times(session.turns, runs, guess, order)
    if not runs:
        _headerless(session, text)
    _conclude(session, runs, (order, evidence, at, basis), bad, lambda i: session.turns[i].lines[0])
    _attachments(session, [t.extra for t in session.turns if t.extra], source.siblings)
    yield session


def _first(session: ParsedSession, text: str, m: re.Match) -> int:
    """At the first header: declare any text before it (nobody's message) and say which dialect this is."""
    start = m.start() + (text[m.start():m.start() + 1] == "\n")  # a later match starts at its line end
    session.meta["dialect"] = "ios" if m.group("open") else "android"
    if start == 0:
        return 1
    lines = text.count("\n", 0, start)
    _preamble(session, text[:start], lines)
    return 1 + lines


def _read_turns(session: ParsedSession, text: str, guess: str) -> tuple[list[tuple[str, int]], int]:
    """The one pass over the headers: every turn appended to the session. Returns the runs of equal
    dates (date, index of its first turn) and the number of unreadable times."""
    turns = session.turns
    append = turns.append
    days: dict[str, datetime | None] = {}
    clocks: dict[str, timedelta | None] = {}
    raws: dict[str, str] = {}
    runs: list[tuple[str, int]] = []
    last_date = None
    authors: dict[str, bool] = {}  # author -> its 'Name' part holds an event phrase (a notice)
    line = 1
    bad = 0
    # (header, next header): a turn's body runs to the line end the next header starts at.
    for m, nxt in pairwise(chain(scan(text, FIRST, HEADER), (None,))):
        if m is None:  # no header at all
            break
        if not turns:
            line = _first(session, text, m)
        stamp, date, clock, author, first, lrm = m.group("stamp", "date", "clock", "author", "text", "lrm")
        if date != last_date:
            last_date = date
            runs.append((date, len(turns)))
        day = days.get(date, _UNSEEN)
        if day is _UNSEEN:
            day = days[date] = day_of(date, guess)
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
            cont = trim_blank_tail(cont)
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
            last = first[-1:]
            if (notice or lrm or last in _ATTACHED_LAST or (last in _MEDIA_LAST and is_media(first))
                    or (first[:1] in _E2E_FIRST and first.startswith(_E2E)) or first.endswith(_MEDIA_FORM_ENDS)
                    or author.startswith(PROFILE_MARK)):
                append(authored(m, text, author, first, cont, content, when, raw, (line, end), notice))
            else:
                append(Turn(author, "user", content, when, raw, None, "message", (line, end)))
        line = end + 1
    return runs, bad
_UNSEEN = object()
_STAMP = re.compile(STAMP)


def _redo_times(turns: list[Turn], runs: list[tuple[str, int]], old: str, new: str) -> int:
    """Move every turn's time from date order ``old`` to ``new``; return how many are unreadable.

    Each run of equal dates moves by one shift; a turn whose date only reads in the new order is
    read again from its raw stamp.
    """
    bad = 0
    bounds = [i for _, i in runs[1:]] + [len(turns)]
    for (date, start), stop in zip(runs, bounds, strict=True):
        before, after = day_of(date, old), day_of(date, new)
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
