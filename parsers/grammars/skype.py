"""Skype data export ``messages.json``: ``userId``, ``exportDate``, ``conversations[].MessageList[]``.

One session per conversation (a one-to-one chat, a group ``19:…@thread.skype``), session_id = the
conversation id, title = its ``displayName``.

Decisions:
- The export lists messages newest first; they are emitted oldest first by ``originalarrivaltime``
  (``_chatjson.chronological``: equal times keep the reverse of the list's order), and the
  assumption says so.
- Who: a message's ``displayName`` when the export gives one; else the name another message of
  the same ``from`` id gives, or a call's participant list (``<part identity=…><name>``); else, for
  the other side of a one-to-one chat (``from`` = the conversation id), the conversation's
  ``displayName``; else the ``from`` id without its numeric prefix (``live:.cid.1234``). Names are
  learned from the whole export. The id is always kept in ``extra.from``. Ids starting ``28:`` are
  bots (role ``other``, ``extra.bot``).
- Text: ``RichText`` content is Skype's markup: tags are removed and entities decoded (a link keeps
  its text, its target goes to ``extra.links`` when it differs); an edit marker ``<e_m …/>`` becomes
  ``extra.edited``; a quote keeps the plain text Skype writes for it (``[date] name: text`` and
  ``<<<``). Plain ``Text`` content is kept as it is.
- Media (``RichText/UriObject``, ``RichText/Media_*``) is kind ``media`` with a ``[photo: name]``-style
  marker line before the fallback text. Calls (``Event/Call``) and thread activity (members added,
  topic changes...) are System turns with the event and its fields; ``Notice`` and ``PopCard`` too.
- A message with ``properties.deletetime`` and no content is kept (B1) with ``extra.deleted``.
- Unknown message types and keys are format drift: counted, never dropped.
"""

from __future__ import annotations

import html
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
    chronological,
    compact,
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

MESSAGE_KEYS = frozenset({"id", "displayName", "originalarrivaltime", "messagetype", "version", "content",
                          "conversationid", "from", "properties", "amsreferences", "skypeguid"})
TEXT_TYPES = frozenset({"RichText", "Text", "RichText/Html", "RichText/Contacts", "RichText/Location",
                        "RichText/ScheduledCallInvite", "Poll", "InviteFreeRelationshipChanged/Initialized"})
MEDIA_TYPES = {"RichText/UriObject": "file", "RichText/Media_Album": "album", "RichText/Media_GenericFile": "file",
               "RichText/Media_Video": "video", "RichText/Media_AudioMsg": "audio", "RichText/Media_Card": "card",
               "RichText/Media_FlikMsg": "moji", "RichText/Media_CallRecording": "call recording"}
SYSTEM_TYPES = frozenset({"Event/Call", "Notice", "PopCard", "Event/BingBot", "SystemMessage"})
_ACTIVITY = "ThreadActivity/"
_SIGNED = regex.compile(r"<e_m\b[^>]*>(?:</e_m>)?")
_LINK = regex.compile(r'<a\b[^>]*\bhref="(?P<href>[^"]*)"[^>]*>(?P<text>.*?)</a>', regex.S)
_TAG = regex.compile(r"<[^<>]*>")
_LEAF = regex.compile(r"<(?P<tag>[A-Za-z]\w*)>(?P<text>[^<]*)</(?P=tag)>")
_ORIGINAL_NAME = regex.compile(r'<OriginalName\s+v="(?P<name>[^"]*)"')
_URI_TYPE = regex.compile(r'<URIObject\b[^>]*\btype="(?P<type>[^".]*)')
_PARTLIST = regex.compile(r'<partlist\b[^>]*\btype="(?P<type>[^"]*)"')
_PART_NAME = regex.compile(r"<name>(?P<name>[^<]*)</name>")
_PART = regex.compile(r'<part\b[^>]*\bidentity="(?P<id>[^"]+)"[^>]*>\s*<name>(?P<name>[^<]+)</name>')
_DURATION = regex.compile(r"<duration>(?P<s>[\d.]+)</duration>")
_EXPORT = regex.compile(r'"exportDate"\s*:|"MessageList"\s*:')


