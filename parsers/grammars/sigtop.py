"""Signal Desktop chats exported by sigtop as text (``sigtop export-messages -f text``): one file per chat.

Shapes (learnt from the exporter's own source; the field names are data, ``FIELDS``)::

    Conversation: Ann Lee (+4915112345678)          <- the chat: a session_header region, its title

    From: Ann Lee (+4915112345678)                  <- a message: its sender ("You": the owner),
    Type: incoming                                     its type, then header fields
    Sent: Fri, 1 Mar 2024 09:15:02 +0100
    Received: Fri, 1 Mar 2024 09:15:03 +0100
    Attachment: map.jpg (image/jpeg, 12345 bytes)
    Reaction: 👍 from You

    >From: You                                      <- a quoted message, every line after ">"
    >Sent: Fri, 1 Mar 2024 09:14:00 +0100
    >
    >Shall we meet at 10?

    Yes, 10 at the station.                         <- the text, after a blank line

    Type: group-v2-change                           <- an event names no sender: Type opens it
    Sent: ...

Decisions:
- Every message is one turn (B2): it opens at its ``From:`` line (the ``Type:`` line under it is
  declared as its field), or at ``Type:`` when it names no sender. A text line that has this shape
  (``From: x`` over ``Type: y``) starts a message; the export gives no way to tell.
- ``incoming`` and ``outgoing`` messages are their sender's turns (``You`` is the owner, as sigtop
  writes it; a sender's number or id in parentheses goes to ``extra.recipient``); any other type
  (group changes, key changes, timers, calls) is a System turn of kind ``notice`` with
  ``extra.type``.
- The time is ``Sent`` (else ``Received``), with its zone. Attachments become ``[attachment: name]``
  lines after the text (kind ``media`` without text), reactions ``extra.reactions`` ({emoji, from}),
  the quote ``extra.quote`` (its text) and ``extra.quoteFrom``; an edited message (``Edited: N
  versions``) is its newest version's text, with ``extra.edits`` = N.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

import regex

from models.records import ParsedSession, Region, RegionKind, ShapedLine, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import Block, split_blocks
from parsers.grammars._chatjson import compact
from parsers.grammars._lines import file_session
from parsers.registry import register
from parsers.sample import nonblank

HEADER = regex.compile(r"^(?:From: (?P<from>[^\n]*)\nType: (?P<type>[^\n]*)|Type: (?P<event>[^\n]*))$",
                       regex.MULTILINE)
FIELDS = ("Sent", "Received", "Attachment", "Reaction", "Edited")
"""The header fields sigtop writes under From and Type, in its order."""
MESSAGES = frozenset({"incoming", "outgoing"})
"""Types whose messages someone wrote; the others are Signal's own events."""
_FIELD = regex.compile(r"^(?P<key>" + "|".join(FIELDS) + r"): (?P<value>[^\n]*)$")
_DETAIL = regex.compile(r"^(?P<name>.*?) \((?P<detail>[^()]*)\)$")
_REACTION = regex.compile(r"^(?P<emoji>\S+) from (?P<from>.+)$")
_ATTACHMENT = regex.compile(r"^(?P<name>.*) \([^()]*\)$")
_CONVERSATION = regex.compile(r"^Conversation: (?P<title>[^\n]*)$", regex.MULTILINE)
_COUNT = regex.compile(r"^Type: ", regex.MULTILINE)


def explained_share(sample: str) -> float:
    """Message headers, their fields and text over the sample's non-blank lines, when the sample opens
    with sigtop's ``Conversation:`` line or holds ``From:``/``Type:`` pairs with ``Sent:`` fields."""
    lines = nonblank(sample, 2000)
    if not lines:
        return 0.0
    heads = sum(1 for _ in HEADER.finditer(sample))
    sent = sum(1 for ln in lines if ln.startswith(("Sent: ", "Received: ")))
    if not heads or sent < 0.5 * heads:
        return 0.0
    return 1.0 if _CONVERSATION.match(sample.lstrip("\ufeff")) else 0.95


def _time(value: str | None) -> datetime | None:
    try:
        return parsedate_to_datetime(value) if value else None
    except (TypeError, ValueError):
        return None


def _who(value: str) -> tuple[str, str | None]:
    m = _DETAIL.match(value)
    return (m["name"], m["detail"]) if m and m["name"] else (value, None)


def _prefixed(rest: list[str], mark: str) -> tuple[list[str], list[str]]:
    """(the block of ``mark``-prefixed lines after a blank line at the head of ``rest``, without the mark;
    the lines after it): a quote (``>``) or an edit history (``|``)."""
    if not (len(rest) > 1 and rest[0] == "" and rest[1].startswith(mark)):
        return [], rest
    j = 1
    while j < len(rest) and rest[j].startswith(mark):
        j += 1
    return [line[1:] for line in rest[1:j]], rest[j:]


