"""DiscordChatExporter JSON exports (``{"guild", "channel", "messages": [...]}``), one session per channel.

Messages of type ``Default`` and ``Reply`` are their author's turns; every other type
(ChannelNameChange, ChannelIconChange, RecipientAdd, Call, ThreadCreated, ChannelPinnedMessage,
GuildMemberJoin...) is a System turn with the author as actor. An author's display name is their
nickname, else their name. Attachments, embeds, stickers, reactions and the reply reference are
kept as source fields; an edit time is kept raw.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import regex

from models.errors import ParseError, Reason
from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.jsonload import load_json
from parsers.registry import register
from parsers.timeparse import parse_iso

_SIGNATURE = regex.compile(r'"guild"\s*:\s*\{')
_SUPPORT = regex.compile(r'"channel"\s*:\s*\{|"messages"\s*:\s*\[')
MESSAGE_TYPES = {"Default", "Reply"}


@register
class Discord(Grammar):
    name = "discord"
    version = "1"
    structured = True
    description = "DiscordChatExporter JSON export (one channel)"
    example = '{"guild": {"name": "…"}, "channel": {"id": "…"}, "messages": [{"type": "Default", "author": {…}}]}'

    def detect(self, sample: str, name: str) -> float:
        return 0.95 if _SIGNATURE.search(sample) and _SUPPORT.search(sample) else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise ParseError(Reason.PARSE_ERROR, "expected an object with a messages list", path=source.name,
                             grammar=self.name)
        channel = data.get("channel") if isinstance(data.get("channel"), dict) else {}
        guild = data.get("guild") if isinstance(data.get("guild"), dict) else {}
        cid = channel.get("id")
        session = ParsedSession(None if cid is None else str(cid), "source:channel.id" if cid else "none", [],
                                raw=data["messages"], pointer="/")
        names = [x for x in (guild.get("name"), channel.get("category"), channel.get("name")) if x]
        session.title = " / ".join(str(x) for x in names) or None
        if data.get("messageCount") is not None:
            session.meta["declaredMessageCount"] = data["messageCount"]
        for i, m in enumerate(data["messages"]):
            session.turns.append(self._turn(m, f"/messages/{i}"))
        yield session

    @staticmethod
    def _turn(m: Any, pointer: str) -> Turn:
        if not isinstance(m, dict):
            return Turn("System", "other", str(m), pointer=pointer, kind="unknown")
        author = m.get("author") if isinstance(m.get("author"), dict) else {}
        display = author.get("nickname") or author.get("name") or str(author.get("id") or "unknown")
        raw = m.get("timestamp")
        when = parse_iso(raw) if isinstance(raw, str) else None
        extra: dict[str, Any] = {"messageId": m.get("id"), "type": m.get("type")}
        if author.get("isBot"):
            extra["bot"] = True
        if m.get("timestampEdited"):
            extra["editedRaw"] = m["timestampEdited"]
        for key in ("attachments", "embeds", "stickers", "reactions", "mentions"):
            if m.get(key):
                extra[key] = m[key]
        if isinstance(m.get("reference"), dict):
            extra["replyTo"] = m["reference"].get("messageId")
        content = m.get("content") if isinstance(m.get("content"), str) else ""
        if m.get("attachments"):
            names = ", ".join(str(a.get("fileName", "")) for a in m["attachments"] if isinstance(a, dict))
            content = f"{content}\n[attachments: {names}]" if content else f"[attachments: {names}]"
        if m.get("type") in MESSAGE_TYPES:
            kind = "media" if m.get("attachments") and not m.get("content") else "message"
            role = "other" if author.get("isBot") else "user"
            return Turn(str(display), role, content, when, raw, None, kind, pointer=pointer, extra=extra)
        extra["actor"] = display
        return Turn("System", "system", content or str(m.get("type")), when, raw, None, "system",
                    pointer=pointer, extra=extra)

    def count_turns(self, raw: Any) -> int:
        return len(raw)
