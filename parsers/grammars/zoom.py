"""Zoom meeting chat saved as text: the client's ``meeting_saved_chat.txt`` and a recording's chat file.

Shapes (one file is one meeting's chat, one session; ⇥ is a tab)::

    10:02:15⇥ From  Ann Lee : Hello everyone                         <- one-line (older clients)
    10:02:40⇥ From  Bo  to  Ann Lee(Direct Message) : hi             <- one-line, private
    10:03:01 From Ann Lee to Everyone:                                <- two-line (newer clients):
    ⇥Replying to "Hello everyone"                                     message lines indented
    ⇥Hi!                                                              by one tab
    10:03:09 From Bo to Everyone:
    ⇥Reacted to "Hello everyone" with 👍                            <- a reaction: its own turn
    00:58:04⇥Ann Lee:⇥Depends on your style                       <- a recording's chat file

Decisions:
- Every header line is one turn (B1, B2), in source order; role ``user``; ``extra.to`` names the
  recipient (``Everyone`` or a person) and ``extra.private`` marks a direct message
  (``(Direct Message)``, ``(privately)``). Two-line message lines lose their one indenting tab.
- ``Reacted to "…" with X`` and ``Removed a X reaction from "…"`` are kind ``reaction`` with
  ``extra.reaction`` (and ``extra.removed``); a first line ``Replying to "…"`` gives ``extra.replyTo``.
  The text is kept as written either way.
- Times are clocks without a date. The Zoom client saves a meeting's files in a folder named by its
  start (``2024-01-05 10.00.00 Weekly sync 81234567890``): when the file is in such a folder, that
  date dates the clocks, a clock more than an hour before the previous one means midnight passed,
  and the assumption is recorded. Otherwise (and always for a recording's chat file, whose clocks
  may count from the recording's start) the time stays empty with the raw clock kept and one warning.
- Lines before the first header are a preamble region.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import split_blocks
from parsers.linecount import LineCounts, LinePatterns, count
from parsers.registry import register

from ._lines import line_count, unreadable_times

_CLOCK = r"(?P<h>\d{1,2}):(?P<mi>\d{2}):(?P<s>\d{2})"
SAMPLE_LINES = 400
_NAMED = r"[^\t\n]{1,120}:\t"  # a recording's "name:<tab>" after the clock's tab
HEADER = regex.compile(rf"^(?P<clock>{_CLOCK})(?:[ \t]+(?P<from>From)[ \t]+|\t(?={_NAMED}))", regex.M)
_HEADS = LinePatterns(SAMPLE_LINES, {"head": regex.compile(rf"^{_CLOCK}(?:[ \t]+From[ \t]+|\t{_NAMED})", regex.M)})
"""Detection's test of a line: HEADER's, with its final lookahead read as text (the same lines match)."""
_TWO_LINE = regex.compile(r"(?P<name>.+?)[ \t]+[Tt]o[ \t]+(?P<to>.+?)[ \t]*:[ \t]*")
_ONE_LINE = regex.compile(r"(?P<name>.+?)(?:[ \t]+to[ \t]+(?P<to>.+?))?[ \t]*:(?:[ \t](?P<text>.*))?", regex.S)
_RECORDING = regex.compile(r"(?P<name>[^\t\n]+?):\t(?P<text>.*)", regex.S)
_PRIVATE = regex.compile(r"[ \t]*\((?:Direct Message|direct message|Privately|privately)\)$")
_REACTED = regex.compile(r'Reacted to "(?P<quote>.*)" with (?P<emoji>\S+)', regex.S)
_REMOVED = regex.compile(r'Removed a (?P<emoji>\S+) reaction from "(?P<quote>.*)"', regex.S)
_REPLYING = regex.compile(r'Replying to "(?P<quote>[^\n]*)"')
_FOLDER_START = regex.compile(
    r"(?:^|/)(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2}) (?P<H>\d{2})\.(?P<M>\d{2})\.(?P<S>\d{2})(?: [^/]*)?/[^/]+$"
)
_ROLLOVER = timedelta(hours=1)


def folder_start(name: str) -> datetime | None:
    """The meeting start the Zoom client's folder name gives (``2024-01-05 10.00.00 Topic/…``), or None."""
    m = _FOLDER_START.search(name.replace("\\", "/"))
    if m is None:
        return None
    try:
        return datetime(*(int(m[k]) for k in ("y", "mo", "d", "H", "M", "S")))
    except ValueError:
        return None


def _indented(lines: list[str]) -> str:
    return "\n".join(ln[1:] if ln.startswith("\t") else ln for ln in lines)


def _message(header: regex.Match, body: str) -> tuple[str, str | None, str] | None:
    """(sender, recipient, text) of one turn's text after its clock, or None when it is no message."""
    first, _, rest = body.partition("\n")
    if header["from"] is None:
        m = _RECORDING.fullmatch(body)
        return (m["name"].strip(), None, m["text"]) if m else None
    if (m := _TWO_LINE.fullmatch(first)) and (not rest or rest.startswith(("\t", "\n"))):
        return m["name"].strip(), m["to"], _indented(rest.split("\n")) if rest else ""
    if m := _ONE_LINE.fullmatch(body):
        return m["name"].strip(), m["to"], m["text"] or ""
    return None


