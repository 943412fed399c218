"""Google Hangouts from Google Takeout (``Hangouts/Hangouts.json``): every conversation of an account.

Shape (verified against public parsers of the Takeout file)::

    {"conversations": [{
        "conversation": {"conversation_id": {"id": "Ugx..."},
                         "conversation": {"id": {"id": "Ugx..."}, "type": "GROUP", "name": "Trip",
                                          "participant_data": [{"id": {"gaia_id": "1168", "chat_id": "1168"},
                                                                "fallback_name": "Ann Lee"}, ...]}},
        "events": [{"conversation_id": {"id": "Ugx..."}, "sender_id": {"gaia_id": "1168", "chat_id": "1168"},
                    "timestamp": "1369539128052528", "event_id": "7-H0Z7", "event_type": "REGULAR_CHAT_MESSAGE",
                    "chat_message": {"message_content": {"segment": [{"type": "TEXT", "text": "hi"},
                                                                     {"type": "LINE_BREAK"}],
                                                         "attachment": [...]}}}, ...]}]}

The structure differs from the one-list-of-records exports of ``json_chat.py`` (many conversations,
authors through a participant directory, text in segments), so it is a grammar of its own.

Decisions:
- One session per conversation, in file order; session_id = the conversation id, title its name
  (group conversations have one), ``meta.participants`` the directory's names.
- Every event is one turn (B1, B2), oldest first by its microsecond ``timestamp`` (the file keeps
  events in the order they were fetched, not always in time; ties keep file order).
- Text is the segments joined (``LINE_BREAK`` a line end, ``LINK`` its text); attachments are
  ``[photo: url]``/``[attachment]`` markers.
- The author is the participant's ``fallback_name``; one without a name in the directory keeps the
  source's own id (``gaia_id``), never a guess. ``ADD_USER``, ``REMOVE_USER``, ``RENAME_CONVERSATION``
  and ``HANGOUT_EVENT`` (calls) are System turns with the author as ``actor`` and the event's
  details as compact JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from models.errors import ParseError, Reason
from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import ConversationList, Grammar
from parsers.drift import Drift
from parsers.grammars._chatjson import Record, TimeLog, compact, explained_share, markers, note_odd, odd_entry, raw_text
from parsers.grammars.json_chat import chronological, path
from parsers.registry import register
from parsers.timeparse import from_epoch

MESSAGE_EVENTS = frozenset({"REGULAR_CHAT_MESSAGE", "SMS", "VOICEMAIL"})
EVENT_DETAILS = ("membership_change", "conversation_rename", "hangout_event")
EVENT_KEYS = frozenset({"conversation_id", "sender_id", "timestamp", "self_event_state", "chat_message",
                        "hangout_event", "membership_change", "conversation_rename", "event_id",
                        "advances_sort_timestamp", "event_otr", "delivery_medium", "event_type", "event_version"})


def _hangouts_record(record: Record) -> bool:
    return record.container == "events" and "sender_id" in record.keys and "timestamp" in record.keys


def _micros(value: Any):
    try:
        return from_epoch(int(value) / 1_000_000) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _names(directory: Any) -> dict[str, str]:
    """gaia_id -> fallback_name of a conversation's participant directory."""
    out = {}
    for p in directory if isinstance(directory, list) else ():
        gaia, name = path(p, "id.gaia_id"), path(p, "fallback_name")
        if isinstance(gaia, str) and isinstance(name, str) and name:
            out[gaia] = name
    return out


def _segments(content: Any) -> str:
    parts = []
    for seg in path(content, "segment") or ():
        if isinstance(seg, dict):
            parts.append("\n" if seg.get("type") == "LINE_BREAK" else str(seg.get("text") or ""))
    return "".join(parts)


def _attachments(content: Any) -> list[str]:
    out = []
    for item in path(content, "attachment") or ():
        url = path(item, "embed_item.plus_photo.url") or path(item, "embed_item.plus_photo.thumbnail.image_url")
        out.append(f"[photo: {url}]" if isinstance(url, str) and url else "[attachment]")
    return out


