"""Telegram Desktop JSON exports (``result.json``): a single chat, or a full export of many chats.

A single chat (``{"name", "type", "id", "messages": [...]}``) is one session; a full export
(``{"chats": {"list": [...]}}``, plus ``left_chats``) gives one session per chat, id = chat id.
Message ``text`` is a string or a list of strings and entity objects (``{"type": "bold", "text"}``):
the texts are concatenated as written. ``service`` messages (joins, pins, calls, title changes)
are System turns with the actor. Media (photo, file, sticker, voice) adds a marker line and kind
``media``. ``date_unixtime`` is an exact UTC time; without it, ``date`` is local time (naive).
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
from parsers.timeparse import from_epoch, parse_iso

_SIGNATURE = regex.compile(r'"messages"\s*:\s*\[')
_SUPPORT = regex.compile(r'"(?:date_unixtime|from_id|text_entities)"|"type"\s*:\s*"(?:message|service)"')
_MEDIA_KEYS = ("photo", "file", "sticker_emoji", "media_type", "poll", "location_information", "contact_information")


def entity_text(text: Any) -> str:
    """Telegram's text: a string, or a list of strings and entities, concatenated."""
    if isinstance(text, str):
        return text
    if isinstance(text, list):
        return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in text if isinstance(p, (str, dict)))
    return ""


@register
class Telegram(Grammar):
    name = "telegram"
    version = "1"
    structured = True
    description = "Telegram Desktop export result.json (one chat or a full export)"
    example = '{"name": "Friends", "id": 42, "messages": [{"type": "message", "from": "Ann", "text": "hi"}]}'

    def detect(self, sample: str, name: str) -> float:
        if '"chats"' in sample and '"list"' in sample and _SUPPORT.search(sample):
            return 0.95
        if _SIGNATURE.search(sample) and _SUPPORT.search(sample):
            return 0.92
        return 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        if not isinstance(data, dict):
            raise ParseError(Reason.PARSE_ERROR, "expected a JSON object", path=source.name, grammar=self.name)
        if isinstance(data.get("chats"), dict):
            chats = [("/chats/list", data["chats"].get("list") or [])]
            if isinstance(data.get("left_chats"), dict):
                chats.append(("/left_chats/list", data["left_chats"].get("list") or []))
            for base, listing in chats:
                for i, chat in enumerate(listing):
                    if isinstance(chat, dict):
                        yield self._chat(chat, f"{base}/{i}")
        else:
            yield self._chat(data, "")

    def _chat(self, chat: dict[str, Any], pointer: str) -> ParsedSession:
        messages = chat.get("messages")
        if not isinstance(messages, list):
            raise ParseError(Reason.PARSE_ERROR, f"chat at {pointer or '/'} has no messages list", grammar=self.name)
        cid = chat.get("id")
        session = ParsedSession(None if cid is None else str(cid), "source:id" if cid is not None else "none", [],
                                raw=messages)
        session.title = chat.get("name") if isinstance(chat.get("name"), str) else None
        session.pointer = pointer or "/"
        if chat.get("type"):
            session.meta["chatType"] = chat["type"]
        for i, m in enumerate(messages):
            session.turns.append(self._turn(m, f"{pointer}/messages/{i}"))
        return session

    @staticmethod
    def _turn(m: Any, pointer: str) -> Turn:
        if not isinstance(m, dict):
            return Turn("System", "other", str(m), pointer=pointer, kind="unknown")
        if m.get("date_unixtime") not in (None, ""):
            when, raw = from_epoch(m["date_unixtime"]), str(m["date_unixtime"])
        else:
            raw = m.get("date")
            when = parse_iso(raw) if isinstance(raw, str) else None
        text = entity_text(m.get("text"))
        extra: dict[str, Any] = {"messageId": m.get("id")}
        for key in ("reply_to_message_id", "forwarded_from", "edited"):
            if m.get(key) is not None:
                extra[key if key != "edited" else "editedRaw"] = m[key]
        if m.get("type") == "service":
            actor = m.get("actor")
            action = m.get("action") or "service"
            content = f"{actor or ''} {action}".strip() + (f": {text}" if text else "")
            extra.update({"actor": actor, "action": action})
            return Turn("System", "system", content, when, raw, None, "system", pointer=pointer, extra=extra)
        media = [k for k in _MEDIA_KEYS if m.get(k)]
        kind = "message"
        if media:
            kind = "media"
            label = m.get("media_type") or media[0]
            name = m.get("file") or m.get("photo") or m.get("sticker_emoji") or ""
            text = f"[{label}: {name}]" + (f"\n{text}" if text else "")
        speaker = m.get("from") or m.get("actor") or str(m.get("from_id") or "unknown")
        return Turn(str(speaker), "user", text, when, raw, None, kind, pointer=pointer, extra=extra)

    def count_turns(self, raw: Any) -> int:
        return len(raw)