def _skype_record(record: Record) -> bool:
    return record.container == "MessageList" and "originalarrivaltime" in record.keys


def markup_text(content: str) -> tuple[str, dict[str, Any]]:
    """Skype's RichText markup as plain text, and what the tags held that the text does not show."""
    extra: dict[str, Any] = {}
    edit = _SIGNED.search(content)
    if edit is not None:
        extra["edited"] = True
        content = _SIGNED.sub("", content)
    links = [html.unescape(m["href"]) for m in _LINK.finditer(content)
             if html.unescape(m["href"]) != html.unescape(_TAG.sub("", m["text"]))]
    if links:
        extra["links"] = links
    return html.unescape(_TAG.sub("", content)), extra


def _call(content: str) -> str:
    m = _PARTLIST.search(content)
    names = [html.unescape(n["name"]) for n in _PART_NAME.finditer(content)]
    duration = _DURATION.search(content)
    what = f"call {m['type']}" if m and m["type"] else "call"
    if duration:
        what += f" ({duration['s']} s)"
    return what + (": " + ", ".join(names) if names else "")


def _activity(mtype: str, content: str) -> str:
    fields = [f"{m['tag']}: {html.unescape(m['text'])}" for m in _LEAF.finditer(content) if m["text"].strip()]
    return mtype[len(_ACTIVITY):] + (" (" + "; ".join(fields) + ")" if fields else "")


class _Names:
    """Who is who in one export, from everything it says of its ids (see the module docstring)."""

    def __init__(self, conversations: list[Any]) -> None:
        self.known: dict[str, str] = {}
        calls = []
        for conversation in conversations:
            messages = conversation.get("MessageList") if isinstance(conversation, dict) else None
            for m in messages if isinstance(messages, list) else ():
                if isinstance(m, dict) and string(m.get("displayName")) and string(m.get("from")):
                    self.known.setdefault(m["from"], m["displayName"])
                elif isinstance(m, dict) and m.get("messagetype") == "Event/Call":
                    calls.append(string(m.get("content")))
        for content in calls:  # a call's participant list names people by their ids (without "8:")
            for part in _PART.finditer(content):
                self.known.setdefault(f"8:{part['id']}", html.unescape(part["name"]))
        for conversation in conversations:  # a one-to-one chat is named after the other side
            if not isinstance(conversation, dict):
                continue
            other, title = string(conversation.get("id")), string(conversation.get("displayName"))
            if other and title and not other.startswith("19:"):
                self.known.setdefault(other, title)

    def of(self, m: dict[str, Any]) -> str:
        sender = string(m.get("from"))
        name = string(m.get("displayName")) or self.known.get(sender)
        if name:
            return name
        return sender.split(":", 1)[1] if regex.match(r"\d+:.", sender) else (sender or "unknown")


def _content(mtype: str, content: str) -> tuple[str, str, dict[str, Any]]:
    """(kind, text, extra) of one message by its type."""
    if mtype == "Event/Call":
        return "system", _call(content), {"event": "call"}
    if mtype.startswith(_ACTIVITY):
        return "system", _activity(mtype, content), {"event": mtype[len(_ACTIVITY):]}
    if mtype == "Text":
        return "message", content, {}
    text, extra = markup_text(content)
    if mtype in MEDIA_TYPES:
        name = _ORIGINAL_NAME.search(content)
        uri = _URI_TYPE.search(content)
        label = (uri["type"].lower() if uri and uri["type"] else MEDIA_TYPES[mtype])
        marker = f"[{label}: {html.unescape(name['name'])}]" if name and name["name"] else f"[{label}]"
        return "media", markers(marker, [text.strip()]), extra
    return ("system" if mtype in SYSTEM_TYPES else "message"), text, extra


