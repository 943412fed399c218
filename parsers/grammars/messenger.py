"""Facebook Messenger JSON exports (``message_1.json``: ``participants``, ``messages``, ``title``).

Facebook writes UTF-8 as ``\\u00XX`` escapes of each byte (latin-1 mojibake): every string is
repaired with ``encode("latin-1").decode("utf-8")`` when that round-trips, and kept as it is
otherwise. Messages are stored newest first; they are emitted oldest first, by ``timestamp_ms``,
and messages with the same timestamp keep the reverse of their file order (the file's order is
newest first). ``Subscribe``/``Unsubscribe`` and call events are System turns with the actor.
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
from parsers.timeparse import from_epoch

_SIGNATURE = regex.compile(r'"sender_name"\s*:')
_SUPPORT = regex.compile(r'"timestamp_ms"\s*:')
SYSTEM_TYPES = {"Subscribe", "Unsubscribe", "Call"}


def repair(value: Any) -> Any:
    """Undo Facebook's latin-1 mojibake in every string of a JSON value."""
    if isinstance(value, str):
        try:
            return value.encode("latin-1").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            return value
    if isinstance(value, list):
        return [repair(v) for v in value]
    if isinstance(value, dict):
        return {k: repair(v) for k, v in value.items()}
    return value


@register
class Messenger(Grammar):
    name = "messenger"
    version = "1"
    structured = True
    description = "Facebook Messenger JSON export (message_N.json)"
    example = '{"participants": [{"name": "Ann"}], "messages": [{"sender_name": "Ann", "timestamp_ms": 1668628203612}]}'

    def detect(self, sample: str, name: str) -> float:
        return 0.95 if _SIGNATURE.search(sample) and _SUPPORT.search(sample) else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = repair(load_json(source.text, source.name, self.name))
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise ParseError(Reason.PARSE_ERROR, "expected an object with a messages list", path=source.name,
                             grammar=self.name)
        messages = data["messages"]
        tid = data.get("thread_path")
        session = ParsedSession(tid if isinstance(tid, str) and tid else None,
                                "source:thread_path" if tid else "none", [], raw=messages, pointer="/")
        session.title = data.get("title") if isinstance(data.get("title"), str) else None
        if isinstance(data.get("participants"), list):
            session.meta["participants"] = [p.get("name") for p in data["participants"] if isinstance(p, dict)]
        order = sorted(range(len(messages)), key=lambda i: (_ms(messages[i]), -i))
        if order != list(range(len(messages))):
            session.assumptions.append("messages re-ordered oldest first by timestamp_ms (the file is newest first)")
        for i in order:
            session.turns.append(self._turn(messages[i], f"/messages/{i}"))
        yield session

    @staticmethod
    def _turn(m: Any, pointer: str) -> Turn:
        if not isinstance(m, dict):
            return Turn("System", "other", str(m), pointer=pointer, kind="unknown")
        raw = m.get("timestamp_ms")
        when = from_epoch(raw, millis=True)
        content = m.get("content") if isinstance(m.get("content"), str) else ""
        extra: dict[str, Any] = {"type": m.get("type")}
        media = [k for k in ("photos", "videos", "audio_files", "files", "gifs", "sticker") if m.get(k)]
        for key in (*media, "share", "reactions"):
            if m.get(key):
                extra[key] = m[key]
        sender = str(m.get("sender_name") or "unknown")
        if m.get("type") in SYSTEM_TYPES:
            extra["actor"] = sender
            return Turn("System", "system", content or str(m.get("type")), when, None if raw is None else str(raw),
                        None, "system", pointer=pointer, extra=extra)
        kind = "message"
        if media:
            kind = "media" if not content else "message"
            content = "\n".join(x for x in (content, f"[{', '.join(media)}]") if x)
        return Turn(sender, "user", content, when, None if raw is None else str(raw), None, kind,
                    pointer=pointer, extra=extra)

    def count_turns(self, raw: Any) -> int:
        return len(raw)


def _ms(m: Any) -> int:
    try:
        return int(m.get("timestamp_ms") or 0) if isinstance(m, dict) else 0
    except (TypeError, ValueError):
        return 0
