"""Telegram Desktop HTML exports (``messages.html``, ``messages2.html``...): Telegram's default export format.

Layout (Telegram Desktop writes one tag per line): a page head and a ``page_header`` with the chat's
name, then ``div.history`` holding one ``div.message`` per message: ``message default`` for a person's
message (``joined`` when it continues the previous author's run and has no ``from_name``),
``message service`` for events, and service blocks with a negative id (``message-1``) for the date
separators between days. Long chats are cut into pages of 1000 messages with "Previous / Next
messages" links (``a.pagination``).

Decisions:
- A chat's pages are one session (id none: the HTML names no chat id; title the chat's name): the
  ingest groups a folder's ``messages.html``, ``messages2.html``... (``group_files``, keyed
  ``messages.html``) and hands them over together; they are read in page order (by the number in the
  name, ``messages10`` after ``messages9``), every turn and region names its page (``part``) and its
  lines in it, ``meta.pages`` and ``meta.files`` list the pages. A page that is missing (a gap in the
  numbers, or the target of a pagination link that is not in the folder) or could not be read makes
  the session partial, naming it. A joined message at the top of a page continues the last author of
  the page before. A lone page is a session of its own (``meta.page`` its number, ``meta.pagination``
  the pages it links to); there a joined message at the top is "unknown", with a warning, and a link
  to another page makes the session partial (the chat goes on in a file that was not read with it).
- A message's time is the ``title`` of its ``div.pull_right.date`` (``12.03.2021 14:05:33 UTC+01:00``):
  aware with the offset, naive when an older export wrote no offset. The visible ``14:05`` is not used.
- ``message default`` blocks are their author's turns (role "user"); ``joined`` ones take the author
  of the message before them. ``message service`` blocks with a positive id are System turns
  ("Ann created group «Friends»"). Date separators are declared ``boilerplate`` regions.
- Text is the ``div.text`` with ``<br>`` (or ``<br/>``, as a page saved again by another tool writes it)
  as line breaks (source line breaks are layout). Media add a
  ``[photo: photos/photo_1.jpg]`` marker line before the caption (kind ``media`` when there is no
  text): photos, videos, animations, stickers, voice and audio, files, contacts, locations, polls,
  games, calls; media the export left out read ``[photo: not included]``. A forwarded message keeps
  its text and says whom it came from in ``extra.forwardedFrom``; a reply names its target in
  ``extra.replyTo``; reactions, signatures and the targets of text links go to ``extra``.
- Source accounting: every message spans the lines of its ``div``; the page head (up to the opening
  of ``div.history``), date separators, pagination links and the closing tags after the history are
  declared regions. Anything else inside the history is left unaccounted, so the gate sees it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import PurePosixPath
from typing import Any

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.drift import Drift
from parsers.grammars._chatjson import compact, markers
from parsers.grammars._html import VOID, ElementParser
from parsers.registry import register
from parsers.timeparse import from_parts

_BLOCK = regex.compile(r"<div\s+class=\"(message\b[^\"]*)\"(?:\s+id=\"message(-?\d+)\")?")
_COUNTED = regex.compile(r"<div\s+class=\"message\s+(?:default|service)\b[^\"]*\"\s+id=\"message\d+\"")
_PAGE_MARK = regex.compile(r'class="page_header"|class="history"|class="pull_right date details"')
_TITLE_TIME = regex.compile(
    r"(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?P<y>\d{4})\s+(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}))?"
    r"(?:\s*UTC(?P<sign>[+-])(?P<oh>\d{1,2}):?(?P<om>\d{2}))?"
)
_PAGE_NUMBER = regex.compile(r"messages(\d*)")
_PAGE_HREF = regex.compile(r"messages\d*\.html")
_GO_TO = regex.compile(r"go_to_message(\d+)")
_ID = regex.compile(r"message(-?\d+)")
MEDIA = {
    "photo_wrap": "photo", "media_photo": "photo", "video_file_wrap": "video", "media_video": "video",
    "animated_wrap": "animation", "media_animation": "animation", "sticker_wrap": "sticker", "media_sticker": "sticker",
    "media_voice_message": "voice", "media_audio_file": "audio", "media_file": "file", "media_contact": "contact",
    "media_location": "location", "media_venue": "venue", "media_live_location": "location", "media_poll": "poll",
    "media_game": "game", "media_invoice": "invoice", "media_call": "call", "video_note_wrap": "video message",
    "media_video_note": "video message", "media_dice": "dice", "media_giveaway": "giveaway", "media_story": "story",
}
KNOWN_CLASSES = frozenset({
    "message", "default", "service", "clearfix", "joined", "selected", "body", "details", "pull_left", "pull_right",
    "userpic_wrap", "userpic", "initials", "date", "from_name", "text", "forwarded", "reply_to", "media_wrap",
    "media", "fill", "title", "bold", "description", "status", "signature", "reactions", "reaction", "emoji",
    "count", "userpics", "photo", "sticker", "video_file", "video_play_bg", "video_play", "video_duration",
    "animated", "gif_play", "block_link", "thumb", "question", "answer", "total", "bot_buttons_table",
    "bot_button_row", "bot_button", "bot_button_column", "link", "spoiler", "hidden", "blockquote", "pre", "code",
    "toast_container", "toast_body", "video_note", "pagination", "via_bot", "round", "italic",
    "active", "userpic1", "userpic2", "userpic3", "userpic4", "userpic5", "userpic6", "userpic7", "userpic8",
    *MEDIA,
})


@dataclass(slots=True)
class Block:
    """One ``div.message`` as the page writes it, with the lines it spans."""

    start: int
    classes: frozenset[str]
    number: int | None
    end: int = 0
    sender: str = ""
    forwarded_from: str = ""
    title: str = ""
    text: list[str] = field(default_factory=list)
    service: list[str] = field(default_factory=list)
    media: list[list[str]] = field(default_factory=list)
    """[label, href, title] of each media item."""
    reply_to: int | None = None
    signature: str = ""
    reactions: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


class _Page(ElementParser):
    """Collects the message blocks, the furniture around them and the chat's name, with line numbers."""

    def __init__(self, drift: Drift | None = None, part: str | None = None) -> None:
        super().__init__()
        self.part = part  # the page's file name when it is one page of several: places name it
        self.blocks: list[Block] = []
        self.block: Block | None = None
        self.block_depth = 0
        self.capture: list[tuple[int, str]] = []  # (depth, what) of the elements whose text is being read
        self.history_open: int | None = None
        self.history_close: int | None = None
        self.history_depth = 0
        self.header: list[str] = []
        self.pagination: list[tuple[int, int, str]] = []
        self._link: tuple[int, str] | None = None
        self.drift = drift if drift is not None else Drift()

    # -- element events -----------------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = self.opened(tag, attrs)
        if found is None:
            return
        a, classes, line, depth = found
        if self.block is None and tag == "div" and "message" in classes:
            number = _ID.fullmatch(a.get("id", ""))
            self.block = Block(line, classes, int(number[1]) if number else None)
            self.block_depth = depth
        elif tag == "div" and "history" in classes and self.history_open is None:
            self.history_open, self.history_depth = line, depth
        elif tag == "a" and "pagination" in classes and self.block is None:
            self._link = (line, a.get("href", ""))
        if self.block is not None:
            self._open_in_block(tag, classes, a, depth, line)
        elif "page_header" in classes or (self.capture and self.capture[-1][1] == "header"):
            self.capture.append((depth, "header"))

    def _open_in_block(self, tag: str, classes: frozenset[str], a: dict[str, str], depth: int, line: int) -> None:
        b = self.block
        assert b is not None
        for c in classes - KNOWN_CLASSES:
            self.drift.note("htmlClass", c, self.where(line))
        if "date" in classes and "pull_right" in classes and not b.title:
            b.title = a.get("title", "")
        elif "from_name" in classes:
            self.capture.append((depth, "forwarded" if self._inside("forwarded") else "sender"))
        elif tag == "div" and "text" in classes:
            self.capture.append((depth, "text"))
        elif "service" in b.classes and "body" in classes and "details" in classes:
            self.capture.append((depth, "service"))
        elif "reply_to" in classes:
            self.capture.append((depth, "skip"))
        elif "signature" in classes:
            self.capture.append((depth, "signature"))
        elif "emoji" in classes and self._inside("reactions"):
            self.capture.append((depth, "reaction"))
        elif "count" in classes and b.reactions:
            self.capture.append((depth, "reaction_count"))
        elif ("title" in classes or "question" in classes) and b.media and not b.media[-1][2]:
            self.capture.append((depth, "media_title"))
        elif "details" in classes or "date" in classes:  # "via @bot", a forward's original date, a status
            self.capture.append((depth, "skip"))
        if tag == "a" and self.capture and self.capture[-1][1] == "text" and a.get("href", "").startswith("http"):
            b.links.append(a["href"])  # a text link shows a label; keep where it pointed
        if tag == "a" and "go_to_message" in a.get("href", ""):
            target = _GO_TO.search(a["href"])
            b.reply_to = int(target[1]) if target else None
        label = next((MEDIA[c] for c in sorted(classes) if c in MEDIA), None)
        if label:
            b.media.append([label, a.get("href", "") if tag == "a" else "", ""])

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or not self.stack:
            return
        # tolerate a missing end tag: close up to the nearest open element of this name
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                break
        else:
            return
        line = self.getpos()[0]
        while len(self.stack) > i:
            depth = len(self.stack)
            self.stack.pop()
            while self.capture and self.capture[-1][0] >= depth:
                self.capture.pop()
            if self.block is not None and depth == self.block_depth:
                self.block.end = line
                self.blocks.append(self.block)
                self.block = None
            elif depth == self.history_depth and self.history_close is None and self.history_open is not None:
                self.history_close = line
            if tag == "a" and self._link is not None and depth == len(self.stack) + 1:
                self.pagination.append((self._link[0], line, self._link[1]))
                self._link = None

    def handle_data(self, data: str) -> None:
        self._data(data.replace("\n", ""))

    def _data(self, data: str) -> None:
        if not self.capture or not data:
            return
        what = self.capture[-1][1]
        b = self.block
        if what == "header":
            self.header.append(data)
        elif b is None or what == "skip":
            return
        elif what == "sender":
            b.sender += data
        elif what == "forwarded":
            b.forwarded_from += data
        elif what == "text":
            b.text.append(data)
        elif what == "service":
            b.service.append(data)
        elif what == "signature":
            b.signature += data
        elif what == "reaction":
            b.reactions.append(data.strip())
        elif what == "reaction_count" and data.strip():
            b.reactions[-1] = f"{b.reactions[-1]} {data.strip()}"
        elif what == "media_title":
            b.media[-1][2] += data

    def where(self, line: int) -> str:
        return f"{self.part} line {line}" if self.part else f"line {line}"

    def _inside(self, cls: str) -> bool:
        return any(cls in classes for _, classes in self.stack[self.block_depth:])


