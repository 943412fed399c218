"""VkOpt's export of a VK chat (the VkOpt browser extension's "save messages" page), read for ``vk-html``.

Layout (learnt from a public reader's fixtures of the extension's pages; not VK's own archive)::

    <title>VK Messages: Sota(1), Denko(2)</title>                     <- the chat's people
    <h4> Messages dates: from 2018.01.21 18:52:20 to 2019.05.17 20:32:58 </h4>
    <h4> Total messages: 25 </h4>
    <div id="msg1" class="msg_item">
      <div class="from"> <b>Denko</b> <a href="http://vk.com/id2">@denko</a>
        <a href="#msg1">2019.01.02 07:03:18</a></div>                  <- author, profile, time
      <div class="msg_body">take it<br/>and leave</div>                <- the text
      <div class="attacment"> <a href="https://...">[photo1] (400x400)</a></div>   <- an attachment
      <div class="fwd"> <div class="msg_item"> <div class="from"> <b>Sota</b> ... 2019.01.02 07:02:58
        </div> <div class="msg_body">pwetty pwease</div> </div> </div>  <- forwarded messages
    </div>
    <div id="msg0" class="msg_item"> <div class="from">...</div> <div>action "<b>chat_invite_user</b>"
      is unknown</div> </div>                                          <- an event the extension could not word

Decisions:
- An emoji is an ``<img class="emoji">`` whose ``alt`` is the emoji: the text keeps the ``alt``.
- Every ``div.msg_item`` that is not inside another is one turn, in the page's order (the page is not
  sorted by time; the order is the source's). Forwarded messages (``div.fwd``) are part of the message
  that forwards them: after its text and attachments, each is a ``[forwarded: author, time]`` line and
  its text quoted with ``> ``; they are also listed in ``extra.forwarded``.
- The author is the ``<b>`` of ``div.from`` (the profile link in ``extra.profile``); the time is the
  ``YYYY.MM.DD HH:MM:SS`` in it, naive local time (the source zone applies).
- A message whose only body is a bare ``div`` (``action "chat_invite_user" is unknown``) is a System
  turn with the author as ``actor``.
- Each attachment is an ``[attachment: description]`` line (the link in ``extra.attachments``; kind
  ``media`` without text). ``Total messages: N`` above what the page holds is a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from parsers.grammars._chatjson import compact
from parsers.grammars._html import VOID, ElementParser
from parsers.timeparse import from_parts

STAMP = regex.compile(r"(?P<y>\d{4})\.(?P<m>\d{2})\.(?P<d>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})")
TOTAL = regex.compile(r"Total messages:\s*(?P<n>\d+)")
ITEM = regex.compile(r'<div\s+id="msg\d*"\s+class="msg_item"')
"""A top-level message of the page (the forwarded ones inside a message have no id)."""
_CAPTURED = {"from": "from_text", "author": "author", "stamp": "stamp", "text": "text", "event": "text"}


@dataclass(slots=True)
class OptMessage:
    """One ``div.msg_item``: its lines and what it shows."""

    start: int
    end: int = 0
    author: str = ""
    profile: str = ""
    from_text: str = ""
    stamp: str = ""
    text: str = ""
    event: bool = False
    attachments: list[list[str]] = field(default_factory=list)
    forwarded: list[OptMessage] = field(default_factory=list)


class OptPage(ElementParser):
    """The top-level messages of one VkOpt page, with their forwarded messages, and the page's title."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[OptMessage] = []
        self.open: list[tuple[int, OptMessage]] = []  # (depth, message): the outer one, then forwarded ones
        self.capture: list[tuple[int, str]] = []
        self.title = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img" and self.capture and self.capture[-1][1] == "text":
            self._data(dict(attrs).get("alt") or "")  # an emoji is an image whose alt text is the emoji
        found = self.opened(tag, attrs)
        if found is None:
            return
        a, classes, line, depth = found
        if tag == "title":
            self.capture.append((depth, "title"))
        elif tag == "div" and "msg_item" in classes:
            self.open.append((depth, OptMessage(line)))
        elif self.open:
            self._inside(tag, classes, a, depth)

    def _inside(self, tag: str, classes: frozenset[str], a: dict[str, str], depth: int) -> None:
        item_depth, m = self.open[-1]
        what = self.capture[-1][1] if self.capture else None
        if "from" in classes:
            self.capture.append((depth, "from"))
        elif tag == "b" and what == "from":
            self.capture.append((depth, "author"))
        elif tag == "a" and what == "from":
            href = a.get("href", "")
            m.profile = m.profile or (href if "vk.com" in href else "")
            self.capture.append((depth, "stamp" if href.startswith("#msg") else "skip"))
        elif "msg_body" in classes:
            self.capture.append((depth, "text"))
        elif "attacment" in classes:
            m.attachments.append(["", ""])
        elif tag == "a" and m.attachments and not m.attachments[-1][1]:
            m.attachments[-1][1] = a.get("href", "")
            self.capture.append((depth, "attachment"))
        elif tag == "div" and depth == item_depth + 1 and not classes:
            m.event = True
            self.capture.append((depth, "event"))
        elif tag == "div" and not {"upic", "attacments", "att_head", "att_ico"}.isdisjoint(classes):
            self.capture.append((depth, "skip"))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or not any(t == tag for t, _ in self.stack):
            return
        while self.stack:
            depth = len(self.stack)
            name, _ = self.stack.pop()
            while self.capture and self.capture[-1][0] >= depth:
                self.capture.pop()
            if self.open and self.open[-1][0] == depth:
                self._close(self.open.pop()[1])
            if name == tag:
                return

    def _close(self, m: OptMessage) -> None:
        m.end = self.getpos()[0]
        if self.open:
            self.open[-1][1].forwarded.append(m)
        else:
            self.messages.append(m)

    def handle_data(self, data: str) -> None:
        self._data(data.replace("\n", " ") if self.capture and self.capture[-1][1] in ("text", "event") else data)

    def _data(self, data: str) -> None:
        if not self.capture or not data:
            return
        what = self.capture[-1][1]
        if what == "title":
            self.title += data
        elif what == "attachment" and self.open:
            self.open[-1][1].attachments[-1][0] += data
        elif what in _CAPTURED and self.open:
            m = self.open[-1][1]
            setattr(m, _CAPTURED[what], getattr(m, _CAPTURED[what]) + data)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _lines(text: str) -> str:
    return "\n".join(_one_line(line) for line in text.strip().split("\n"))


