"""Telegram Desktop JSON exports (``result.json``): a single chat, or a full export of many chats.

Dialects: a single chat (``{"name", "type", "id", "messages": [...]}``) is one session; a full
account export (``{"about", "personal_information", ..., "chats": {"list": [...]}, "left_chats":
{"list": [...]}}``) gives one session per chat, in file order. session_id = the chat id.

Decisions:
- ``text`` is a string, or a list of strings and entity objects (``{"type": "bold", "text"}``).
  Telegram Desktop writes the plain runs between entities as strings, so the parts partition the
  message and are joined with nothing in between: ``["Ship it ", {"type": "bold", "text": "now"}]``
  is ``Ship it now``. (chat-miner joins with a space, which doubles every real space; a
  hand-written list with no separator string, like its test file, therefore reads ``Link:https://...``.)
- ``service`` messages (group created, members invited, pins, calls, title changes) are System
  turns with the actor in ``extra``; the content says the action and its details.
- Media (photo, file, sticker, voice, video, poll, location, contact) makes kind ``media`` with a
  ``[media: file]`` marker line before the caption.
- ``date_unixtime`` is an exact instant (aware UTC); without it, ``date`` is local time (naive).
  ``edited`` is kept raw as ``editedRaw``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import regex

from models.errors import ParseError, Reason
from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._chatjson import (
    TimeLog,
    iso_time,
    markers,
    note_odd,
    odd_entry,
    raw_text,
    string,
)
from parsers.jsonload import load_json
from parsers.registry import register
from parsers.timeparse import from_epoch

_FULL = regex.compile(r'"chats"\s*:\s*\{|"personal_information"\s*:\s*\{|"left_chats"\s*:\s*\{')
_MESSAGES = regex.compile(r'"messages"\s*:\s*\[')
# Keys only Telegram writes; a chat sample needs one of them to score high.
_STRONG = regex.compile(
    r'"date_unixtime"\s*:|"text_entities"\s*:|"from_id"\s*:\s*"(?:user|channel|chat)\d+"'
    r'|"actor_id"\s*:\s*"(?:user|channel|chat)\d+"|"about"\s*:\s*"Here is the data you requested'
)
_WEAK = regex.compile(r'"type"\s*:\s*"(?:message|service)"[^{}]*"date"\s*:\s*"\d{4}-\d{2}-\d{2}T')
# Other chat exports with a messages list: never claim them.
_FOREIGN = regex.compile(r'"sender_name"\s*:|"guild"\s*:\s*\{|"timestamp_ms"\s*:')
_MEDIA_KEYS = frozenset({"photo", "file", "media_type", "sticker_emoji", "poll", "location_information",
                         "contact_information", "place_name", "game_title", "invoice_information"})
_EXTRA_KEYS = (("reply_to_message_id", "replyTo"), ("forwarded_from", "forwardedFrom"), ("saved_from", "savedFrom"),
               ("via_bot", "viaBot"), ("author", "signature"))
_OPTIONAL = frozenset({k for k, _ in _EXTRA_KEYS} | {"edited", "reactions"})
_SERVICE_KINDS = {"invite_members": "join", "join_group_by_link": "join", "join_group_by_request": "join",
                  "remove_members": "part", "edit_group_title": "topic"}


def entity_text(text: Any) -> str:
    """Telegram's text: a string, or a list of strings and entities whose texts are concatenated."""
    if isinstance(text, str):
        return text
    if isinstance(text, list):
        return "".join(p if isinstance(p, str) else string(p.get("text")) for p in text if isinstance(p, str | dict))
    return ""


def _media_marker(m: dict[str, Any]) -> str | None:
    if isinstance(m.get("poll"), dict):
        return f"[poll: {string(m['poll'].get('question'))}]"
    if isinstance(m.get("location_information"), dict):
        loc = m["location_information"]
        place = string(m.get("place_name"))
        return f"[location: {loc.get('latitude')}, {loc.get('longitude')}{' ' + place if place else ''}]"
    if isinstance(m.get("contact_information"), dict):
        c = m["contact_information"]
        return f"[contact: {' '.join(x for x in (string(c.get('first_name')), string(c.get('last_name'))) if x)}]"
    if m.get("game_title"):
        return f"[game: {m['game_title']}]"
    if isinstance(m.get("invoice_information"), dict):
        return f"[invoice: {string(m['invoice_information'].get('title'))}]"
    label = m.get("media_type") or ("photo" if m.get("photo") else "file" if m.get("file") else None)
    if not label and m.get("sticker_emoji"):
        label = "sticker"
    if not label:
        return None
    name = m.get("file_name") or m.get("file") or m.get("photo") or ""
    emoji = f" {m['sticker_emoji']}" if m.get("sticker_emoji") else ""
    return f"[{label}{emoji}: {name}]" if name else f"[{label}{emoji}]"