def _extra(recipient: str | None, text: str) -> tuple[str, dict[str, Any]]:
    """(kind, extra fields) of a message: its recipient, and what a reaction or a reply says."""
    extra: dict[str, Any] = {}
    if recipient is not None:
        private = _PRIVATE.search(recipient)
        if private:
            recipient = recipient[:private.start()]
            extra["private"] = True
        extra["to"] = recipient.strip()
    kind = "message"
    if m := _REACTED.fullmatch(text):
        kind, extra["reaction"], extra["reactedTo"] = "reaction", m["emoji"], m["quote"]
    elif m := _REMOVED.fullmatch(text):
        kind, extra["reaction"], extra["reactedTo"], extra["removed"] = "reaction", m["emoji"], m["quote"], True
    elif m := _REPLYING.match(text):
        extra["replyTo"] = m["quote"]
    return kind, extra


class _Clock:
    """Dates the clock times of one file from its folder's meeting start (see the module docstring)."""

    def __init__(self, start: datetime | None) -> None:
        self.start = start
        self.previous = start
        self.rollovers = 0
        self.undated = 0
        self.unshaped = 0

    def time(self, h: regex.Match, dated: bool) -> datetime | None:
        if self.previous is None or not dated:
            self.undated += 1
            return None
        hour, minute, second = int(h["h"]), int(h["mi"]), int(h["s"])
        if hour > 23 or minute > 59 or second > 59:
            self.undated += 1
            return None
        when = datetime.combine(self.previous.date(), datetime.min.time()).replace(hour=hour, minute=minute,
                                                                                  second=second)
        if when < self.previous - _ROLLOVER:
            when += timedelta(days=1)
            self.rollovers += 1
        self.previous = when
        return when


def _turn(block, clock: _Clock) -> Turn:
    h = block.header
    found = _message(h, block.body)
    lines = (block.line_start, block.line_end)
    when = clock.time(h, dated=h["from"] is not None)
    if found is None:  # a clock and text in none of the shapes: kept whole, nobody's message
        clock.unshaped += 1
        return Turn("System", "system", block.body, when, h["clock"], None, "system", lines)
    name, recipient, text = found
    kind, extra = _extra(recipient, text)
    return Turn(name, "user", text, when, h["clock"], None, kind, lines, extra=extra or None)


@register
class Zoom(Grammar):
    name = "zoom"
    detect_needs = ("From", "\t")  # a header's From or tab
    version = "1"
    description = "Zoom meeting chat (meeting_saved_chat.txt one-line and two-line, a recording's chat file)"
    turn_shape = HEADER.pattern
    example = "10:02:15 From Ann Lee to Everyone:\n\tHello everyone"
    detect_lines = _HEADS

    def detect(self, sample: str, name: str) -> float:
        """The share of non-blank lines that are Zoom headers or the message lines after them (those
        count only when headers are a tenth of the lines, so a stray match is not a chat)."""
        return self.detect_counted(sample, name, count(sample, _HEADS))

    def detect_counted(self, sample: str, name: str, counts: LineCounts) -> float:
        heads, first = counts.hits["head"], counts.first["head"]
        if not heads or first is None:
            return 0.0
        explained = counts.lines - first if heads >= 0.1 * counts.lines else heads
        return explained / counts.lines

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        text = source.text
        session = ParsedSession(None, "none", [], raw=text)
        session.lines = (1, line_count(text))
        start = folder_start(source.name)
        clock = _Clock(start)
        for block in split_blocks(text, HEADER):
            if block.header is None:
                session.meta["preamble"] = block.body
                session.regions.append(Region(RegionKind.PREAMBLE, "text before the first chat line",
                                              lines=(block.line_start, block.line_end)))
                continue
            session.turns.append(_turn(block, clock))
        _conclude(session, clock, source.name)
        yield session

    def count_turns(self, raw: Any) -> int:
        return sum(1 for ln in raw.split("\n") if _COUNT.match(ln))


_COUNT = regex.compile(r"\d\d?:\d\d:\d\d(?:[ \t]+From[ \t]|\t[^\t]+:\t)")


def _conclude(session: ParsedSession, clock: _Clock, name: str) -> None:
    if clock.start is not None and any(t.time is not None for t in session.turns):
        session.assumptions.append(
            f"turn dates from the folder name of {name!r}: the Zoom client names a meeting's folder by its "
            f"start ({clock.start:%Y-%m-%d %H:%M:%S}); the chat file holds clock times only")
    if clock.rollovers:
        session.assumptions.append(f"midnight passed {clock.rollovers} time(s): a clock more than an hour "
                                   "before the previous one is on the next day")
    if clock.undated:
        session.warnings.append(unreadable_times(clock.undated, "a clock time without a date"))
    if clock.unshaped:
        session.warnings.append(f"{clock.unshaped} clock line(s) in none of Zoom's shapes: each kept whole as a"
                                " system turn")
