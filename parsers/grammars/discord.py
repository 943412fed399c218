"""DiscordChatExporter JSON exports (``{"guild", "channel", "dateRange", "messages": [...]}``): one session.

Dialects: guild text channels, threads and forum posts, direct messages and group DMs (guild
"Direct Messages"), old and new exporter versions (with or without ``callEndedTimestamp``,
``stickers``, ``inlineEmojis``, ``interaction``).

Decisions:
- Messages of type ``Default``, ``Reply``, ``ChatInputCommand`` and ``ContextMenuCommand`` (a bot's
  reply to a slash command) are their author's turns (role "user"; a bot author, ``isBot``, gets role
  "other": a Discord bot is not a language model). A type DiscordChatExporter wrote as its number
  (``"20"``) is the type that number names (``TYPE_NAMES``). Every other type
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
- A partitioned export (``--partition``) writes a channel as ``<name>.json``, ``<name> [part 2].json``,
  ``<name> [part 3].json``... (the first part keeps the plain name): the ingest groups them
  (``group_files``, keyed by the plain name, so the session keeps the key of an unpartitioned export)
  and they are read in part order as one session per channel id in them (parts named alike that hold
  another channel are a session of their own, with a warning). Pointers are
  ``/<part file name>/messages/<i>`` (the raw value is ``{part file name: export}``); ``meta.files``
  lists the parts. Parts do not overlap; a message id met again in a later part is kept once: the
  repeat is a declared ``duplicate`` region and a warning names the ids. A part that is not a
  readable export makes the session partial, naming it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

import regex

from models.errors import ParseError, Reason
from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
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
from parsers.jsonload import load_json, pointer_part
from parsers.registry import register

_GUILD = regex.compile(r'"guild"\s*:\s*\{')
_CHANNEL = regex.compile(r'"channel"\s*:\s*\{')
_MESSAGES = regex.compile(r'"messages"\s*:\s*\[')
MESSAGE_TYPES = frozenset({"Default", "Reply", "ChatInputCommand", "ContextMenuCommand"})
"""Types whose message is its author's own text: a slash or context-menu command's message is the reply
the bot wrote (DiscordChatExporter writes its content, as for Default; only types 1-18 are notices)."""
TYPE_NAMES = {
    "0": "Default", "1": "RecipientAdd", "2": "RecipientRemove", "3": "Call", "4": "ChannelNameChange",
    "5": "ChannelIconChange", "6": "ChannelPinnedMessage", "7": "GuildMemberJoin", "8": "GuildBoost",
    "9": "GuildBoostTier1", "10": "GuildBoostTier2", "11": "GuildBoostTier3", "12": "ChannelFollowAdd",
    "14": "GuildDiscoveryDisqualified", "15": "GuildDiscoveryRequalified", "18": "ThreadCreated", "19": "Reply",
    "20": "ChatInputCommand", "21": "ThreadStarterMessage", "23": "ContextMenuCommand",
    "24": "AutoModerationAction", "25": "RoleSubscriptionPurchase", "27": "StageStart", "28": "StageEnd",
    "29": "StageSpeaker", "31": "StageTopic", "32": "GuildApplicationPremiumSubscription", "46": "PollResult",
}
"""Discord's message type numbers: DiscordChatExporter writes a type it has no name for (above 19) as
its number (``"type": "20"``); the number is read as the type it names."""
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
    detect_needs = ('"guild"',)  # its guild object
    version = "2"
    structured = True
    group_files = r".+(?P<part> \[part \d+\])\.json"
    description = "DiscordChatExporter JSON export (one channel, thread or DM; a partitioned export's parts as one)"
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
        if source.parts:
            yield from self._partitioned(source)
            return
        data = self._load(source)
        if data is None:
            raise ParseError(Reason.PARSE_ERROR, "expected an object with a messages list", path=source.name,
                             grammar=self.name)
        session = _session(data, data)
        _count_warning(session, data, "the export")
        self._read(session, [("", data)])
        yield session

    def _load(self, part: SourceText) -> dict[str, Any] | None:
        """One export file; None when it is not an object with a messages list (a part that is
        unreadable or broken is a gap in its channel, a file alone an error)."""
        if not part.text:
            return None
        data = load_json(part.text, part.name, self.name)
        return data if isinstance(data, dict) and isinstance(data.get("messages"), list) else None

    def _partitioned(self, source: SourceText) -> Iterator[ParsedSession]:
        """The parts of a partitioned export, in part order: one session per channel id in them."""
        parts = sorted(source.parts, key=lambda p: (_part_number(self, p.name), p.name))
        channels: dict[str, list[tuple[str, SourceText, dict[str, Any]]]] = {}
        gaps = []
        for part in parts:
            name = PurePosixPath(part.name).name
            try:
                data = self._load(part)
            except ParseError:
                data = None
            if data is None:
                gaps.append(name)
                continue
            channel = data["channel"] if isinstance(data.get("channel"), dict) else {}
            channels.setdefault(str(channel.get("id") or ""), []).append((name, part, data))
        if not channels:
            raise ParseError(Reason.PARSE_ERROR, f"none of the {len(parts)} parts is a readable export: "
                             + ", ".join(gaps[:5]), path=source.name, grammar=self.name)
        for members in channels.values():
            session = self._channel(members)
            if gaps:
                session.coverage_reason = (f"{len(gaps)} parts of the export are not readable exports (their "
                                           "messages may belong to this channel): " + ", ".join(gaps[:5]))
            if len(channels) > 1:
                session.warnings.append(f"the parts named {PurePosixPath(source.name).name!r} hold {len(channels)} "
                                        "channels: one session each")
            yield session

    def _channel(self, members: list[tuple[str, SourceText, dict[str, Any]]]) -> ParsedSession:
        session = _session(members[0][2], {name: data for name, _, data in members})
        session.meta["files"] = [{"name": name, "sha256": p.sha256, "sizeBytes": p.size} for name, p, _ in members]
        declared = [data.get("messageCount") for _, _, data in members]
        if all(isinstance(n, int) for n in declared):  # each part counts its own messages
            session.meta["declaredMessageCount"] = sum(declared)
        for name, _, data in members:
            _count_warning(session, data, name)
        self._read(session, [(f"/{pointer_part(name)}", data) for name, _, data in members])
        return session

    def _read(self, session: ParsedSession, files: list[tuple[str, dict[str, Any]]]) -> None:
        """The turns of one channel's export files (``prefix`` of each file's pointers, its export). A
        message id met again is kept once: the repeat is a declared duplicate, named in a warning."""
        times, drift = TimeLog(), Drift()
        first: dict[Any, str] = {}
        repeated = []
        for prefix, data in files:
            for i, m in enumerate(data["messages"]):
                pointer = f"{prefix}/messages/{i}"
                mid = _message_id(m)
                if mid is not None and mid in first:
                    session.regions.append(Region(RegionKind.DUPLICATE, f"repeats message {mid} at {first[mid]}",
                                                  pointer=pointer))
                    repeated.append(str(mid))
                    continue
                if mid is not None:
                    first[mid] = pointer
                session.turns.append(self._turn(m, pointer, times, drift))
            note_odd(session, data["messages"])
        if repeated:
            session.warnings.append(f"{len(repeated)} messages appear twice in the export's parts and are kept once "
                                    f"(the repeats are declared duplicates): ids {', '.join(repeated[:5])}")
        times.flush(session)
        if drift:
            session.meta["formatDrift"] = drift.as_meta()

    @staticmethod
    def _turn(m: Any, pointer: str, times: TimeLog, drift: Drift) -> Turn:
        if not isinstance(m, dict):
            return odd_entry(m, pointer)
        drift.unknown_keys(m, MESSAGE_KEYS, pointer)
        named = TYPE_NAMES.get(str(m.get("type")), m.get("type"))
        if named not in MESSAGE_TYPES and named not in EVENT_TYPES:
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
        if TYPE_NAMES.get(str(mtype), mtype) in MESSAGE_TYPES or mtype is None:  # very old exports carry no type
            kind = "media" if lines and not text else "message"
            role = "other" if author.get("isBot") else "user"
            return Turn(display, role, content, when, raw, None, kind, pointer=pointer, extra=extra or None)
        extra["actor"] = display
        return Turn("System", "system", content or str(mtype or "event"), when, raw, None,
                    _EVENT_KINDS.get(TYPE_NAMES.get(str(mtype), str(mtype)), "system"), pointer=pointer, extra=extra)

    def count_turns(self, raw: Any) -> int:
        if not isinstance(raw, dict):
            return 0
        files = [raw] if "messages" in raw else list(raw.values())  # one export, or {part file name: export}
        ids: set[Any] = set()
        count = 0
        for data in files:
            messages = data.get("messages") if isinstance(data, dict) else None
            for m in messages if isinstance(messages, list) else []:
                mid = _message_id(m)
                count += mid is None or mid not in ids
                ids.add(mid)
        return count


def _message_id(m: Any) -> str | int | None:
    mid = m.get("id") if isinstance(m, dict) else None
    return mid if isinstance(mid, str | int) and not isinstance(mid, bool) and mid != "" else None


def _part_number(grammar: Grammar, name: str) -> int:
    found = grammar.group_of(PurePosixPath(name).name)
    return found[1] if found else 0  # the first part keeps the plain name


def _session(data: dict[str, Any], raw: Any) -> ParsedSession:
    """A channel's session from the frame of its (first) export file."""
    channel = data["channel"] if isinstance(data.get("channel"), dict) else {}
    guild = data["guild"] if isinstance(data.get("guild"), dict) else {}
    cid = channel.get("id")
    session = ParsedSession(None if cid in (None, "") else str(cid),
                            "none" if cid in (None, "") else "source:channel.id", [], raw=raw, pointer="")
    names = [str(x) for x in (guild.get("name"), channel.get("name")) if x]
    session.title = " / ".join(names) or None
    session.meta.update(compact({"guildId": guild.get("id"), "channelType": channel.get("type"),
                                 "category": channel.get("category"), "topic": channel.get("topic"),
                                 "declaredMessageCount": data.get("messageCount")}) or {})
    return session


def _count_warning(session: ParsedSession, data: dict[str, Any], what: str) -> None:
    declared, held = data.get("messageCount"), len(data["messages"])
    if isinstance(declared, int) and declared != held:
        session.warnings.append(f"messageCount says {declared} but {what} holds {held} messages")
