"""DiscordChatExporter JSON exports (``{"guild", "channel", "dateRange", "messages": [...]}``): one session.

Dialects: guild text channels, threads and forum posts, direct messages and group DMs (guild
"Direct Messages"), old and new exporter versions (with or without ``callEndedTimestamp``,
``stickers``, ``inlineEmojis``, ``interaction``).

Decisions:
- Messages of type ``Default`` and ``Reply`` are their author's turns (role "user"; a bot author,
  ``isBot``, gets role "other": a Discord bot is not a language model). Every other type
  (ChannelNameChange, ChannelIconChange, RecipientAdd, Call, ThreadCreated, ChannelPinnedMessage,
  GuildMemberJoin...) is a System turn with the author as ``actor``; its content is the exporter's
  text ("Pinned a message.") or, when empty, the type.
- An author's display name is their nickname, else their name ("nickname beats name").
- Attachments and stickers add ``[attachment: name]`` / ``[sticker: name]`` marker lines; embeds
  add a marker only when the message has no text of its own (a bot's embed-only post), because a
  link preview repeats a URL that is already in the text. Attachments, embeds, stickers, the
  reply reference, reactions (emoji and count) and mentions (names) are kept in ``extra``;
  ``timestampEdited`` and ``callEndedTimestamp`` are kept raw as ``editedRaw`` / ``callEndedRaw``.
- session_id = channel id; title = ``<guild name> / <channel name>``. A ``messageCount`` that
  differs from the number of messages (a cut-short export) is a warning.
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

_GUILD = regex.compile(r'"guild"\s*:\s*\{')
_CHANNEL = regex.compile(r'"channel"\s*:\s*\{')
_MESSAGES = regex.compile(r'"messages"\s*:\s*\[')
MESSAGE_TYPES = frozenset({"Default", "Reply"})
EVENT_TYPES = frozenset({
    "RecipientAdd", "RecipientRemove", "Call", "ChannelNameChange", "ChannelIconChange", "ChannelPinnedMessage",
    "GuildMemberJoin", "ThreadCreated", "ThreadStarterMessage", "GuildBoost", "GuildBoostTier1", "GuildBoostTier2",
    "GuildBoostTier3", "ChannelFollowAdd", "GuildDiscoveryDisqualified", "GuildDiscoveryRequalified",
    "ChatInputCommand", "ContextMenuCommand", "AutoModerationAction", "RoleSubscriptionPurchase",
    "StageStart", "StageEnd", "StageSpeaker", "StageTopic", "GuildApplicationPremiumSubscription", "PollResult",
})
MESSAGE_KEYS = frozenset({
    "id", "type", "timestamp", "timestampEdited", "callEndedTimestamp", "isPinned", "content", "author",
    "attachments", "embeds", "stickers", "reactions", "mentions", "reference", "interaction", "inlineEmojis",
    "roles", "thread", "poll", "components",
})
_EVENT_KINDS = {"RecipientAdd": "join", "GuildMemberJoin": "join", "RecipientRemove": "part",
                "ChannelNameChange": "topic"}


def _names(items: Any, *keys: str) -> list[str]:
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            out.append(next((str(item[k]) for k in keys if item.get(k)), "?"))
    return out


def _discord_record(record: Record) -> bool:
    return record.container == "messages" and "author" in record.keys and "timestamp" in record.keys


@register
class Discord(Grammar):
    name = "discord"
    version = "2"
    structured = True
    description = "DiscordChatExporter JSON export (one channel, thread or DM per file)"
    example = ('{"guild": {"id": "0", "name": "Direct Messages"}, "channel": {"id": "1064990764406419508", '
               '"name": "a group chat"}, "messages": [{"id": "1", "type": "Default", "timestamp": '
               '"2023-01-17T19:33:19.087+00:00", "content": "hi", "author": {"name": "not a plant", '
               '"nickname": "theplant", "isBot": false}}]}')

    def detect(self, sample: str, name: str) -> float:
        if not (_GUILD.search(sample) and _CHANNEL.search(sample)):
            return 0.0
        share = explained_share(sample, _discord_record)
        if share is None:  # an export of an empty channel: nothing to count, the frame says what it is
            return 0.6 if _MESSAGES.search(sample) else 0.0
        return share

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        yield self._read(source)

    def _read(self, source: SourceText) -> ParsedSession:
        data = load_json(source.text, source.name, self.name)
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise ParseError(Reason.PARSE_ERROR, "expected an object with a messages list", path=source.name,
                             grammar=self.name)
        messages = data["messages"]
        channel = data["channel"] if isinstance(data.get("channel"), dict) else {}
        guild = data["guild"] if isinstance(data.get("guild"), dict) else {}
        cid = channel.get("id")
        session = ParsedSession(None if cid in (None, "") else str(cid),
                                "none" if cid in (None, "") else "source:channel.id", [], raw=data, pointer="")
        names = [str(x) for x in (guild.get("name"), channel.get("name")) if x]
        session.title = " / ".join(names) or None
        session.meta.update(compact({"guildId": guild.get("id"), "channelType": channel.get("type"),
                                     "category": channel.get("category"), "topic": channel.get("topic"),
                                     "declaredMessageCount": data.get("messageCount")}) or {})
        declared = data.get("messageCount")
        if isinstance(declared, int) and declared != len(messages):
            session.warnings.append(f"messageCount says {declared} but the export holds {len(messages)} messages")
        times, drift = TimeLog(), Drift()
        for i, m in enumerate(messages):
            session.turns.append(self._turn(m, f"/messages/{i}", times, drift))
        note_odd(session, messages)
        times.flush(session)
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        return session

    @staticmethod
    def _turn(m: Any, pointer: str, times: TimeLog, drift: Drift) -> Turn:
        if not isinstance(m, dict):
            return odd_entry(m, pointer)
        drift.unknown_keys(m, MESSAGE_KEYS, pointer)
        if m.get("type") not in MESSAGE_TYPES and m.get("type") not in EVENT_TYPES:
            drift.note("messageType", str(m.get("type")), pointer)
        get = m.get
        author = get("author")
        if not isinstance(author, dict):
            author = {}
        display = str(author.get("nickname") or author.get("name") or author.get("id") or "unknown")
        raw = raw_text(get("timestamp"))
        when = times.read(iso_time(raw) if raw else None, raw, pointer)
        mtype = get("type")
        # Most messages carry empty lists for everything below: test before building anything.
        extra: dict[str, Any] = {"messageId": get("id"), "type": mtype, "authorId": author.get("id")}
        if author.get("isBot"):
            extra["bot"] = True
        if get("isPinned"):
            extra["pinned"] = True
        for key, out in (("timestampEdited", "editedRaw"), ("callEndedTimestamp", "callEndedRaw")):
            if get(key):
                extra[out] = raw_text(m[key])
        reference = get("reference")
        if isinstance(reference, dict) and reference.get("messageId"):
            extra["replyTo"] = reference["messageId"]
        for key in ("attachments", "embeds", "stickers", "interaction"):
            if get(key):
                extra[key] = m[key]
        if get("reactions") and isinstance(m["reactions"], list):
            # Reactions and mentions carry avatar URLs and user lists; which and how many is what matters.
            extra["reactions"] = [{"emoji": (r.get("emoji") or {}).get("name"), "count": r.get("count")}
                                  for r in m["reactions"] if isinstance(r, dict)]
        if get("mentions"):
            extra["mentions"] = _names(m["mentions"], "nickname", "name", "id")
        text = string(get("content"))
        lines = []
        if get("attachments"):
            lines += [f"[attachment: {n}]" for n in _names(m["attachments"], "fileName", "url")]
        if get("stickers"):
            lines += [f"[sticker: {n}]" for n in _names(m["stickers"], "name", "id")]
        if not text and not lines and get("embeds"):
            lines += [f"[embed: {n}]" for n in _names(m["embeds"], "title", "description", "url")]
        content = markers(text, lines) if lines else text
        extra = {k: v for k, v in extra.items() if v is not None}
        if mtype in MESSAGE_TYPES or mtype is None:  # very old exports carry no type
            kind = "media" if lines and not text else "message"
            role = "other" if author.get("isBot") else "user"
            return Turn(display, role, content, when, raw, None, kind, pointer=pointer, extra=extra or None)
        extra["actor"] = display
        return Turn("System", "system", content or str(mtype or "event"), when, raw, None,
                    _EVENT_KINDS.get(str(mtype), "system"), pointer=pointer, extra=extra)

    def count_turns(self, raw: Any) -> int:
        messages = raw.get("messages") if isinstance(raw, dict) else None
        return len(messages) if isinstance(messages, list) else 0
