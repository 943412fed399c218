"""Telegram Desktop JSON exports (``result.json``): a single chat, or a full export of many chats.

Dialects: a single chat (``{"name", "type", "id", "messages": [...]}``) is one session; a full
account export (``{"about", "personal_information", ..., "chats": {"list": [...]}, "left_chats":
{"list": [...]}}``) gives one session per chat, in file order. session_id = the chat id; a full
export's ``personal_information.user_id`` is each session's ``accountId`` (a private chat's or basic
group's id and message ids are the exporting account's, normalizers/keys.py).

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
from parsers.drift import Drift
from parsers.grammars._chatjson import (
    Record,
    TimeLog,
    explained_share,
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

_FULL = regex.compile(r'"about"\s*:\s*"Here is the data you requested|"personal_information"\s*:\s*\{')
_MEDIA_KEYS = frozenset({"photo", "file", "media_type", "sticker_emoji", "poll", "location_information",
                         "contact_information", "place_name", "game_title", "invoice_information"})
_EXTRA_KEYS = (("reply_to_message_id", "replyTo"), ("forwarded_from", "forwardedFrom"), ("saved_from", "savedFrom"),
               ("via_bot", "viaBot"), ("author", "signature"))
_OPTIONAL = frozenset({k for k, _ in _EXTRA_KEYS} | {"edited", "reactions"})
MESSAGE_KEYS = frozenset({
    "id", "type", "date", "date_unixtime", "edited", "edited_unixtime", "from", "from_id", "text", "text_entities",
    "actor", "actor_id", "action", "title", "new_title", "members", "message_id", "reply_to_message_id",
    "reply_to_peer_id", "forwarded_from", "forwarded_from_id", "saved_from", "via_bot", "author", "photo",
    "photo_file_size", "width", "height", "file", "file_name", "file_size", "thumbnail", "thumbnail_file_size",
    "media_type", "mime_type", "duration_seconds", "sticker_emoji", "poll", "location_information",
    "live_location_period_seconds", "contact_information", "contact_vcard", "place_name", "address", "game_title",
    "game_description", "game_link", "game_message_id", "score", "invoice_information", "self_destruct_period_seconds",
    "reactions", "inviter", "discard_reason", "schedule_date", "boosts", "period_seconds", "to_id", "values",
    "emoticon", "amount", "currency", "is_recurring", "button_text", "data", "domain", "information_text",
    "distance", "peer_id", "invoice_message_id", "media_spoiler", "business_bot", "paid_stars_amount",
})
MESSAGE_TYPES = frozenset({"message", "service"})
_OWN = frozenset({"date", "date_unixtime", "from", "from_id", "actor", "actor_id"})
_FOREIGN = frozenset({"author", "timestamp", "sender_name", "timestamp_ms", "role"})
ENTITY_TYPES = frozenset({
    "plain", "bold", "italic", "underline", "strikethrough", "code", "pre", "text_link", "link", "mention",
    "mention_name", "hashtag", "cashtag", "bot_command", "email", "phone", "spoiler", "blockquote", "custom_emoji",
    "bank_card", "unknown",
})
ACTIONS = frozenset({
    "create_group", "create_channel", "migrate_to_supergroup", "migrate_from_group", "edit_group_title",
    "edit_chat_title", "edit_group_photo", "edit_chat_photo", "delete_group_photo", "delete_chat_photo",
    "invite_members", "remove_members", "join_group_by_link", "join_group_by_request", "pin_message",
    "clear_history", "score_in_game", "send_payment", "phone_call", "group_call", "invite_to_group_call",
    "group_call_scheduled", "take_screenshot", "allow_sending_messages", "send_passport_values", "joined_telegram",
    "proximity_reached", "set_messages_ttl", "set_chat_theme", "send_webview_data", "gift_premium", "topic_created",
    "topic_edit", "requested_peer", "set_chat_wallpaper", "set_same_chat_wallpaper", "boost_apply", "gift_code",
    "giveaway_launch", "giveaway_results", "convert_to_gigagroup", "edit_chat_about", "suggest_profile_photo",
    "attach_menu_bot_allowed", "web_app_bot_allowed", "bot_allowed", "custom_action", "payment_refunded",
    "gift_stars", "prize_stars", "send_star_gift",
})
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


def _note_drift(m: dict[str, Any], pointer: str, drift: Drift) -> None:
    drift.unknown_keys(m, MESSAGE_KEYS, pointer)
    if m.get("type") not in MESSAGE_TYPES:
        drift.note("messageType", str(m.get("type")), pointer)
    if m.get("type") == "service" and m.get("action") not in ACTIONS:
        drift.note("action", str(m.get("action")), pointer)
    for part in m.get("text") if isinstance(m.get("text"), list) else ():
        if isinstance(part, dict) and part.get("type") not in ENTITY_TYPES:
            drift.note("contentType", str(part.get("type")), pointer)


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


def _telegram_record(record: Record) -> bool:
    keys = record.keys
    return (record.container == "messages" and "type" in keys and not _OWN.isdisjoint(keys)
            and _FOREIGN.isdisjoint(keys))


def _account(data: dict[str, Any]) -> str | None:
    """The exporting account's user id (a full export's ``personal_information.user_id``)."""
    info = data.get("personal_information")
    user = info.get("user_id") if isinstance(info, dict) else None
    return str(user) if isinstance(user, int | str) and str(user) else None


@register
class Telegram(Grammar):
    name = "telegram"
    detect_needs = ('"messages"', '"about"', '"personal_information"')  # a chat's messages, or a full export's opening
    version = "2"
    structured = True
    description = "Telegram Desktop export result.json (one chat, or a full export: one session per chat)"
    example = ('{"name": "Friends", "type": "private_group", "id": 42, "messages": [{"id": 1, "type": "message", '
               '"date": "2024-03-01T09:01:00", "date_unixtime": "1709283660", "from": "Ann", "from_id": "user1", '
               '"text": ["see ", {"type": "link", "text": "https://telegram.org/"}]}]}')

    def detect(self, sample: str, name: str) -> float:
        share = explained_share(sample, _telegram_record)
        if share is None:  # a full export opens with contacts and sessions; its first chat may be past the sample
            return 0.9 if _FULL.search(sample) else 0.0
        return share

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        if not isinstance(data, dict):
            raise ParseError(Reason.PARSE_ERROR, "expected a JSON object", path=source.name, grammar=self.name)
        if "messages" not in data and (isinstance(data.get("chats"), dict) or isinstance(data.get("left_chats"), dict)):
            account = _account(data)
            for key in ("chats", "left_chats"):
                group = data.get(key)
                listing = group.get("list") if isinstance(group, dict) else None
                for i, chat in enumerate(listing if isinstance(listing, list) else []):
                    if isinstance(chat, dict):
                        session = self._chat(chat, f"/{key}/list/{i}", source.name)
                        if account is not None:  # whose export it is: a private chat's id is the peer's
                            session.meta["accountId"] = account
                        yield session
        else:
            yield self._chat(data, "", source.name)

    def _chat(self, chat: dict[str, Any], pointer: str, path: str) -> ParsedSession:
        messages = chat.get("messages")
        if not isinstance(messages, list):
            raise ParseError(Reason.PARSE_ERROR, f"chat at {pointer or '/'} has no messages list", path=path,
                             grammar=self.name)
        cid = chat.get("id")
        session = ParsedSession(None if cid is None else str(cid), "none" if cid is None else "source:id", [],
                                raw=chat, pointer=pointer)
        session.title = chat.get("name") if isinstance(chat.get("name"), str) else None
        if chat.get("type"):
            session.meta["chatType"] = chat["type"]
        times, drift = TimeLog(), Drift()
        turns = session.turns
        for i, m in enumerate(messages):
            turns.append(self._turn(m, f"{pointer}/messages/{i}", times, drift))
        note_odd(session, messages)
        times.flush(session)
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        return session

    @staticmethod
    def _turn(m: Any, pointer: str, times: TimeLog, drift: Drift) -> Turn:
        if not isinstance(m, dict):
            return odd_entry(m, pointer)
        _note_drift(m, pointer, drift)
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
        messages = raw.get("messages") if isinstance(raw, dict) else None
        return len(messages) if isinstance(messages, list) else 0