def title_time(title: str) -> datetime | None:
    """``12.03.2021 14:05:33 UTC+01:00`` (aware), or without the offset (naive); None when unreadable."""
    m = _TITLE_TIME.search(title)
    if not m:
        return None
    when = from_parts(int(m["y"]), int(m["m"]), int(m["d"]), int(m["H"]), int(m["M"]), int(m["S"] or 0))
    if when is None or not m["sign"]:
        return when
    offset = timedelta(hours=int(m["oh"]), minutes=int(m["om"]))
    return when.replace(tzinfo=timezone(-offset if m["sign"] == "-" else offset))


def _read(text: str, drift: Drift | None = None, part: str | None = None) -> _Page:
    page = _Page(drift, part)
    page.feed(text)
    page.close()
    return page


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _page_of(name: str) -> int:
    """A page's number from its file name or link: ``messages.html`` is 1, ``messages12.html`` 12."""
    m = _PAGE_NUMBER.fullmatch(PurePosixPath(name).stem)
    return int(m[1] or 1) if m else 0


def _page_name(number: int) -> str:
    return "messages.html" if number == 1 else f"messages{number}.html"


def _text(parts: list[str]) -> str:
    return "\n".join(line.strip() for line in "".join(parts).strip().split("\n"))


def _media_lines(b: Block) -> list[str]:
    lines = []
    for label, href, title in b.media:
        title = title.strip()
        if href:
            lines.append(f"[{label}: {href}]")
        elif title and label not in ("photo", "video", "file"):
            lines.append(f"[{label}: {title}]")
        else:
            lines.append(f"[{label}: not included]" if label in ("photo", "video", "file", "voice", "audio",
                                                                  "sticker", "animation") else f"[{label}]")
    return lines


