"""Slack workspace exports: a folder per channel with one JSON file per day (``general/2020-01-01.json``).

Each day file is one session, id ``<channel>-<date>`` from its path (id source "file-name"),
messages in file order; thread replies stay where the day file has them, with ``threadTs``.
User ids are resolved through the export's ``users.json`` (a companion file: the ingest hands
it over from the day file's folder or a folder above), else through the message's own
``user_profile``, else kept as the id. Subtype messages that are events (channel_join,
channel_topic, pinned_item...) are System turns with the user as actor; ``bot_message`` turns
belong to the bot (role "other": a bot is not a language model).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

import orjson
import regex

from models.errors import ParseError, Reason
from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.jsonload import load_json
from parsers.registry import register
from parsers.timeparse import from_epoch

_SIGNATURE = regex.compile(r'\A\s*\[\s*\{')
_TS = regex.compile(r'"ts"\s*:\s*"\d+\.\d+"')
_MESSAGE = regex.compile(r'"type"\s*:\s*"message"')
_DAY = regex.compile(r"^\d{4}-\d{2}-\d{2}$")
EVENT_SUBTYPES = {
    "channel_join", "channel_leave", "channel_topic", "channel_purpose", "channel_name", "channel_archive",
    "channel_unarchive", "group_join", "group_leave", "group_topic", "group_purpose", "group_name",
    "pinned_item", "unpinned_item", "bot_add", "bot_remove", "reminder_add", "channel_convert_to_private",
}


def user_names(users_json: str | None) -> dict[str, str]:
    """User id -> display name from users.json (display name, else real name, else name)."""
    if not users_json:
        return {}
    try:
        users = orjson.loads(users_json)
    except orjson.JSONDecodeError:
        return {}
    names = {}
    for u in users if isinstance(users, list) else []:
        if isinstance(u, dict) and u.get("id"):
            profile = u.get("profile") or {}
            names[u["id"]] = profile.get("display_name") or u.get("real_name") or profile.get("real_name") \
                or u.get("name") or u["id"]
    return names


@register
class Slack(Grammar):
    name = "slack"
    version = "1"
    structured = True
    companion_names = ("users.json", "channels.json", "groups.json", "dms.json", "mpims.json", "integration_logs.json")
    description = "Slack export day file (<channel>/<YYYY-MM-DD>.json), users resolved via users.json"
    example = '[{"type": "message", "user": "U024BE7LH", "text": "Hello", "ts": "1580000000.000200"}]'

    def detect(self, sample: str, name: str) -> float:
        if not (_SIGNATURE.search(sample) and _TS.search(sample) and _MESSAGE.search(sample)):
            return 0.0
        return 0.95 if _DAY.match(PurePosixPath(name).stem) else 0.85

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        if not isinstance(data, list):
            raise ParseError(Reason.PARSE_ERROR, "expected a JSON list of messages", path=source.name,
                             grammar=self.name)
        path = PurePosixPath(source.name)
        channel, day = path.parent.name or "channel", path.stem
        session = ParsedSession(f"{channel}-{day}", "file-name", [], raw=data, pointer="/")
        session.title = f"#{channel} {day}"
        names = user_names(source.companions.get("users.json"))
        if not names:
            session.assumptions.append("no users.json beside the export: user ids resolved from message profiles")
        for i, m in enumerate(data):
            session.turns.append(self._turn(m, f"/{i}", names))
        yield session

    @staticmethod
    def _turn(m: Any, pointer: str, names: dict[str, str]) -> Turn:
        if not isinstance(m, dict):
            return Turn("System", "other", str(m), pointer=pointer, kind="unknown")
        uid = m.get("user")
        profile = m.get("user_profile") or {}
        person = names.get(uid) or profile.get("display_name") or profile.get("real_name") or uid
        ts = m.get("ts")
        when = from_epoch(ts)
        extra: dict[str, Any] = {"ts": ts}
        if uid:
            extra["userId"] = uid
        if m.get("thread_ts"):
            extra["threadTs"] = m["thread_ts"]
        for key in ("reply_count", "reactions", "edited"):
            if m.get(key):
                extra[key] = m[key]
        text = m.get("text") if isinstance(m.get("text"), str) else ""
        files = [f.get("name") or f.get("title") or "file" for f in m.get("files") or [] if isinstance(f, dict)]
        if files:
            text = "\n".join(x for x in (text, f"[files: {', '.join(files)}]") if x)
        subtype = m.get("subtype")
        if subtype:
            extra["subtype"] = subtype
        if subtype in EVENT_SUBTYPES:
            extra["actor"] = person
            return Turn("System", "system", text or subtype, when, ts, None, "system", pointer=pointer, extra=extra)
        if subtype == "bot_message" or (m.get("bot_id") and not uid):
            bot = m.get("username") or (m.get("bot_profile") or {}).get("name") or m.get("bot_id") or "bot"
            return Turn(str(bot), "other", text, when, ts, None, "message", pointer=pointer, extra=extra)
        kind = "media" if files and not m.get("text") else "message"
        return Turn(str(person or "unknown"), "user", text, when, ts, None, kind, pointer=pointer, extra=extra)

    def count_turns(self, raw: Any) -> int:
        return len(raw)