def _stamp(m: OptMessage) -> str | None:
    found = STAMP.search(m.stamp) or STAMP.search(m.from_text)
    return found[0] if found else None


def _forwarded_lines(m: OptMessage) -> list[str]:
    out = []
    for f in m.forwarded:
        out.append(f"[forwarded: {_one_line(f.author) or 'unknown'}, {_stamp(f) or 'no time'}]")
        out += [f"> {line}" for line in _lines(f.text).split("\n") if line]
        out += _forwarded_lines(f)
    return out


def _facts(m: OptMessage) -> list[dict[str, str | None]]:
    return [{"author": _one_line(f.author), "time": _stamp(f), "text": _lines(f.text)} | (
        {"forwarded": _facts(f)} if f.forwarded else {}) for f in m.forwarded]


def opt_turn(m: OptMessage) -> Turn:
    """A top-level VkOpt message as its turn."""
    raw = _stamp(m)
    found = STAMP.fullmatch(raw) if raw else None
    when = from_parts(*(int(found[k]) for k in ("y", "m", "d", "h", "mi", "s"))) if found else None
    author = _one_line(m.author) or "unknown"
    text = _lines(m.text)
    files = [f"[attachment: {_one_line(desc) or 'attachment'}]" for desc, _ in m.attachments]
    content = "\n".join(x for x in (text, *files, *_forwarded_lines(m)) if x)
    extra = compact({"profile": m.profile, "attachments": [link for _, link in m.attachments if link],
                     "forwarded": _facts(m)})
    if m.event:
        return Turn("System", "system", content, when, raw, None, "system", (m.start, m.end),
                    extra={**(extra or {}), "actor": author})
    kind = "media" if files and not text and not m.forwarded else "message"
    return Turn(author, "user", content, when, raw, None, kind, (m.start, m.end), extra=extra)


def opt_session(source: SourceText) -> ParsedSession:
    """The one session of a VkOpt page, its messages in the page's order."""
    page = OptPage()
    page.feed(source.text)
    page.close()
    total = source.text.count("\n") + (0 if source.text.endswith("\n") else 1)
    session = ParsedSession(None, "none", [opt_turn(m) for m in page.messages], raw=source.text)
    session.lines = (1, max(total, 1))
    session.title = _one_line(page.title) or None
    session.meta["dialect"] = "vkopt"
    first = min((m.start for m in page.messages), default=total + 1)
    last = max((m.end for m in page.messages), default=0)
    if first > 1:
        session.regions.append(Region(RegionKind.SESSION_HEADER, "the page's head: title, dates, message total",
                                      lines=(1, first - 1)))
    if last < total:
        session.regions.append(Region(RegionKind.BOILERPLATE, "the page's end: closing tags", lines=(last + 1, total)))
    stated = TOTAL.search(source.text[:4096])
    if stated and int(stated["n"]) > len(page.messages):
        session.warnings.append(f"the page says it holds {stated['n']} messages; {len(page.messages)} are in it")
    if len(page.messages) > 1:
        session.assumptions.append("messages in the page's order (VkOpt does not sort them by time)")
    return session