@register
class TelegramHtml(Grammar):
    name = "telegram-html"
    version = "1"
    group_files = r"messages(?P<part>\d*)\.html"
    description = "Telegram Desktop HTML export (messages.html, messages2.html...): a chat's pages as one session"
    no_turn_shape = "an HTML export: messages are elements, not lines"
    example = ('<div class="message default clearfix" id="message5"><div class="body"><div class="pull_right date '
               'details" title="12.03.2021 14:05:33 UTC+01:00">14:05</div><div class="from_name">Ann</div>'
               '<div class="text">Hello</div></div></div>')

    def detect(self, sample: str, name: str) -> float:
        blocks = _BLOCK.findall(sample)
        if not blocks or not _PAGE_MARK.search(sample):
            return 0.0
        own = sum(1 for classes, number in blocks
                  if number and not {"default", "service"}.isdisjoint(classes.split()))
        return own / len(blocks)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        if source.parts:
            yield self._chat(source)
            return
        page = _read(source.text)
        total = _line_count(source.text)
        session = ParsedSession(None, "none", [], raw=source.text, lines=(1, max(total, 1)))
        session.title = _text(page.header) or None
        number = _PAGE_NUMBER.fullmatch(PurePosixPath(source.name).stem)
        if number:
            session.meta["page"] = int(number[1] or 1)
        if page.pagination:
            session.meta["pagination"] = [href for *_, href in page.pagination]
            others = sorted({href for *_, href in page.pagination if _PAGE_HREF.fullmatch(href)})
            if others:  # beside its pages this file would have been read with them (ingest's grouping)
                session.coverage_reason = (f"this page links to {', '.join(others)} of the same chat, not read "
                                           "with it: the chat continues beyond this file")
        self._turns(session, page)
        self._regions(session, page, total)
        if page.drift:
            session.meta["formatDrift"] = page.drift.as_meta()
        yield session

    def _chat(self, source: SourceText) -> ParsedSession:
        """The pages of one chat (``messages.html``, ``messages2.html``...) as one session, in page order."""
        pages = sorted(source.parts, key=lambda p: (_page_of(p.name), p.name))
        session = ParsedSession(None, "none", [], raw=[p.text for p in pages])
        drift = Drift()
        author = ""
        unreadable: list[str] = []
        linked: set[int] = set()
        for part in pages:
            name = PurePosixPath(part.name).name
            if not part.text:
                unreadable.append(name)
                continue
            page = _read(part.text, drift, name)
            session.title = session.title or _text(page.header) or None
            author = self._turns(session, page, author)
            self._regions(session, page, _line_count(part.text))
            linked.update(_page_of(href) for *_, href in page.pagination if _PAGE_HREF.fullmatch(href))
        numbers = [_page_of(p.name) for p in pages]
        session.meta["pages"] = numbers
        session.meta["files"] = [{"name": PurePosixPath(p.name).name, "sha256": p.sha256, "sizeBytes": p.size}
                                 for p in pages]
        gaps = [f"{_page_name(n)} (missing)" for n in sorted((set(range(1, max(numbers) + 1)) | linked)
                                                             - set(numbers))]
        gaps += [f"{name} (not readable)" for name in unreadable]
        if gaps:
            more = f" and {len(gaps) - 10} more" if len(gaps) > 10 else ""
            listed = ", ".join(gaps[:10])
            session.coverage_reason = f"{len(gaps)} pages of the chat are missing or unreadable: {listed}{more}"
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        return session

    @staticmethod
    def _turns(session: ParsedSession, page: _Page, author: str = "") -> str:
        """Each block of a page as its turn or region; ``author`` is the last author of the page before
        (a joined message at the top of a page continues it). Returns this page's last author."""
        unreadable = 0
        for b in page.blocks:
            if b.number is not None and b.number < 0 and "service" in b.classes:
                session.regions.append(Region(RegionKind.BOILERPLATE, f"date separator: {_text(b.service)}",
                                              lines=(b.start, b.end), part=page.part))
                continue
            when = title_time(b.title) if b.title else None
            if b.title and when is None:
                unreadable += 1
            extra = compact({"messageId": b.number, "replyTo": b.reply_to, "joined": "joined" in b.classes,
                             "forwardedFrom": b.forwarded_from.strip(), "signature": b.signature.strip(),
                             "reactions": b.reactions, "links": b.links})
            if "service" in b.classes:
                session.turns.append(Turn("System", "system", _text(b.service) or "service", when, b.title or None,
                                          None, "system", lines=(b.start, b.end), extra=extra, part=page.part))
                continue
            if "default" not in b.classes:
                page.drift.note("messageClass", " ".join(sorted(b.classes)), page.where(b.start))
            sender = b.sender.strip()
            if sender:
                author = sender
            elif not author:
                session.warnings.append(f"{page.where(b.start)}: a joined message with no author before it "
                                        + ("in the chat" if page.part else "on this page"))
            text = _text(b.text)
            media = _media_lines(b)
            content = markers("\n".join(media), [text]) if media else text
            kind = "media" if media and not text else "message"
            session.turns.append(Turn(author or "unknown", "user", content, when, b.title or None, None, kind,
                                      lines=(b.start, b.end), extra=extra, part=page.part))
        if unreadable:
            where = f"{page.part}: " if page.part else ""
            session.warnings.append(f"{where}{unreadable} messages have a time title that could not be read: "
                                    "no date set")
        return author

    @staticmethod
    def _regions(session: ParsedSession, page: _Page, total: int) -> None:
        part = page.part
        found = []
        first = min((b.start for b in page.blocks), default=total + 1)
        head_end = page.history_open if page.history_open is not None else first - 1
        if head_end >= 1:
            found.append(Region(RegionKind.SESSION_HEADER, "page head and the chat's name",
                                lines=(1, min(head_end, first - 1)), part=part))
        for start, end, href in page.pagination:
            found.append(Region(RegionKind.BOILERPLATE, f"pagination link to {href}", lines=(start, end), part=part))
        last = max((b.end for b in page.blocks), default=head_end)
        tail = page.history_close if page.history_close is not None else last + 1
        tail = max(tail, last + 1)
        if tail <= total:
            found.append(Region(RegionKind.BOILERPLATE, "closing tags after the history", lines=(tail, total),
                                part=part))
        mine = [r for r in session.regions if r.part == part] + found
        session.regions[:] = [r for r in session.regions if r.part != part]
        session.regions.extend(sorted(mine, key=lambda r: r.lines or (0, 0)))

    def count_turns(self, raw: Any) -> int:
        if isinstance(raw, list):  # the pages of a chat
            return sum(self.count_turns(page) for page in raw)
        return len(_COUNTED.findall(raw)) if isinstance(raw, str) else 0
