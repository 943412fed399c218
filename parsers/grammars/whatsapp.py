"""WhatsApp text exports (Android and iOS), one session per file.

Dialects: ``12/24/19, 11:23 - Name: text`` (Android), ``15.04.2016, 15:04 - Name: text``,
``9/24/2019 11:30 p.m. - Name: text``, ``[8/15/23, 9:12:33 AM] Name: text`` (iOS), with 12 h or
24 h clocks, ``AM``/``p.m.``/``p. m.``, seconds or not, 2- or 4-digit years, and the invisible
U+200E / U+200F / U+202F marks WhatsApp sprinkles in. An hour above 12 ignores the meridiem
(``13:37:00 p.m.`` occurs in real exports).

Decisions:
- Day/month order is decided once for the whole file: a first field above 12 means day first, a
  second field above 12 means month first; when neither decides, the field that changes more often
  between messages is the day. The decision and its evidence go to ByggLogg.assumptions.
- System notices are turns (rule B1) with speaker "System": lines without an author (``You were
  added``, ``X created group "Y"``) and notices that look authored (``Group: Messages and calls are
  end-to-end encrypted...``), whose label is kept as ``sourceLabel``. The notice texts are data
  (SYSTEM_PATTERNS below), so another language is a list entry.
- Media placeholders (``image omitted``, ``<Media omitted>``, ``<attached: ...>``) are their
  author's turns with kind ``media``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import split_blocks
from parsers.registry import register
from parsers.sessions import file_name_id
from parsers.timeparse import clock_24h

_MARKS = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
_SPACE = r"[ \u00a0\u202f]"
# The stdlib engine: this pattern runs once per line of exports with millions of lines.
HEADER = re.compile(
    rf"^[{_MARKS}]?(?P<open>\[)?(?P<d1>\d{{1,4}})[./-](?P<d2>\d{{1,2}})[./-](?P<d3>\d{{2,4}}),?{_SPACE}"
    rf"(?P<h>\d{{1,2}})[:.](?P<mi>\d{{2}})(?:[:.](?P<s>\d{{2}}))?"
    rf"(?:{_SPACE}*(?P<ampm>[AaPp]\.?{_SPACE}?[Mm]\.?))?"
    rf"(?(open)\]{_SPACE}|{_SPACE}[-–]{_SPACE})",
    re.MULTILINE,
)
# The independent counter's own, looser idea of a message start: a date and a clock time.
_LOOSE = re.compile(rf"^[{_MARKS}]?\[?\d{{1,4}}[./-]\d{{1,2}}[./-]\d{{2,4}},?{_SPACE}\d{{1,2}}[:.]\d{{2}}",
                    re.MULTILINE)

E2E_NOTICES = (
    "Messages and calls are end-to-end encrypted",
    "Messages you send to this group are now secured with end-to-end encryption",
    "Messages to this group are now secured with end-to-end encryption",
    "Your security code with",
)
SYSTEM_PATTERNS = [re.compile(p) for p in (
    r"^You (?:were added|joined|left|created group|changed|removed|added|deleted)",
    r" created group ",
    r" (?:added|removed) .+$",
    r" (?:left|joined using this group's invite link)$",
    r" changed (?:the subject|this group's icon|the group description|their phone number|the group settings)",
    r" deleted this group's icon$",
    r"security code (?:with .+ )?changed",
    r"^Missed (?:voice|video) call",
    r"^Waiting for this message",
    r" is a contact\.?$",
    r"^This chat is with a business account",
    r"^Disappearing messages",
)]
MEDIA = re.compile(
    r"^(?:<Media omitted>|(?:image|video|audio|sticker|GIF|document|Contact card) omitted|<attached: [^>]+>"
    r"|[^\n]+\.(?:jpg|jpeg|png|webp|opus|mp4|pdf) \(file attached\))$",
    re.IGNORECASE,
)
_AUTHOR_MAX = 60


def _strip_marks(text: str) -> str:
    return text.lstrip(_MARKS)


def notice_at(text: str) -> int | None:
    """Where a system-notice phrase starts in an author-less line, or None."""
    if text.startswith(E2E_NOTICES):
        return 0
    found = [m.start() for p in SYSTEM_PATTERNS if (m := p.search(text))]
    return min(found) if found else None


def date_order(fields: list[tuple[int, int, int]]) -> tuple[str, str]:
    """("dmy" | "mdy" | "ymd", evidence) from every header's three date fields."""
    if not fields:
        return "dmy", "no dates"
    if any(a > 31 for a, _, _ in fields):
        return "ymd", "the first field is a year"
    for i, (a, b, _) in enumerate(fields):
        if a > 12:
            return "dmy", f"first field {a} > 12 (message {i + 1})"
        if b > 12:
            return "mdy", f"second field {b} > 12 (message {i + 1})"
    first = sum(1 for x, y in itertools.pairwise(fields) if x[0] != y[0])
    second = sum(1 for x, y in itertools.pairwise(fields) if x[1] != y[1])
    if second > first:
        return "mdy", f"no field exceeds 12; the second changes more often ({second} vs {first} times)"
    return "dmy", f"no field exceeds 12; the first changes at least as often ({first} vs {second} times)"