def _sections(body: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(field lines, quote lines, edit-history lines, text lines) of a message after its header."""
    lines = body.split("\n")[1:] if body.startswith("\n") else body.split("\n")
    fields: list[str] = []
    text: list[str] = []
    i = 0
    while i < len(lines) and _FIELD.match(lines[i]):
        fields.append(lines[i])
        i += 1
    quote, rest = _prefixed(lines[i:], ">")
    edits, rest = _prefixed(rest, "|")
    if rest and rest[0] == "":
        text = rest[1:]
    elif rest:
        text = rest  # text with no blank line before it: kept, not lost
    return fields, quote, edits, text


def _newest(edits: list[str]) -> list[str]:
    """The text of the first version in an edit history (sigtop lists the newest first); its quote
    (``>`` lines) and fields are not text."""
    out: list[str] = []
    for n, line in enumerate(edits):
        if line.startswith("Version: ") and n:
            break
        if not line.startswith(("Version: ", ">")) and not _FIELD.match(line):
            out.append(line[1:] if line.startswith(" ") else line)
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


def _quoted(quote: list[str]) -> dict[str, Any]:
    by = next((ln[6:] for ln in quote if ln.startswith("From: ")), None)
    text = [ln[1:] if ln.startswith(" ") else ln for ln in quote
            if not _FIELD.match(ln) and not ln.startswith("From: ")]
    return {"quoteFrom": by, "quote": "\n".join(text[1:] if text and text[0] == "" else text) or None}


def _turn(block: Block) -> Turn:
    h = block.header
    fields, quote, edits, text = _sections(block.text)
    values: dict[str, list[str]] = {}
    for line in fields:
        m = _FIELD.match(line)
        values.setdefault(m["key"], []).append(m["value"])
    raw = (values.get("Sent") or values.get("Received") or [None])[0]
    when = _time(raw)
    kind_of = h["type"] if h["type"] is not None else h["event"]
    body = "\n".join(_newest(edits) if edits else text)
    files = [(m["name"] if (m := _ATTACHMENT.match(a)) else a) for a in values.get("Attachment", [])]
    content = "\n".join(x for x in (body, *(f"[attachment: {f}]" for f in files)) if x)
    reactions = [{"emoji": m["emoji"], "from": m["from"]}
                 for r in values.get("Reaction", []) if (m := _REACTION.match(r))]
    versions = values.get("Edited", [""])[0].split(" ")[0]
    extra: dict[str, Any] = {"reactions": reactions, "edits": int(versions) if versions.isdigit() else None,
                             **(_quoted(quote) if quote else {})}
    span = (block.line_start, block.line_end)
    speaker, detail = _who(h["from"]) if h["from"] is not None else ("unknown", None)
    if kind_of not in MESSAGES:
        extra.update(type=kind_of, actor=speaker if h["from"] is not None else None)
        return Turn("System", "system", content or f"[{kind_of}]", when, raw, None, "notice", span,
                    extra=compact(extra))
    extra["recipient"] = detail
    kind = "media" if files and not body else "message"
    return Turn(speaker, "user", content, when, raw, None, kind, span, extra=compact(extra))


@register
class Sigtop(Grammar):
    name = "sigtop"
    detect_needs = ("Type: ",)  # every message has its Type line
    version = "1"
    description = "Signal Desktop chat exported by sigtop as text (Conversation:, From:/Type:/Sent: fields, text)"
    turn_shape = r"^(?:From|Type): "
    example = "Conversation: Ann Lee\n\nFrom: Ann Lee\nType: incoming\nSent: Fri, 1 Mar 2024 09:15:02 +0100\n\nMorning!"

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        session = file_session(source)
        for block in split_blocks(source.text, HEADER):
            if block.header is None:
                title = _CONVERSATION.search(block.body)
                session.title = title["title"].strip() if title else None
                kind = RegionKind.SESSION_HEADER if title else RegionKind.PREAMBLE
                why = "the export's Conversation line" if title else "text before the first message"
                session.regions.append(Region(kind, why, lines=(block.line_start, block.line_end)))
                continue
            if block.header["from"] is not None:  # the Type line under a From line is that message's field
                session.shaped.append(ShapedLine(block.line_start + 1, "the Type field under its message's From line"))
            session.turns.append(_turn(block))
        yield session

    def count_turns(self, raw: Any) -> int:
        return len(_COUNT.findall(raw))