def _turn(m: Any, pointer: str, names: _Names, times: TimeLog, drift: Drift) -> Turn:
    if not isinstance(m, dict):
        return odd_entry(m, pointer)
    drift.unknown_keys(m, MESSAGE_KEYS, pointer)
    mtype = string(m.get("messagetype")) or "RichText"
    known = mtype in TEXT_TYPES or mtype in MEDIA_TYPES or mtype in SYSTEM_TYPES or mtype.startswith(_ACTIVITY)
    if not known:
        drift.note("messageType", mtype, pointer)
    raw = raw_text(m.get("originalarrivaltime"))
    when = times.read(iso_time(raw) if raw else None, raw, pointer)
    kind, text, extra = _content(mtype, string(m.get("content")))
    props = m.get("properties") if isinstance(m.get("properties"), dict) else {}
    sender = string(m.get("from"))
    extra.update({"messageId": m.get("id"), "from": sender or None, "type": mtype,
                  "deleted": bool(props.get("deletetime")) and not text,
                  "edited": extra.get("edited") or bool(props.get("edittime")),
                  "bot": sender.startswith("28:")})
    if kind == "system":
        extra["actor"] = names.of(m) if sender else None
        return Turn("System", "system", text, when, raw, None, kind, pointer=pointer, extra=compact(extra))
    role = "other" if extra["bot"] else "user"
    return Turn(names.of(m), role, text, when, raw, None, kind, pointer=pointer, extra=compact(extra))


def _stamp(m: Any) -> int | None:
    raw = raw_text(m.get("originalarrivaltime")) if isinstance(m, dict) else None
    when = iso_time(raw) if raw else None
    return int(when.timestamp()) if when is not None and when.tzinfo is not None else None


@register
class Skype(Grammar):
    name = "skype"
    detect_needs = ('"originalarrivaltime"', '"userId"')  # a message record's key, or an export's user
    version = "1"
    structured = True
    description = "Skype data export messages.json (one session per conversation)"
    example = ('{"userId": "8:live:ann", "exportDate": "2025-04-20T09:12:44Z", "conversations": [{"id": '
               '"8:live:bo", "displayName": "Bo", "MessageList": [{"id": "1", "originalarrivaltime": '
               '"2025-04-19T18:00:00.000Z", "messagetype": "RichText", "content": "hi", "from": "8:live:ann"}]}]}')

    def detect(self, sample: str, name: str) -> float:
        share = explained_share(sample, _skype_record)
        if share is None:  # the first conversations of an export may hold no message within the sample
            return 0.9 if _EXPORT.search(sample) and '"conversations"' in sample and '"userId"' in sample else 0.0
        return share

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        conversations = data.get("conversations") if isinstance(data, dict) else None
        if not isinstance(conversations, list):
            raise ParseError(Reason.PARSE_ERROR, "expected an object with a conversations list", path=source.name,
                             grammar=self.name)
        names = _Names(conversations)
        for i, conversation in enumerate(conversations):
            if isinstance(conversation, dict):
                yield self._conversation(conversation, f"/conversations/{i}", source.name, names)

    def _conversation(self, conversation: dict[str, Any], pointer: str, path: str, names: _Names) -> ParsedSession:
        messages = conversation.get("MessageList")
        if not isinstance(messages, list):
            raise ParseError(Reason.PARSE_ERROR, f"conversation at {pointer} has no MessageList", path=path,
                             grammar=self.name)
        cid = string(conversation.get("id")) or None
        session = ParsedSession(cid, "source:id" if cid else "none", [], raw=conversation, pointer=pointer)
        session.title = string(conversation.get("displayName")) or None
        order, newest_first = chronological([_stamp(m) for m in messages])
        if len(messages) > 1:
            session.assumptions.append(
                "messages emitted oldest first by originalarrivaltime; equal times keep the "
                + ("reverse of the list's order (it runs newest first)" if newest_first else "list's order"))
        times, drift = TimeLog(), Drift()
        for i in order:
            session.turns.append(_turn(messages[i], f"{pointer}/MessageList/{i}", names, times, drift))
        note_odd(session, messages)
        times.flush(session)
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        return session

    def count_turns(self, raw: Any) -> int:
        messages = raw.get("MessageList") if isinstance(raw, dict) else None
        return len(messages) if isinstance(messages, list) else 0
