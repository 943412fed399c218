"""Slack workspace exports: a folder per channel with one JSON list of messages per day (``general/2020-01-01.json``).

Dialects: public channel folders, private channel / DM / group DM folders of Business+ exports
(named by the conversation's name or id), messages from people, bots (``bot_message``, or a
``bot_id`` without a user), apps posting as bot users, and events (subtypes).

Decisions:
- A channel or DM is one session over all its day files: the ingest groups a folder's
  ``YYYY-MM-DD.json`` files (``group_files``) and hands them over together (``SourceText.parts``);
  a day file given alone is that channel's session with the one day. session_id = the channel's id
  from ``channels.json`` (or groups/mpims/dms.json) when it is there (id source
  "source:channels.json"), else the folder's name (id source "file-name"); title ``#<channel>``;
  ``meta.days`` lists the day files.
- Order: chronological by ``ts`` with every thread next to its parent: top-level messages by ``ts``,
  each followed by its replies by ``ts``, whichever day file holds them (Slack files a reply under the
  day it was posted); ``threadTs`` in ``extra`` links a reply to its parent's ``ts``. Ties and
  unreadable ``ts`` values keep their file order. Pointers are ``/<i>`` in a lone day file and
  ``/<day file name>/<i>`` in a group, whose raw value is ``{day file name: messages}``.
- A day file of a group that is not a JSON list of messages (unreadable, broken JSON) is a coverage
  gap: the session is partial and says which file.
- Speaker: the user id resolved through the export's ``users.json`` (display name, else real name,
  else user name), handed over as a companion file by the ingest; without it, the message's own
  ``user_profile`` (display name, else real name); else the id as it is (noted in assumptions).
- Subtypes that are events (channel_join, channel_leave, channel_topic, channel_purpose,
  channel_name, pinned_item, bot_add, tombstone...) are System turns with the user as ``actor``.
  ``bot_message`` and other bot posts belong to the bot (username, else bot profile name, else
  bot id) with role "other": a Slack bot is not a language model. ``me_message`` is kind "action";
  a post with files and no text is kind "media".
- A message whose ``text`` is empty but whose ``rich_text`` blocks hold text is read from the blocks,
  written as Slack's text field writes it (``<@U123>``, ``<#C123>``, ``<url|label>``, ``:emoji:``),
  with ``extra.textFrom`` "blocks".
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
from parsers.jsonload import load_json, pointer_part
from parsers.registry import register
from parsers.timeparse import from_epoch

_LIST_OF_OBJECTS = regex.compile(r"\A\s*\[\s*\{")
_DAY_KEYS = frozenset({"type", "user", "bot_id", "subtype"})
COMPANIONS = ("users.json", "org_users.json", "channels.json", "groups.json", "dms.json", "mpims.json",
              "integration_logs.json", "canvases.json", "content_flags.json")
"""The export's files beside the channel folders (Enterprise Grid writes org_users.json for users.json)."""
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


def _team(entries: list[tuple[str, Any]]) -> str | None:
    """The workspace (team id) the channel's messages name (``team``, else ``user_team``)."""
    for _, m in entries:
        if isinstance(m, dict):
            team = m.get("team") or m.get("user_team")
            if isinstance(team, str) and team:
                return team
    return None


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


# A rich-text element as Slack's own text field writes it (mrkdwn): mentions, channels, links, emoji.
_RICH_ELEMENT = {
    "text": lambda e: string(e.get("text")),
    "user": lambda e: f"<@{string(e.get('user_id'))}>",
    "channel": lambda e: f"<#{string(e.get('channel_id'))}>",
    "usergroup": lambda e: f"<!subteam^{string(e.get('usergroup_id'))}>",
    "broadcast": lambda e: f"<!{string(e.get('range'))}>",
    "emoji": lambda e: f":{string(e.get('name'))}:",
    "link": lambda e: (f"<{string(e.get('url'))}|{string(e.get('text'))}>" if e.get("text")
                       else f"<{string(e.get('url'))}>"),
}


def _rich_lines(elements: Any) -> list[str]:
    """The text of rich-text containers (sections, lists, quotes, code), one line or more each."""
    out = []
    for part in elements if isinstance(elements, list) else []:
        if not isinstance(part, dict):
            continue
        inner = part.get("elements")
        if part.get("type") == "rich_text_list" or any(isinstance(e, dict) and "elements" in e for e in inner or []):
            out += _rich_lines(inner)
        elif isinstance(inner, list):
            out.append("".join(_RICH_ELEMENT.get(e.get("type"), lambda _: "")(e) for e in inner if isinstance(e, dict)))
    return out


def blocks_text(m: dict[str, Any]) -> str:
    """A message's text from its ``rich_text`` blocks (for a message whose ``text`` is empty)."""
    blocks = m.get("blocks") if isinstance(m.get("blocks"), list) else []
    rich = [b.get("elements") for b in blocks if isinstance(b, dict) and b.get("type") == "rich_text"]
    return "\n".join(line for elements in rich for line in _rich_lines(elements)).strip()


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
    if not text and (text := blocks_text(m)):
        extra["textFrom"] = "blocks"
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