def _service_text(m: dict[str, Any], text: str) -> str:
    action = string(m.get("action")) or "service"
    details = [action.replace("_", " ")]
    if m.get("title"):
        details.append(f"title: {m['title']}")
    if isinstance(m.get("members"), list) and m["members"]:
        details.append("members: " + ", ".join(str(x) for x in m["members"]))
    for key, label in (("message_id", "message"), ("duration_seconds", "seconds"), ("discard_reason", "reason"),
                       ("inviter", "inviter")):
        if m.get(key) not in (None, ""):
            details.append(f"{label}: {m[key]}")
    actor = string(m.get("actor"))
    head = f"{actor}: " if actor else ""
    return head + "; ".join(details) + (f"\n{text}" if text else "")


@register
class Telegram(Grammar):
    name = "telegram"
    version = "2"
    structured = True
    description = "Telegram Desktop export result.json (one chat, or a full export: one session per chat)"
    example = ('{"name": "Friends", "type": "private_group", "id": 42, "messages": [{"id": 1, "type": "message", '
               '"date": "2024-03-01T09:01:00", "date_unixtime": "1709283660", "from": "Ann", "from_id": "user1", '
               '"text": ["see ", {"type": "link", "text": "https://telegram.org/"}]}]}')

    def detect(self, sample: str, name: str) -> float:
        if _FOREIGN.search(sample):
            return 0.0
        strong = _STRONG.search(sample) is not None
        if _FULL.search(sample) and strong:
            return 0.95
        if _MESSAGES.search(sample):
            if strong:
                return 0.93
            if _WEAK.search(sample):
                return 0.6
        return 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        if not isinstance(data, dict):
            raise ParseError(Reason.PARSE_ERROR, "expected a JSON object", path=source.name, grammar=self.name)
        if "messages" not in data and (isinstance(data.get("chats"), dict) or isinstance(data.get("left_chats"), dict)):
            for key in ("chats", "left_chats"):
                group = data.get(key)
                listing = group.get("list") if isinstance(group, dict) else None
                for i, chat in enumerate(listing if isinstance(listing, list) else []):
                    if isinstance(chat, dict):
                        yield self._chat(chat, f"/{key}/list/{i}", source.name)
        else:
            yield self._chat(data, "", source.name)

    def _chat(self, chat: dict[str, Any], pointer: str, path: str) -> ParsedSession:
        messages = chat.get("messages")
        if not isinstance(messages, list):
            raise ParseError(Reason.PARSE_ERROR, f"chat at {pointer or '/'} has no messages list", path=path,
                             grammar=self.name)
        cid = chat.get("id")
        session = ParsedSession(None if cid is None else str(cid), "none" if cid is None else "source:id", [],
                                raw=messages, pointer=pointer or "/")
        session.title = chat.get("name") if isinstance(chat.get("name"), str) else None
        if chat.get("type"):
            session.meta["chatType"] = chat["type"]
        times = TimeLog()
        turns = session.turns
        for i, m in enumerate(messages):
            turns.append(self._turn(m, f"{pointer}/messages/{i}", times))
        note_odd(session, messages)
        times.flush(session)
        return session

    @staticmethod
    def _turn(m: Any, pointer: str, times: TimeLog) -> Turn:
        if not isinstance(m, dict):
            return odd_entry(m, pointer)
        raw = raw_text(m.get("date_unixtime"))
        if raw is not None:
            when = from_epoch(raw)
        else:
            raw = raw_text(m.get("date"))
            when = iso_time(raw) if raw else None
        when = times.read(when, raw, pointer)
        text = entity_text(m.get("text"))
        extra: dict[str, Any] = {"messageId": m.get("id"), "fromId": m.get("from_id") or m.get("actor_id")}
        if not _OPTIONAL.isdisjoint(m):  # most messages have none of these: skip the lookups
            for key, out in _EXTRA_KEYS:
                if m.get(key) not in (None, ""):
                    extra[out] = m[key]
            if m.get("edited"):
                extra["editedRaw"] = raw_text(m["edited"])
            if isinstance(m.get("reactions"), list):
                extra["reactions"] = [{"emoji": r.get("emoji") or r.get("document_id"), "count": r.get("count")}
                                      for r in m["reactions"] if isinstance(r, dict)]
        if isinstance(m.get("text"), list):  # a text_link shows a label; keep where it pointed
            links = [p["href"] for p in m["text"] if isinstance(p, dict) and p.get("href")]
            if links:
                extra["links"] = links
        if m.get("type") == "service":
            extra["actor"] = m.get("actor") or m.get("actor_id")
            extra["action"] = m.get("action")
            kind = _SERVICE_KINDS.get(string(m.get("action")), "system")
            return Turn("System", "system", _service_text(m, text), when, raw, None, kind, pointer=pointer,
                        extra={k: v for k, v in extra.items() if v is not None})
        kind = "message"
        if not _MEDIA_KEYS.isdisjoint(m) and any(m.get(k) for k in _MEDIA_KEYS):
            marker = _media_marker(m)
            if marker:
                kind, text = "media", markers(marker, [text])
        # A deleted account exports "from": null; its id still tells the turns apart.
        speaker = m.get("from") or m.get("from_id") or "unknown"
        return Turn(str(speaker), "user", text, when, raw, None, kind, pointer=pointer,
                    extra={k: v for k, v in extra.items() if v is not None} or None)

    def count_turns(self, raw: Any) -> int:
        return len(raw) if isinstance(raw, list) else 0
