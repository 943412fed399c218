"""Apple Messages chats exported as text by imessage-exporter (``--format txt``): one ``<chat>.txt`` per chat.

Shape (one file is one chat, one session; learnt from the exporter's own tests and from readers of it)::

    May 17, 2022  5:29:42 PM                                  <- the time (the hour padded with a space)
    Jess                                                      <- the sender: a contact, a number or an
    the train is late again                                      address; the owner's messages are "Me"
                                                              <- a blank line after every message
    May 17, 2022  5:31:02 PM (Read by them after 3 seconds)   <- a receipt after the time
    Me
    I'll pick you up
    at the station

Decisions:
- A time line followed by a sender line starts a turn (B2); the lines after them, up to the blank line
  before the next time line, are its text. A line of text with a time line's shape followed by another
  line starts a turn (the export gives no way to tell), as in every line format; the census sees such
  lines.
- Times are naive local times (the exporter writes the Mac's local time; ``source_tz`` applies); a
  single space before the hour is read as well as the exporter's padding. The receipt in parentheses
  after the time goes to ``extra.receipt`` as written.
- The chat's name is the file's name (the exporter names files after the chat's participants or its
  name); the file holds no id.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

import regex

from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import Block
from parsers.grammars._lines import blocks_session
from parsers.registry import register
from parsers.sample import nonblank
from parsers.timeparse import clock_24h, from_parts

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
STAMP = (rf"(?P<mon>{'|'.join(MONTHS)}) (?P<d>\d{{1,2}}), (?P<y>\d{{4}}) {{1,2}}(?P<h>\d{{1,2}}):(?P<mi>\d{{2}}):"
         r"(?P<s>\d{2}) (?P<ampm>AM|PM)(?: \((?P<receipt>[^\n]*)\))?")
"""The exporter's time line: ``%b %d, %Y %l:%M:%S %p``, then an optional receipt in parentheses."""
HEADER = regex.compile(rf"^{STAMP}\n(?P<name>[^\n]+)(?:\n|$)", regex.MULTILINE)
_TIME_LINE = regex.compile(rf"^{STAMP}$", regex.MULTILINE)


def explained_share(sample: str) -> float:
    """Header lines (time and sender) and their text over the sample's non-blank lines, from the first header."""
    lines = nonblank(sample, 2000)
    if not lines:
        return 0.0
    head = HEADER.search(sample)
    if head is None:
        return 0.0
    before = len(nonblank(sample[:head.start()], 2000))
    return (len(lines) - before) / len(lines)


def _turn(block: Block) -> Turn:
    h = block.header
    hour = clock_24h(int(h["h"]), h["ampm"])
    when = from_parts(int(h["y"]), MONTHS.index(h["mon"]) + 1, int(h["d"]), hour, int(h["mi"]), int(h["s"]))
    raw = h.group(0).split("\n", 1)[0]
    if h["receipt"] is not None:
        raw = raw[:-len(h["receipt"]) - 3]
    extra = {"receipt": h["receipt"]} if h["receipt"] is not None else None
    return Turn(h["name"], "user", block.text, when, raw, None, "message", (block.line_start, block.line_end),
                extra=extra)


@register
class IMessageTxt(Grammar):
    name = "imessage-txt"
    detect_needs = (" AM\n", " PM\n", " AM (", " PM (")  # the time line's end, before the sender or a receipt
    version = "1"
    description = "Apple Messages chat exported as text by imessage-exporter (<chat>.txt: time line, sender, text)"
    turn_shape = _TIME_LINE.pattern
    example = "May 17, 2022  5:29:42 PM\nJess\nthe train is late again\n"

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        yield blocks_session(source, HEADER, _turn, PurePosixPath(source.name).stem or None)

    def count_turns(self, raw: Any) -> int:
        return len(HEADER.findall(raw))
