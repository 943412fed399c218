"""Signal Desktop chats exported by signal-export (``sigexport``) as Markdown: ``<chat name>/chat.md``.

Shapes (one file is one chat, one session; learnt from the exporter's own source)::

    [2024-03-01 09:15:02] Ann Lee: Morning!␠␠          <- a message: local time, sender, text; the
                                                          exporter ends every message with two spaces
    [2024-03-01 09:16:40] Me: Yes, at 10.              <- the owner's messages are "Me"
    Bring the map.␠␠                                  <- a continuation line
    [2024-03-01 09:17:05] Ann Lee:                     <- a reply: the quoted text as "> " lines
                                                          between blank lines, then the text
    > Yes, at 10.

    Great␠␠
    (- Me: 👍, Bo: ❤ -)                                <- reactions
    [2024-03-01 09:18:00] Me: ␠␠![map.jpg](./media/2024-03-01T09-18-00.000_00_map.jpg)␠␠   <- attachments
    [2024-03-01 09:19:00] Ann Lee: (This message was deleted)

A blank line follows every message. The patterns are data (below).

Decisions:
- Every message line is one turn (B2); the lines after it until the next are its text. A line of
  text with a message line's shape starts a turn (the export gives no way to tell), as in every
  line format; the census sees such lines.
- The text loses the exporter's two trailing spaces (a Markdown line break) and its blank separator
  line; the quoted text goes to ``extra.quote``, reactions to ``extra.reactions`` ({from, emoji});
  a sticker becomes a ``[sticker: label]`` line and attachments ``[attachment: name]`` lines (kind
  ``media`` when there is no text); ``(This message was deleted)`` is empty content with
  ``extra.deleted``; the exporter's call lines (``Missed voice call``...) are turns of kind ``call``.
- Times are naive local times (the exporter writes the computer's local time; ``source_tz``
  applies). The chat's name is the folder's; the file holds no id.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

import regex

from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import Block, split_blocks
from parsers.grammars._chatjson import compact
from parsers.grammars._lines import blocks_session
from parsers.registry import register
from parsers.sample import nonblank
from parsers.timeparse import from_parts

HEADER = regex.compile(r"^\[(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})\] "
                       r"(?P<name>[^\n]*?): ?", regex.MULTILINE)
BREAK = "  "
"""What the exporter appends to every message (a Markdown line break)."""
DELETED = "(This message was deleted)"
REACTIONS = regex.compile(r"\n\(- (?P<list>[^\n]*) -\)$")
REACTION = regex.compile(r"(?P<from>[^,:]+?): ?(?P<emoji>[^,]+)")
STICKER = regex.compile(r"\n\(\( (?P<label>[^\n]*) \)\)$")
ATTACHMENT = regex.compile(r"!?\[(?P<name>[^\]\n]*)\]\((?P<path>\./media/[^)\s]*)\)  ")
QUOTE = regex.compile(r"^\n\n(?P<quote>(?:> ?[^\n]*\n?)+)\n")
CALL = regex.compile(r"^(?:Incoming|Outgoing|Missed) (?:voice |video )?call\b[^\n]*$")
"""The exporter's own words for a call-history message."""
_COUNT = regex.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] [^\n]*?:", regex.MULTILINE)


def explained_share(sample: str, name: str) -> float:
    """Message lines and their continuations over the sample's non-blank lines, when the text is
    signal-export's: the file is a ``chat.md``, or most messages end with the exporter's two spaces
    (a plain transcript with the same stamps is the transcript grammar's)."""
    lines = nonblank(sample, 2000)
    if not lines:
        return 0.0
    blocks = [b for b in split_blocks(sample, HEADER) if b.header is not None][:500]
    if not blocks:
        return 0.0
    marked = sum(1 for b in blocks if b.body.rstrip("\n").endswith(BREAK) or b.body.strip() == DELETED)
    if PurePosixPath(name).name != "chat.md" and marked < 0.5 * len(blocks):
        return 0.0
    first = next(i for i, ln in enumerate(lines) if HEADER.match(ln))
    return (len(lines) - first) / len(lines)


def _message(body: str) -> tuple[str, dict[str, Any], str]:
    """(text, extra facts, kind) of a message's text as the exporter wrote it."""
    extra: dict[str, Any] = {}
    if (m := QUOTE.match(body)) is not None:
        quoted = m["quote"].rstrip("\n").split("\n")
        extra["quote"] = "\n".join(ln[2:] if ln.startswith("> ") else ln[1:] for ln in quoted)
        body = body[m.end():]
    if (m := REACTIONS.search(body)) is not None:
        extra["reactions"] = [{"from": r["from"].strip(), "emoji": r["emoji"].strip()}
                              for r in REACTION.finditer(m["list"])]
        body = body[:m.start()]
    markers = []
    if (m := STICKER.search(body)) is not None:
        markers.append(f"[sticker: {m['label']}]")
        body = body[:m.start()]
    markers += [f"[attachment: {a['name']}]" for a in ATTACHMENT.finditer(body)]
    body = ATTACHMENT.sub("", body)
    text = body[:-len(BREAK)] if body.endswith(BREAK) else body
    if text == DELETED and not markers:
        return "", {**extra, "deleted": True}, "message"
    content = "\n".join(x for x in (text, *markers) if x)
    kind = "call" if CALL.match(text) else "media" if markers and not text else "message"
    return content, extra, kind


def _turn(block: Block) -> Turn:
    h = block.header
    when = from_parts(int(h["y"]), int(h["m"]), int(h["d"]), int(h["h"]), int(h["mi"]), int(h["s"]))
    raw = h.group(0)[1:20]
    content, extra, kind = _message(block.text)
    return Turn(h["name"], "user", content, when, raw, None, kind, (block.line_start, block.line_end),
                extra=compact(extra))


@register
class SignalExport(Grammar):
    name = "signal-export"
    detect_needs = ("] ",)  # the stamp's closing bracket before the sender
    version = "1"
    description = "Signal Desktop chat exported by signal-export as Markdown (<chat>/chat.md: [time] sender: text)"
    turn_shape = HEADER.pattern
    example = "[2024-03-01 09:15:02] Ann Lee: Morning!  "

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample, name)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        yield blocks_session(source, HEADER, _turn, PurePosixPath(source.name).parent.name or None)

    def count_turns(self, raw: Any) -> int:
        return len(_COUNT.findall(raw))
