"""VK (VKontakte) messages from the account archive (vk.com/data_protection): ``messages/<peer>/messages<N>.html``.

Layout (learnt from public readers of the archive; pages are windows-1251, declared in their
``<meta>``, which decoding honours)::

    <div class="ui_crumb">Сообщения</div> ... <div class="ui_crumb">Павел Дуров</div>   <- the chat's name
    <div class="item"><div class="item__main">
      <div class="message" data-id="1234">
        <div class="message__header"><a href="https://vk.com/id1">Павел Дуров</a>, 5 мая 2022 в 1:34:19
            <span class="message-edited">(ред.)</span></div>                    <- author, time, edited
        <div>Привет<br>как дела?<div class="kludges"><div class="attachment">
            <div class="attachment__description">Фотография</div>
            <a class="attachment__link" href="https://vk.com/photo1_2">...</a></div></div></div>
      </div></div></div>

A message of the archive's owner has no link: ``Вы, 5 мая 2022 в 1:34:19`` (``You, 5 May 2022 at ...``
in an English archive). A long chat is cut into pages named by their offset: ``messages0.html``,
``messages50.html``...

Decisions:
- A peer's pages are one session (``group_files``: the folder's ``messages<N>.html`` files, in the
  order of N), its id the peer folder's name (a user id; ``2000000001``... for a group chat), its title
  the last breadcrumb. Every ``div.message`` is one turn; turns are emitted oldest first by time, then
  by ``data-id`` (the archive writes the newest first), recorded as an assumption.
- The author is the header's link text (the profile link in ``extra.profile``), else the owner's word
  as written (``Вы``/``You``). The time is naive local time (the archive writes no zone; the source
  zone applies); months in Russian or English. ``(ред.)``/``(edited)`` sets ``extra.edited``.
- The text is the div after the header, ``<br>`` as line breaks, up to ``div.kludges``; each attachment
  is a ``[Фотография: link]`` line after it (its description as the archive words it; kind ``media``
  without text).
- A page of VkOpt's export (the browser extension's, ``div.msg_item``) is read by ``_vkopt`` (its
  decisions are there): one session per page, in the page's order, forwarded messages inside theirs.
- Source accounting: every message spans the lines of its ``div.item`` (or of the message when it has
  none); the page before the first message and after the last is declared boilerplate (the page's
  head, breadcrumbs, pagination). A page read alone whose file name is ``messages<N>.html`` with N
  above 0 says that earlier pages of the chat were not read with it (a warning: their number is not
  known from the page).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._chatjson import compact
from parsers.grammars._html import VOID, ElementParser
from parsers.grammars._vkopt import ITEM, opt_session
from parsers.registry import register
from parsers.timeparse import clock_24h, from_parts

MONTHS = {**{m: i for i, m in enumerate(("янв", "фев", "мар", "апр", "ма", "июн", "июл", "авг", "сен", "окт",
                                         "ноя", "дек"), 1)},
          **{m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                         "nov", "dec"), 1)}}
"""Month abbreviations of the archive's dates (Russian: ``мая``/``май`` share ``ма``; English)."""
_TIME = regex.compile(r"(?P<d>\d{1,2}) (?P<mon>\p{L}+)\.? (?P<y>\d{4}) (?:в|at) (?P<h>\d{1,2}):(?P<mi>\d{2})"
                      r"(?::(?P<s>\d{2}))?(?: ?(?P<ampm>[AaPp][Mm]))?")
_PROFILE = regex.compile(r"vk\.com/")
_COUNTED = regex.compile(r'<div class="message"[^>]*data-id="')


@dataclass(slots=True)
class Message:
    """One ``div.message`` with the lines of its item."""

    start: int
    number: int | None
    end: int = 0
    author: str = ""
    profile: str = ""
    header: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    edited: bool = False
    attachments: list[list[str]] = field(default_factory=list)
    """[description, link] of each attachment."""