def _turn(e: Any, pointer: str, names: dict[str, str], times: TimeLog, drift: Drift) -> Turn:
    if not isinstance(e, dict):
        return odd_entry(e, pointer)
    drift.unknown_keys(e, EVENT_KEYS, pointer)
    raw = raw_text(e.get("timestamp"))
    when = times.read(_micros(e.get("timestamp")), raw, pointer)
    gaia = path(e, "sender_id.gaia_id")
    sender = names.get(gaia) if isinstance(gaia, str) else None
    sender = sender or (str(gaia) if gaia is not None else "unknown")
    kind = e.get("event_type")
    extra = {"eventId": e.get("event_id"), "type": kind}
    content = path(e, "chat_message.message_content")
    text, files = _segments(content), _attachments(content)
    if kind is not None and kind not in MESSAGE_EVENTS:
        detail = next((e[k] for k in EVENT_DETAILS if e.get(k)), None)
        shown = orjson.dumps(detail, option=orjson.OPT_SORT_KEYS).decode() if detail else ""
        extra["actor"] = sender
        return Turn("System", "system", text or f"[{kind}] {shown}".rstrip(), when, raw, None, "system",
                    pointer=pointer, extra=compact(extra))
    body = markers(text, files) if files else text
    return Turn(sender, "user", body, when, raw, None, "media" if files and not text else "message",
                pointer=pointer, extra=compact(extra))


@register
class Hangouts(Grammar):
    name = "hangouts"
    detect_needs = ('"events"',)  # records in an events list
    version = "1"
    structured = True
    conversations = ConversationList(top_list=False)
    description = "Google Hangouts Takeout (Hangouts.json): one session per conversation"
    example = ('{"conversations": [{"conversation": {...}, "events": [{"sender_id": {"gaia_id": "1168"}, '
               '"timestamp": "1369539128052528", "event_type": "REGULAR_CHAT_MESSAGE", "chat_message": '
               '{"message_content": {"segment": [{"type": "TEXT", "text": "hi"}]}}}]}]}')

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample, _hangouts_record) or 0.0

    def parse_conversation(self, pointer: str, value: Any, source: SourceText, settings: Settings
                           ) -> Iterator[ParsedSession]:
        if not pointer:  # the whole input, not an entry of the wrapper's list
            raise ParseError(Reason.PARSE_ERROR, "expected an object with a conversations list", path=source.name,
                             grammar=self.name)
        yield self._conversation(value, pointer)

    @staticmethod
    def _conversation(conversation: Any, base: str) -> ParsedSession:
        inner = path(conversation, "conversation.conversation")
        cid = path(conversation, "conversation.conversation_id.id") or path(inner, "id.id")
        session = ParsedSession(str(cid) if cid else None, "source:conversation_id" if cid else "none", [],
                                raw=conversation, pointer=base)
        name = path(inner, "name")
        session.title = name if isinstance(name, str) and name else None
        names = _names(path(inner, "participant_data"))
        if names:
            session.meta["participants"] = sorted(set(names.values()))
        events = conversation.get("events") if isinstance(conversation, dict) else None
        events = events if isinstance(events, list) else []
        stamps = [_micros(e.get("timestamp")) if isinstance(e, dict) else None for e in events]
        order, _ = chronological(stamps, newest=False)  # times that cannot tell keep the file's order
        if len(events) > 1:
            session.assumptions.append("events emitted oldest first by timestamp")
        times, drift = TimeLog(), Drift()
        for j in order:
            session.turns.append(_turn(events[j], f"{base}/events/{j}", names, times, drift))
        note_odd(session, events)
        times.flush(session, "events")
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        return session

    def count_turns(self, raw: Any) -> int:
        events = raw.get("events") if isinstance(raw, dict) else None
        return len(events) if isinstance(events, list) else 0