@register
class WhatsApp(Grammar):
    name = "whatsapp"
    version = "1"
    description = "WhatsApp chat export (.txt), Android and iOS, 12 h and 24 h clocks"
    example = "12/24/19, 11:23 - John Doe: Lorem ipsum dolor sit amet."

    def detect(self, sample: str, name: str) -> float:
        lines = [ln for ln in sample.split("\n")[:300] if ln.strip()]
        hits = [m for ln in lines if (m := HEADER.match(ln))]
        if not hits or len(hits) < 0.2 * len(lines):
            return 0.0
        if "whatsapp" in name.lower():
            return 0.95
        # '[2019-12-24 11:23:45] Name:' is also a plain transcript; WhatsApp's own marks decide.
        native = any(len(m["d1"]) <= 2 or not m["open"] or m["ampm"] for m in hits)
        return 0.93 if native else 0.45

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        text = source.text
        blocks = [b for b in split_blocks(text, HEADER) if b.header is not None or b.body.strip()]
        fields = [(int(b.header["d1"]), int(b.header["d2"]), int(b.header["d3"]))
                  for b in blocks if b.header is not None]
        order, evidence = date_order(fields)
        stem = PurePosixPath(source.name).name
        title = stem[len("WhatsApp Chat with "):].rsplit(".", 1)[0] if stem.startswith("WhatsApp Chat with ") else None
        session_id = file_name_id(source.name)
        session = ParsedSession(session_id, "file-name" if session_id else "none", [], raw=text, title=title)
        session.lines = (1, text.count("\n") + (0 if text.endswith("\n") else 1))
        session.assumptions.append(f"date order {'/'.join(order.upper())}: {evidence}")
        days: dict[tuple[int, int, int], tuple[int, int, int] | None] = {}
        bad_times = 0
        turns = session.turns
        for block in blocks:
            h = block.header
            if h is None:
                session.meta["preamble"] = block.body.strip("\n")
                session.meta["preambleLines"] = [block.line_start, block.line_end]
                continue
            key = (int(h["d1"]), int(h["d2"]), int(h["d3"]))
            ymd = days.get(key, False)
            if ymd is False:
                ymd = days[key] = _ymd(key, order)
            hour = clock_24h(int(h["h"]), h["ampm"])
            when = None
            if ymd is not None and hour is not None:
                try:
                    when = datetime(ymd[0], ymd[1], ymd[2], hour, int(h["mi"]), int(h["s"] or 0))
                except ValueError:
                    when = None
            if when is None:
                bad_times += 1
            raw_time = h.group(0).strip(_MARKS + "[]- –\u00a0\u202f")
            turns.append(self._turn(block.body, when, raw_time, (block.line_start, block.line_end)))
        if bad_times:
            session.warnings.append(f"{bad_times} message times could not be read: no date set")
        yield session

    @staticmethod
    def _turn(body: str, when, raw_time: str, lines: tuple[int, int]) -> Turn:
        first, sep, rest = body.partition("\n")
        head = _strip_marks(first)
        author, colon, text = head.partition(": ")
        if not colon and head.endswith(":"):
            author, colon, text = head[:-1], ":", ""
        notice = notice_at(head)
        # A notice phrase before the first ": " (or no ": " at all) means there is no author:
        # 'Alice changed the subject to "Plans: v2"' is a notice, 'Bob: I added Carol' is Bob's.
        if not colon or len(author) > _AUTHOR_MAX or (notice is not None and notice < len(author)):
            actor = head[:notice].strip() if notice else None
            return Turn("System", "system", head + sep + rest, when, raw_time, None, "system", lines,
                        extra={"actor": actor} if actor else None)
        text = _strip_marks(text)
        content = text + sep + rest
        if text.startswith(E2E_NOTICES):
            return Turn("System", "system", content, when, raw_time, None, "system", lines,
                        extra={"sourceLabel": author})
        kind = "media" if MEDIA.match(text) and not rest else "message"
        return Turn(author, "user", content, when, raw_time, None, kind, lines)

    def count_turns(self, raw: Any) -> int:
        return len(_LOOSE.findall(raw))


def _ymd(fields: tuple[int, int, int], order: str) -> tuple[int, int, int] | None:
    a, b, c = fields
    if order == "ymd":
        y, m, d = a, b, c
    elif order == "mdy":
        m, d, y = a, b, c
    else:
        d, m, y = a, b, c
    if y < 100:
        y += 2000
    try:
        datetime(y, m, d)
    except ValueError:
        return None
    return y, m, d
