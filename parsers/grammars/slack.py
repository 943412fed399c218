"""Slack workspace exports: a folder per channel with one JSON list of messages per day (``general/2020-01-01.json``).

Dialects: public channel folders, private channel / DM / group DM folders of Business+ exports
(named by the conversation's name or id), messages from people, bots (``bot_message``, or a
``bot_id`` without a user), apps posting as bot users, and events (subtypes).

Decisions:
- Each day file is one session, id ``<channel>-<date>`` from its path (id source "file-name"),
  title ``#<channel> <date>``; messages in file order. Thread replies stay where the day file has
  them (Slack files them under the day they were posted), with ``threadTs`` in ``extra``.
- Speaker: the user id resolved through the export's ``users.json`` (display name, else real name,
  else user name), handed over as a companion file by the ingest; without it, the message's own
  ``user_profile`` (display name, else real name); else the id as it is (noted in assumptions).
- Subtypes that are events (channel_join, channel_leave, channel_topic, channel_purpose,
  channel_name, pinned_item, bot_add, tombstone...) are System turns with the user as ``actor``.
  ``bot_message`` and other bot posts belong to the bot (username, else bot profile name, else
  bot id) with role "other": a Slack bot is not a language model. ``me_message`` is kind "action";
  a post with files and no text is kind "media".
- ``ts`` ("1580000000.000200") is an exact instant: aware UTC. ``edited.ts`` is kept as ``editedRaw``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

import orjson
import regex

from models.errors import ParseError, Reason
from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.drift import Drift
from parsers.grammars._chatjson import (
    TOP,
    Record,
    TimeLog,
    compact,
    explained_share,
    markers,
    note_odd,
    odd_entry,
    raw_text,
    string,
)
from parsers.jsonload import load_json
from parsers.registry import register
from parsers.timeparse import from_epoch

_LIST_OF_OBJECTS = regex.compile(r"\A\s*\[\s*\{")
_DAY_KEYS = frozenset({"type", "user", "bot_id", "subtype"})
COMPANIONS = ("users.json", "channels.json", "groups.json", "dms.json", "mpims.json", "integration_logs.json")
EVENT_KINDS = {
    "channel_join": "join", "group_join": "join", "channel_leave": "part", "group_leave": "part",
    "app_conversation_leave": "part", "channel_topic": "topic", "group_topic": "topic",
    "channel_purpose": "topic", "group_purpose": "topic", "channel_name": "topic", "group_name": "topic",
    **dict.fromkeys((
        "channel_archive", "channel_unarchive", "group_archive", "group_unarchive", "channel_convert_to_private",
        "channel_convert_to_public", "channel_posting_permissions", "pinned_item", "unpinned_item", "bot_add",
        "bot_remove", "bot_enable", "bot_disable", "reminder_add", "reminder_delete", "sh_room_created",
        "huddle_thread", "tombstone", "joiner_notification", "channel_canvas_updated",
    ), "system"),
}


@lru_cache(maxsize=4)
def user_directory(users_json: str | None) -> tuple[dict[str, str], frozenset[str]]:
    """User id -> display name, and the ids of bot users, from users.json (cached: one per export)."""
    if not users_json:
        return {}, frozenset()
    try:
        users = orjson.loads(users_json)
    except orjson.JSONDecodeError:
        return {}, frozenset()
    if isinstance(users, dict):  # a saved users.list page: {"ok": true, "members": [...]}
        users = users.get("members")
    names: dict[str, str] = {}
    bots = set()
    for u in users if isinstance(users, list) else []:
        if isinstance(u, dict) and isinstance(u.get("id"), str):
            profile = u["profile"] if isinstance(u.get("profile"), dict) else {}
            names[u["id"]] = str(profile.get("display_name") or profile.get("real_name") or u.get("real_name")
                                 or u.get("name") or u["id"])
            if u.get("is_bot"):
                bots.add(u["id"])
    return names, frozenset(bots)


@lru_cache(maxsize=4)
def channel_directory(channels_json: str | None) -> dict[str, dict[str, Any]]:
    """Channel name -> {id, topic, purpose} from channels.json (or groups/mpims/dms.json)."""
    if not channels_json:
        return {}
    try:
        channels = orjson.loads(channels_json)
    except orjson.JSONDecodeError:
        return {}
    out = {}
    for c in channels if isinstance(channels, list) else []:
        if isinstance(c, dict) and c.get("id"):
            facts = {"channelId": c["id"]}
            for key in ("topic", "purpose"):
                if isinstance(c.get(key), dict) and c[key].get("value"):
                    facts[key] = c[key]["value"]
            out[str(c.get("name") or c["id"])] = facts
            out.setdefault(str(c["id"]), facts)
    return out


MESSAGE_KEYS = frozenset({
    "type", "subtype", "user", "text", "ts", "thread_ts", "parent_user_id", "reply_count", "reply_users_count",
    "reply_users", "latest_reply", "replies", "subscribed", "last_read", "is_locked", "reactions", "edited", "files",
    "attachments", "blocks", "user_profile", "bot_id", "bot_profile", "username", "icons", "client_msg_id", "team",
    "user_team", "source_team", "app_id", "upload", "display_as_bot", "is_starred", "pinned_to", "pinned_info",
    "hidden", "inviter", "topic", "purpose", "name", "old_name", "root", "message", "previous_message", "channel",
    "event_ts", "x_files", "permalink", "is_thread_broadcast", "deleted_ts", "bot_link", "item_type", "item",
    "comment", "no_notifications", "metadata", "room", "channel_type", "is_intro", "unfurl_links", "unfurl_media",
    "parent_ts", "reply_broadcast", "has_more", "language", "assistant_app_thread", "saved",
})
OTHER_SUBTYPES = frozenset({
    "bot_message", "me_message", "thread_broadcast", "file_share", "file_comment", "file_mention", "message_changed",
    "message_deleted", "message_replied", "slackbot_response", "reply_broadcast", "ekm_access_denied",
    "assistant_app_thread",
})


class Directory:
    """What one session's turns are read with: the export's users, and the tallies of what was met."""

    __slots__ = ("bots", "drift", "names", "times", "unresolved")

    def __init__(self, users_json: str | None) -> None:
        self.names, self.bots = user_directory(users_json)
        self.times = TimeLog()
        self.unresolved: set[str] = set()
        self.drift = Drift()

    def finish(self, session: ParsedSession) -> None:
        self.times.flush(session)
        if self.unresolved:
            why = "not in users.json" if self.names else "no users.json beside the export"
            session.assumptions.append(f"{len(self.unresolved)} user ids kept as they are ({why}): "
                                       + ", ".join(sorted(self.unresolved)[:5]))
        if self.drift:
            session.meta["formatDrift"] = self.drift.as_meta()

    def person(self, m: dict[str, Any], uid: str | None) -> str:
        profile = m["user_profile"] if isinstance(m.get("user_profile"), dict) else {}
        person = self.names.get(uid) if uid else None
        if person is None:
            person = profile.get("display_name") or profile.get("real_name")
            if not person and uid == "USLACKBOT":  # Slack's own bot is in no users.json
                person = "Slackbot"
        return str(person or uid or "unknown")


def _file_lines(m: dict[str, Any]) -> list[str]:
    lines = []
    for f in m.get("files") if isinstance(m.get("files"), list) else []:
        if isinstance(f, dict):
            # A file past the plan's limit or deleted has only an id and a mode ("hidden_by_limit", "tombstone").
            label = f.get("name") or f.get("title") or f"{f.get('id') or '?'} ({f.get('mode') or 'no name'})"
            lines.append(f"[file: {label}]")
    return lines


def _attachment_lines(m: dict[str, Any]) -> list[str]:
    return [f"[attachment: {a.get('fallback') or a.get('title') or a.get('text') or '?'}]"
            for a in (m.get("attachments") if isinstance(m.get("attachments"), list) else []) if isinstance(a, dict)]


def message_turn(m: Any, pointer: str, d: Directory) -> Turn:
    """One Slack message object (a day file's or a Web API page's) as its turn."""
    if not isinstance(m, dict):
        return odd_entry(m, pointer)
    subtype = m.get("subtype")
    d.drift.unknown_keys(m, MESSAGE_KEYS, pointer)
    if subtype is not None and subtype not in EVENT_KINDS and subtype not in OTHER_SUBTYPES:
        d.drift.note("subtype", str(subtype), pointer)
    if m.get("type") not in (None, "message"):
        d.drift.note("messageType", str(m.get("type")), pointer)
    # message_changed / message_deleted carry the message they are about in "message" / "previous_message".
    inner = m["message"] if isinstance(m.get("message"), dict) else {}
    uid = m.get("user") if isinstance(m.get("user"), str) else None
    if uid is None and isinstance(inner.get("user"), str):
        uid = inner["user"]
    person = d.person(m if m.get("user_profile") or not inner else inner, uid)
    ts = raw_text(m.get("ts"))
    when = d.times.read(from_epoch(ts), ts, pointer)
    edited = m["edited"] if isinstance(m.get("edited"), dict) else {}
    extra = {
        "ts": ts, "subtype": subtype, "userId": uid, "botId": m.get("bot_id"), "threadTs": m.get("thread_ts"),
        "parentUserId": m.get("parent_user_id"), "replyCount": m.get("reply_count"), "reactions": m.get("reactions"),
        "editedRaw": raw_text(edited.get("ts")),
    }
    text = string(m.get("text")) or string(inner.get("text"))
    lines = _file_lines(m)
    has_files = bool(lines)
    if not text:
        lines += _attachment_lines(m)
    content = markers(text, lines)
    if subtype in EVENT_KINDS:
        if uid and person == uid:
            d.unresolved.add(uid)
        extra["actor"] = person
        return Turn("System", "system", content or str(subtype), when, ts, None, EVENT_KINDS[subtype],
                    pointer=pointer, extra=compact(extra))
    if subtype in ("message_changed", "message_deleted"):
        if isinstance(inner.get("edited"), dict):
            extra["editedRaw"] = raw_text(inner["edited"].get("ts"))
        extra["actor"] = person
        return Turn("System", "system", content or str(subtype), when, ts, None, "system", pointer=pointer,
                    extra=compact(extra))
    if subtype == "bot_message" or (m.get("bot_id") and not uid) or (uid in d.bots):
        bot_profile = m["bot_profile"] if isinstance(m.get("bot_profile"), dict) else {}
        bot = m.get("username") or bot_profile.get("name") or uid or m.get("bot_id") or "bot"
        if uid and bot == uid:
            bot = person
            if person == uid:
                d.unresolved.add(uid)
        return Turn(str(bot), "other", content, when, ts, None, "media" if has_files and not text else "message",
                    pointer=pointer, extra=compact(extra))
    if uid and person == uid:
        d.unresolved.add(uid)
    if subtype == "slackbot_response" or uid == "USLACKBOT":
        return Turn(person, "other", content, when, ts, None, "message", pointer=pointer, extra=compact(extra))
    kind = "action" if subtype == "me_message" else ("media" if has_files and not text else "message")
    return Turn(person, "user", content, when, ts, None, kind, pointer=pointer, extra=compact(extra))


def channel_facts(companions: dict[str, str], channel: str) -> dict[str, Any]:
    for companion in ("channels.json", "groups.json", "mpims.json", "dms.json"):
        facts = channel_directory(companions.get(companion)).get(channel)
        if facts:
            return facts
    return {}


def _day_record(record: Record) -> bool:
    # every message has a ts and a type; the ts may be damaged ("soon"), the message is still one
    return record.container == TOP and "ts" in record.keys and not _DAY_KEYS.isdisjoint(record.keys)


@register
class Slack(Grammar):
    name = "slack"
    version = "3"
    structured = True
    companion_names = COMPANIONS
    description = "Slack export day file (<channel>/<YYYY-MM-DD>.json), user ids resolved via users.json"
    example = '[{"type": "message", "user": "U024BE7LH", "text": "Hello", "ts": "1580000000.000200"}]'

    def detect(self, sample: str, name: str) -> float:
        if PurePosixPath(name).name in COMPANIONS or not _LIST_OF_OBJECTS.match(sample):
            return 0.0
        return explained_share(sample, _day_record) or 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        yield self._read(source)

    def _read(self, source: SourceText) -> ParsedSession:
        data = load_json(source.text, source.name, self.name)
        if not isinstance(data, list):
            raise ParseError(Reason.PARSE_ERROR, "expected a JSON list of messages", path=source.name,
                             grammar=self.name)
        path = PurePosixPath(source.name)
        channel, day = path.parent.name or "channel", path.stem
        session = ParsedSession(f"{channel}-{day}", "file-name", [], raw=data, pointer="")
        session.title = f"#{channel} {day}"
        session.meta["channel"] = channel
        session.meta.update(channel_facts(source.companions, channel))
        d = Directory(source.companions.get("users.json"))
        session.turns.extend(message_turn(m, f"/{i}", d) for i, m in enumerate(data))
        note_odd(session, data)
        d.finish(session)
        return session

    def count_turns(self, raw: Any) -> int:
        return len(raw) if isinstance(raw, list) else 0