class _Page(ElementParser):
    """The messages of one page and its breadcrumbs, with line numbers."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[Message] = []
        self.current: Message | None = None
        self.item: tuple[int, int] | None = None  # (line, depth) of the open div.item
        self.depth = 0  # the open message's depth
        self.capture: list[tuple[int, str]] = []
        self.crumbs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = self.opened(tag, attrs)
        if found is None:
            return
        a, classes, line, depth = found
        if tag == "div" and "item" in classes and self.current is None:
            self.item = (line, depth)
        if tag == "div" and "message" in classes and self.current is None:
            number = a.get("data-id", "")
            start = self.item[0] if self.item else line
            self.current, self.depth = Message(start, int(number) if number.isdigit() else None), depth
        elif self.current is not None:
            self._inside(tag, classes, a, depth)
        elif "ui_crumb" in classes:
            self.crumbs.append("")
            self.capture.append((depth, "crumb"))

    def _inside(self, tag: str, classes: frozenset[str], a: dict[str, str], depth: int) -> None:
        m = self.current
        assert m is not None
        if "message__header" in classes:
            self.capture.append((depth, "header"))
        elif "message-edited" in classes:
            m.edited = True
            self.capture.append((depth, "skip"))
        elif tag == "a" and self.capture and self.capture[-1][1] == "header" and _PROFILE.search(a.get("href", "")):
            m.profile = a.get("href", "")
            self.capture.append((depth, "author"))
        elif "kludges" in classes:
            self.capture.append((depth, "skip"))
        elif "attachment" in classes:
            m.attachments.append(["", ""])
        elif "attachment__description" in classes:
            self.capture.append((depth, "attachment"))
        elif tag == "a" and "attachment__link" in classes and m.attachments:
            m.attachments[-1][1] = a.get("href", "")
        elif tag == "div" and depth == self.depth + 1 and not (self.capture and self.capture[-1][1] != "text"):
            self.capture.append((depth, "text"))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or not any(t == tag for t, _ in self.stack):
            return
        line = self.getpos()[0]
        while self.stack:
            depth = len(self.stack)
            name, _ = self.stack.pop()
            while self.capture and self.capture[-1][0] >= depth:
                self.capture.pop()
            if self.current is not None and depth == self.depth:
                self.current.end = line
                self.messages.append(self.current)
                self.current = None
            if self.item is not None and depth == self.item[1]:
                if self.messages and self.messages[-1].start == self.item[0]:
                    self.messages[-1].end = line
                self.item = None
            if name == tag:
                return

    def handle_data(self, data: str) -> None:
        self._data(data.replace("\n", " ") if self.capture and self.capture[-1][1] == "text" else data)

    def _data(self, data: str) -> None:
        if not self.capture or not data:
            return
        what, m = self.capture[-1][1], self.current
        if what == "crumb":
            self.crumbs[-1] += data
        elif m is None or what == "skip":
            return
        elif what == "author":
            m.author += data
        elif what == "header":
            m.header.append(data)
        elif what == "text":
            m.text.append(data)
        elif what == "attachment" and m.attachments:
            m.attachments[-1][0] += data


def vk_time(header: str) -> datetime | None:
    """``5 мая 2022 в 1:34:19`` / ``5 May 2022 at 1:34:19 am``: a naive datetime, None when unreadable."""
    m = _TIME.search(header)
    if m is None:
        return None
    low = m["mon"].lower()
    month = MONTHS.get(low[:3]) or MONTHS.get(low[:2])
    hour = clock_24h(int(m["h"]), m["ampm"])
    if month is None or hour is None:
        return None
    return from_parts(int(m["y"]), month, int(m["d"]), hour, int(m["mi"]), int(m["s"] or 0))


def _text(parts: list[str]) -> str:
    """The text as the page shows it: ``<br>`` breaks lines, other white space is one space."""
    return "\n".join(" ".join(line.split()) for line in "".join(parts).strip().split("\n"))


def _turn(m: Message, part: str | None) -> Turn:
    header = " ".join("".join(m.header).split())
    author = " ".join(m.author.split()) or header.split(",", 1)[0].strip() or "unknown"
    when = vk_time(header)
    raw = _TIME.search(header)
    text = _text(m.text)
    files = [f"[{desc.strip() or 'attachment'}: {link}]" if link else f"[{desc.strip() or 'attachment'}]"
             for desc, link in m.attachments]
    content = "\n".join(x for x in (text, *files) if x)
    extra = compact({"messageId": m.number, "profile": m.profile, "edited": m.edited})
    kind = "media" if files and not text else "message"
    return Turn(author, "user", content, when, raw[0] if raw else None, None, kind, lines=(m.start, m.end),
                extra=extra, part=part)


def _page_number(name: str) -> int | None:
    m = regex.fullmatch(r"messages(\d+)\.html", PurePosixPath(name).name)
    return int(m[1]) if m else None


@register
class VkHtml(Grammar):
    name = "vk-html"
    version = "1"
    group_files = r"messages(?P<part>\d+)\.html"
    detect_needs = ("message__header", "msg_item")
    description = ("VK (VKontakte) account archive messages: messages/<peer>/messages<N>.html pages "
                   "(windows-1251) as one session per peer")
    no_turn_shape = "an HTML export: messages are elements, not lines"
    example = ('<div class="message" data-id="1"><div class="message__header"><a href="https://vk.com/id1">'
               'Павел</a>, 5 мая 2022 в 1:34:19</div><div>Привет</div></div>')

    def detect(self, sample: str, name: str) -> float:
        pairs = ((sample.count('class="message__header"'), len(_COUNTED.findall(sample))),
                 (sample.count('<div class="from">'), sample.count('class="msg_item"')))  # the archive; VkOpt
        return max((min(a, b) / max(a, b) for a, b in pairs if a and b), default=0.0)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        if not source.parts and ITEM.search(source.text) and "message__header" not in source.text:
            yield opt_session(source)
            return
        pages = sorted(source.parts, key=lambda p: (_page_number(p.name) or 0, p.name)) if source.parts else [source]
        folder = PurePosixPath(source.name).parent.name
        sid = folder if folder.lstrip("-").isdigit() else None
        session = ParsedSession(sid, "source:peer folder" if sid else "none", [],
                                raw=[p.text for p in pages] if source.parts else source.text)
        turns: list[Turn] = []
        for page in pages:
            part = PurePosixPath(page.name).name if source.parts else None
            self._page(session, page, part, turns)
        if not source.parts:
            session.lines = (1, max(page.text.count("\n") + (not page.text.endswith("\n")), 1))
            number = _page_number(source.name)
            if number:
                session.warnings.append(f"page {PurePosixPath(source.name).name} read alone: the chat's earlier "
                                        "pages (messages0.html...) were not read with it")
        else:
            session.meta["files"] = [PurePosixPath(p.name).name for p in pages]
        session.turns = sorted(turns, key=lambda t: (t.time or datetime.min, (t.extra or {}).get("messageId") or 0))
        if len(turns) > 1:
            session.assumptions.append("messages emitted oldest first by time, then by message id (the archive "
                                       "lists the newest first)")
        undated = sum(1 for t in turns if t.time is None)
        if undated:
            session.warnings.append(f"{undated} message times could not be read: no date set")
        yield session

    @staticmethod
    def _page(session: ParsedSession, page: SourceText, part: str | None, turns: list[Turn]) -> None:
        parsed = _Page()
        parsed.feed(page.text)
        parsed.close()
        crumbs = [c.strip() for c in parsed.crumbs if c.strip()]
        session.title = session.title or (crumbs[-1] if crumbs else None)
        turns.extend(_turn(m, part) for m in parsed.messages)
        total = page.text.count("\n") + (0 if page.text.endswith("\n") else 1)
        first = min((m.start for m in parsed.messages), default=total + 1)
        last = max((m.end for m in parsed.messages), default=0)
        if first > 1:
            session.regions.append(Region(RegionKind.SESSION_HEADER, "the page's head and breadcrumbs",
                                          lines=(1, first - 1), part=part))
        if last < total:
            session.regions.append(Region(RegionKind.BOILERPLATE, "the page's end: pagination and closing tags",
                                          lines=(last + 1, total), part=part))

    def count_turns(self, raw: Any) -> int:
        if isinstance(raw, list):
            return sum(self.count_turns(page) for page in raw)
        if not isinstance(raw, str):
            return 0
        return len(_COUNTED.findall(raw)) or len(ITEM.findall(raw))
