"""Gemini Apps Activity from Google Takeout in its default HTML form (``My Activity/Gemini Apps/MyActivity.html``).

Takeout's "My Activity" pages write one ``div.outer-cell`` per activity entry (learnt from public
readers of the HTML form)::

    <div class="outer-cell mdl-cell mdl-cell--12-col mdl-shadow--2dp"><div class="mdl-grid">
      <div class="header-cell ..."><p class="mdl-typography--title">Gemini Apps<br></p></div>
      <div class="content-cell mdl-cell mdl-cell--6-col mdl-typography--body-1">Prompted what is the capital
        of France?<br>Jun 1, 2025, 10:15:22 AM CEST<br><p>Paris.</p></div>
      <div class="content-cell ... mdl-typography--text-right"></div>
      <div class="content-cell ... mdl-typography--caption"><b>Products:</b><br>&emsp;Gemini Apps<br>...</div>
    </div></div>

The body cell holds the title (a prompt's lines split by ``<br>``), Takeout's notes (``Attached 1 file.``,
``... was used in this chat``), then the time (``Jun 1, 2025, 10:15:22 AM
CEST``: English month, 12-hour clock, a zone abbreviation; older pages none), then the response as HTML.

Decisions:
- Each entry is read into the JSON form's entry (``header``, ``title``, ``time`` as written,
  ``subtitles``, ``safeHtmlItem`` with the response's HTML, ``products``) and the JSON grammar's
  reading follows (``gemini_activity.activity_session``): one session, oldest first, ``Prompted ...``
  entries the user's turns, other titles System actions, the response Gemini's turn after its prompt.
  Pointers and source accounting are those of the JSON form over these entries (a Takeout page is
  often one long line, so lines cannot locate its entries).
- Times: the zone abbreviation is read by a table (``ZONES``, data: the common unambiguous ones, and
  ``GMT+2``/``UTC-05:30`` forms); a time with no zone, or an abbreviation that is not in the table or is
  ambiguous (``CST``, ``IST``), is naive: the configured source zone applies, as for every naive time,
  and an abbreviation not read is counted in one warning.
- An entry whose body cell holds no line that is a time has none (a warning through the JSON reading).
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from typing import Any

import regex

from models.records import ParsedSession, SourceText
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._html import VOID
from parsers.grammars.gemini_activity import activity_session
from parsers.registry import register
from parsers.timeparse import clock_24h, from_parts

ZONES: dict[str, float] = {
    "UTC": 0, "GMT": 0, "WET": 0, "WEST": 1, "BST": 1, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3, "MSK": 3,
    "GST": 4, "PKT": 5, "JST": 9, "KST": 9, "HKT": 8, "SGT": 8, "AWST": 8, "ACST": 9.5, "ACDT": 10.5,
    "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13, "HST": -10, "AKST": -9, "AKDT": -8, "PST": -8, "PDT": -7,
    "MST": -7, "MDT": -6, "CDT": -5, "EST": -5, "EDT": -4, "ADT": -3, "NST": -3.5, "NDT": -2.5, "BRT": -3,
    "ART": -3,
}
"""Zone abbreviations Takeout writes, as hours from UTC; ambiguous ones (CST: US or China; IST: India,
Ireland or Israel; AST: Atlantic or Arabia) are left out on purpose."""
MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                      "Dec"), 1)}
TIME = regex.compile(r"(?P<mon>[A-Z][a-z]{2}) (?P<d>\d{1,2}), (?P<y>\d{4}), (?P<h>\d{1,2}):(?P<mi>\d{2}):(?P<s>\d{2})"
                     r"[ \u202f\u00a0]?(?P<ampm>[AP]M)(?: (?P<zone>(?:GMT|UTC)[+-]\d{1,2}(?::?\d{2})?|[A-Z]{2,5}))?")
_OFFSET = regex.compile(r"(?:GMT|UTC)(?P<sign>[+-])(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?")
SUBTITLE = regex.compile(r"^Attached \d+ files?\.$| was used in this chat")
"""Takeout's own notes between an entry's title and its time (data): other lines there continue the title
(a prompt written over several lines)."""
BLOCKS = frozenset({"p", "div", "ul", "ol", "table", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "hr"})
"""Elements that open a response written right after the time."""


def takeout_time(value: str) -> datetime | None:
    """``Jun 1, 2025, 10:15:22 AM CEST``: aware when the zone is known, naive without one; None when
    the text is not such a time."""
    m = TIME.fullmatch(value.strip())
    if m is None or m["mon"] not in MONTHS:
        return None
    hour = clock_24h(int(m["h"]), m["ampm"])
    when = from_parts(int(m["y"]), MONTHS[m["mon"]], int(m["d"]), hour or 0, int(m["mi"]), int(m["s"]))
    if when is None or hour is None:
        return None
    zone = zone_offset(m["zone"])
    return when.replace(tzinfo=timezone(zone)) if zone is not None else when


def zone_offset(zone: str | None) -> timedelta | None:
    if not zone:
        return None
    if (o := _OFFSET.fullmatch(zone)) is not None:
        span = timedelta(hours=int(o["h"]), minutes=int(o["m"] or 0))
        return -span if o["sign"] == "-" else span
    hours = ZONES.get(zone)
    return timedelta(hours=hours) if hours is not None else None


@dataclass(slots=True)
class _Cell:
    """The parts of one entry while its div is read."""

    depth: int
    header: list[str] = field(default_factory=list)
    lines: list[list[str]] = field(default_factory=lambda: [[]])
    response: list[str] = field(default_factory=list)
    timed: bool = False


class _Page(HTMLParser):
    """The entries of a My Activity page, each as the JSON form's entry."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.depth = 0
        self.cell: _Cell | None = None
        self.part: tuple[int, str] | None = None  # (depth, "header" | "body" | "caption") being read
        self.entries: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = frozenset((dict(attrs).get("class") or "").split())
        if tag not in VOID:
            self.depth += 1
        if self.cell is None:
            if tag == "div" and "outer-cell" in classes:
                self.cell = _Cell(self.depth)
            return
        if self.part is None and tag == "div" and "content-cell" in classes and "mdl-typography--text-right" \
                not in classes:
            kind = "body" if "mdl-typography--body-1" in classes else "caption"
            self.part = (self.depth, kind)
        elif self.part is None and tag == "p" and "mdl-typography--title" in classes:
            self.part = (self.depth, "header")
        elif self.part is not None and self.part[1] == "body":
            self._body_tag(tag, self.get_starttag_text() or "")

    def _body_tag(self, tag: str, raw: str) -> None:
        cell = self.cell
        assert cell is not None
        if cell.timed:
            cell.response.append(raw)
        elif tag in BLOCKS and self._at_time():  # the response follows the time with no <br> between
            cell.timed = True
            cell.response.append(raw)
        elif tag == "br" and self.depth - (tag not in VOID) == self.part[0]:
            self._close_line()
        elif tag == "br":
            cell.lines[-1].append("\n")

    def _at_time(self) -> bool:
        """Whether the line being read is the entry's time (never its first line: that is the title)."""
        cell = self.cell
        assert cell is not None
        return len(cell.lines) > 1 and takeout_time(_plain("".join(cell.lines[-1]))) is not None

    def _close_line(self) -> None:
        cell = self.cell
        assert cell is not None
        if self._at_time():
            cell.timed = True
            return
        cell.lines.append([])

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if self.cell is not None and self.part is not None and self.part[1] == "body" and self.cell.timed \
                and self.depth > self.part[0]:
            self.cell.response.append(f"</{tag}>")
        if self.part is not None and self.depth == self.part[0]:
            if self.part[1] == "body" and not self.cell.timed:
                self._close_line()
            self.part = None
        if self.cell is not None and self.depth == self.cell.depth:
            self.entries.append(_entry(self.cell))
            self.cell = None
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        self._text(data, data)

    def handle_entityref(self, name: str) -> None:
        self._text(f"&{name};", html.unescape(f"&{name};"))

    def handle_charref(self, name: str) -> None:
        self._text(f"&#{name};", html.unescape(f"&#{name};"))

    def _text(self, raw: str, text: str) -> None:
        if self.cell is None or self.part is None:
            return
        where = self.part[1]
        if where == "header":
            self.cell.header.append(text)
        elif where == "body" and self.cell.timed:
            self.cell.response.append(raw)
        elif where == "body":
            self.cell.lines[-1].append(text)