def _ts_key(ts: Any) -> tuple[int, int] | None:
    if not isinstance(ts, str):
        return None
    whole, _, frac = ts.partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()):
        return None
    return int(whole), int(frac.ljust(6, "0")[:6] or 0)


def thread_order(entries: list[tuple[str, Any]]) -> list[int]:
    """Indexes of ``(pointer, message)`` entries in reading order: top-level messages by ts, each thread
    right after its parent, replies by ts.

    An entry without a readable ts takes the key of the entry before it in the file, so it stays beside
    its neighbours; the position in ``entries`` breaks every tie."""
    keys: dict[int, tuple] = {}
    last: tuple[int, int] = (-1, -1)
    for n, (_, m) in enumerate(entries):
        ts = _ts_key(m.get("ts")) if isinstance(m, dict) else None
        last = ts or last
        thread = _ts_key(m.get("thread_ts")) if isinstance(m, dict) else None
        if thread is None or thread == last:  # a top-level message or a thread's parent
            keys[n] = (last, 0, last, n)
        else:
            keys[n] = (thread, 1, last, n)
    return sorted(keys, key=keys.__getitem__)


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
    detect_needs = ('"ts"',)  # every day-file message's key
    version = "3"
    structured = True
    companion_names = COMPANIONS
    group_files = r"\d{4}-\d{2}-\d{2}\.json"
    description = "Slack export: a channel folder's <YYYY-MM-DD>.json day files as one session, users via users.json"
    example = '[{"type": "message", "user": "U024BE7LH", "text": "Hello", "ts": "1580000000.000200"}]'

    def detect(self, sample: str, name: str) -> float:
        if PurePosixPath(name).name in COMPANIONS or not _LIST_OF_OBJECTS.match(sample):
            return 0.0
        return explained_share(sample, _day_record) or 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        if source.parts:
            yield self._channel(source, [(p.name, p) for p in source.parts], grouped=True)
        else:
            yield self._channel(source, [(source.name, source)], grouped=False)

    def _channel(self, source: SourceText, files: list[tuple[str, SourceText]], grouped: bool) -> ParsedSession:
        channel = PurePosixPath(files[0][0]).parent.name or "channel"
        facts = channel_facts(source.companions, channel)
        sid, how = (facts["channelId"], "source:channels.json") if facts.get("channelId") else (channel, "file-name")
        raw: Any = {}
        entries: list[tuple[str, Any]] = []
        gaps = []
        for name, part in files:
            day = PurePosixPath(name).name
            data = self._day(part, grouped)
            if data is None:
                gaps.append(day)
                continue
            prefix = f"/{pointer_part(day)}" if grouped else ""
            if grouped:
                raw[day] = data
            else:
                raw = data
            entries.extend((f"{prefix}/{i}", m) for i, m in enumerate(data))
        session = ParsedSession(sid, how, [], raw=raw, pointer="", title=f"#{channel}")
        team = _team(entries)
        if team:  # the workspace: a channel id is unique within it (normalizers/keys.py)
            session.meta["teamId"] = team
        session.meta.update({"channel": channel, **facts,
                             "days": [PurePosixPath(n).stem for n, _ in files if PurePosixPath(n).name not in gaps]})
        if grouped:  # the provenance of each day file; the source's own checksum covers them all
            session.meta["files"] = [{"name": PurePosixPath(p.name).name, "sha256": p.sha256, "sizeBytes": p.size}
                                     for _, p in files]
        if gaps:
            session.coverage_reason = (f"{len(gaps)} day files of the channel are not readable lists of messages: "
                                       + ", ".join(gaps[:5]))
        d = Directory(source.companions.get("users.json") or source.companions.get("org_users.json"))
        session.turns.extend(message_turn(entries[n][1], entries[n][0], d) for n in thread_order(entries))
        note_odd(session, [m for _, m in entries])
        d.finish(session)
        return session

    def _day(self, part: SourceText, grouped: bool) -> list[Any] | None:
        """A day file's messages; alone, a file that is not a list is an error, in a group a gap."""
        try:
            data = load_json(part.text, part.name, self.name) if part.text or not grouped else None
        except ParseError:
            if not grouped:
                raise
            return None
        if isinstance(data, list):
            return data
        if not grouped:
            raise ParseError(Reason.PARSE_ERROR, "expected a JSON list of messages", path=part.name,
                             grammar=self.name)
        return None

    def count_turns(self, raw: Any) -> int:
        if isinstance(raw, dict):  # a channel's day files: {name: messages}
            return sum(len(v) for v in raw.values() if isinstance(v, list))
        return len(raw) if isinstance(raw, list) else 0