def _plain(text: str) -> str:
    return " ".join(text.replace("\u2003", " ").split())


def _entry(cell: _Cell) -> dict[str, Any]:
    """The JSON form's entry of a cell: its title, subtitles, time as written and response."""
    lines = ["".join(parts).strip() for parts in cell.lines]
    if cell.timed:
        time, lines = lines[-1].replace("\u2003", " ").strip(), lines[:-1]
    else:
        time = None
    notes = [line for line in lines[1:] if SUBTITLE.search(line)]
    title = "\n".join([*lines[:1], *(line for line in lines[1:] if not SUBTITLE.search(line))])
    entry: dict[str, Any] = {"header": _plain("".join(cell.header)), "title": title}
    if time is not None:
        entry["time"] = time
    if notes:
        entry["subtitles"] = [{"name": line} for line in notes]
    response = "".join(cell.response).strip()
    if response:
        entry["safeHtmlItem"] = [{"html": response}]
    return entry


@register
class GeminiActivityHtml(Grammar):
    name = "gemini-activity-html"
    detect_needs = ("outer-cell",)
    version = "1"
    structured = True
    description = ("Gemini Apps Activity from Google Takeout in its default HTML form (MyActivity.html): prompts, "
                   "responses and actions as one session, oldest first")
    example = ('<div class="outer-cell"><div class="mdl-grid"><div class="header-cell"><p class="mdl-typography--'
               'title">Gemini Apps<br></p></div><div class="content-cell mdl-typography--body-1">Prompted hi<br>'
               'Jun 1, 2025, 10:15:22 AM CEST<br><p>Hello!</p></div></div></div>')

    def detect(self, sample: str, name: str) -> float:
        cells = sample.count('class="outer-cell')
        if not cells or "Gemini" not in sample:
            return 0.0
        entries = _read(sample).entries
        if not entries:
            return 0.0
        return sum(1 for e in entries if "Gemini" in e.get("header", "")) / len(entries)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        entries = _read(source.text).entries
        session = activity_session(entries, takeout_time)
        zones = {m["zone"] for e in entries if (m := TIME.fullmatch(e.get("time") or "")) and m["zone"]}
        unknown = sorted(z for z in zones if zone_offset(z) is None)
        if unknown:
            session.warnings.append(f"time zone abbreviations not read ({', '.join(unknown)}): those times are naive, "
                                    "the configured source zone applies")
        session.meta["form"] = "html"
        yield session

    def count_turns(self, raw: Any) -> int:
        entries = list(raw.values()) if isinstance(raw, dict) else []
        return sum(1 + bool(isinstance(e, dict) and e.get("safeHtmlItem")) for e in entries)


def _read(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page
