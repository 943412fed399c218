"""Facebook Messenger JSON exports (``message_N.json``: ``participants``, ``messages``, ``title``, ``thread_path``).

Dialects: one-to-one and group threads, long threads split over ``message_1.json`` (the newest),
``message_2.json``..., and Instagram direct-message exports, which use the same layout; the export of
end-to-end encrypted chats (messenger.com's secure storage, 2024-: ``threadName``, ``participants`` as
names, messages with ``senderName``, ``timestamp`` in ms, ``text``, ``isUnsent``, ``media`` [{uri}]),
read key for key as the same message (``E2EE_KEYS``), in plain UTF-8 (no mojibake to repair).

Decisions:
- Facebook writes UTF-8 as ``\\u00XX`` escapes of each byte (latin-1 mojibake): every string is
  repaired with ``encode("latin-1").decode("utf-8")`` when that round-trips, and kept as it is
  otherwise (a genuine "é" does not round-trip and stays).
- Messages are stored newest first; they are emitted oldest first by ``timestamp_ms``. Messages
  with the same millisecond keep the REVERSE of their file order, since the file is newest first
  (only when the file's own times run oldest first, an unusual export, do ties keep file order;
  the assumption says which). A message without ``timestamp_ms`` stays beside its neighbours.
- ``Subscribe`` / ``Unsubscribe`` (people added to or leaving a group) and ``Call`` events are
  System turns with the sender as ``actor``. Everything else (Generic, Share...) is its sender's
  turn; photos, videos, audio, files, GIFs and stickers add ``[photo: name]`` marker lines (kind
  ``media`` when there is no text); a shared link the text does not already show adds ``[share: link]``.
- A thread split over several files is one session: the ingest groups a folder's ``message_N.json``
  files (``group_files``) and hands them over together; they are read in part order, pointers are
  ``/message_2.json/messages/7`` (the raw value is ``{file name: file}``), and a file that is not a
  readable thread makes the session partial, naming it. A file given alone is a session of its own
  with ``meta.filePart``.
- session_id = ``thread_path``, else None.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
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

_MOJIBAKE = regex.compile(r"\\u00[89a-fA-F][0-9a-fA-F]|[\x80-\xff]")
_PART = regex.compile(r"message_(\d+)")
_OWN = frozenset({"timestamp_ms", "content", "type"})
SYSTEM_KINDS = {"Subscribe": "join", "Unsubscribe": "part", "Call": "system"}
MESSAGE_TYPES = frozenset({"Generic", "Share", "Call", "Subscribe", "Unsubscribe", "Payment", "Plan"})
MESSAGE_KEYS = frozenset({
    "sender_name", "timestamp_ms", "content", "type", "photos", "videos", "audio_files", "files", "gifs", "sticker",
    "share", "reactions", "is_unsent", "call_duration", "missed", "users", "ip", "is_taken_down",
    "is_geoblocked_for_viewer", "is_unsent_image_by_messenger_kid_parent", "bumped_message_metadata",
    "is_forwarded", "unsent_timestamp_ms", "joinable_mode", "creation_timestamp", "media",
})
_MEDIA = (("photos", "photo"), ("videos", "video"), ("audio_files", "audio"), ("files", "file"), ("gifs", "gif"),
          ("media", "media"))
E2EE_KEYS = {"senderName": "sender_name", "timestamp": "timestamp_ms", "text": "content", "isUnsent": "is_unsent"}
"""An end-to-end encrypted chat's message keys, by the key of the older export that means the same."""
_E2EE_OWN = frozenset({"timestamp", "text"})


def _part_number(name: str) -> int:
    m = _PART.fullmatch(PurePosixPath(name).stem)
    return int(m[1]) if m else 0


def repair(value: Any) -> Any:
    """Undo Facebook's latin-1 mojibake in every string of a JSON value."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            return value.encode("latin-1").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            return value
    if isinstance(value, list):
        return [repair(v) for v in value]
    if isinstance(value, dict):
        return {k: repair(v) for k, v in value.items()}
    return value


def _ms(m: Any) -> int | None:
    value = m.get("timestamp_ms") if isinstance(m, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _messenger_record(record: Record) -> bool:
    keys = record.keys
    return record.container == "messages" and (("sender_name" in keys and not _OWN.isdisjoint(keys))
                                               or ("senderName" in keys and not _E2EE_OWN.isdisjoint(keys)))


def _e2ee(data: dict[str, Any]) -> bool:
    first = next((m for m in data["messages"] if isinstance(m, dict)), {})
    return "senderName" in first


def _as_legacy(m: Any) -> Any:
    """An end-to-end encrypted chat's message in the older export's keys (any other value as it is)."""
    if not isinstance(m, dict) or "senderName" not in m:
        return m
    return {E2EE_KEYS.get(k, k): v for k, v in m.items()}


@register
class Messenger(Grammar):
    name = "messenger"
    detect_needs = ('"sender_name"', '"senderName"')  # a message record's key
    version = "3"
    group_files = r"message_\d+\.json"
    structured = True
    description = "Facebook Messenger (and Instagram) JSON export: a thread's message_N.json files as one session"
    example = ('{"participants": [{"name": "John Doe"}], "messages": [{"sender_name": "Allan Smith", '
               '"timestamp_ms": 1668628203612, "content": "Hello John", "type": "Generic"}], '
               '"title": "John Doe", "thread_path": "inbox/johndoe_abc123"}')

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample, _messenger_record) or 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        if source.parts:
            parts = sorted(source.parts, key=lambda p: (_part_number(p.name), p.name))
            yield self._thread([(PurePosixPath(p.name).name, p) for p in parts], grouped=True)
        else:
            yield self._thread([(source.name, source)], grouped=False)

    def _load(self, part: SourceText, grouped: bool) -> dict[str, Any] | None:
        """One file of the thread, repaired; alone, a file that is not a thread is an error, in a group a gap."""
        try:
            data = load_json(part.text, part.name, self.name) if part.text or not grouped else None
        except ParseError:
            if grouped:
                return None
            raise
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            if grouped:
                return None
            raise ParseError(Reason.PARSE_ERROR, "expected an object with a messages list", path=part.name,
                             grammar=self.name)
        if _e2ee(data) or not _MOJIBAKE.search(part.text):  # all-English threads have nothing to repair
            return data
        return repair(data)

    def _thread(self, files: list[tuple[str, SourceText]], grouped: bool) -> ParsedSession:
        raw: dict[str, Any] = {}
        entries: list[tuple[str, Any]] = []
        gaps: list[str] = []
        head: dict[str, Any] = {}
        for name, part in files:
            data = self._load(part, grouped)
            if data is None:
                gaps.append(name)
                continue
            head = head or data
            prefix = f"/{pointer_part(name)}" if grouped else ""
            if grouped:
                raw[name] = data
            else:
                raw = data
            entries.extend((f"{prefix}/messages/{i}", _as_legacy(m)) for i, m in enumerate(data["messages"]))
        session = self._session(head, raw, files, grouped)
        if gaps:
            session.coverage_reason = (f"{len(gaps)} files of the thread are not readable message lists: "
                                       + ", ".join(gaps[:5]))
        messages = [m for _, m in entries]
        stamps = [_ms(m) for m in messages]
        order, newest_first = chronological(stamps)
        if len(messages) > 1:
            session.assumptions.append(
                "messages emitted oldest first by timestamp_ms; the file runs newest first, so messages with "
                "the same timestamp keep the reverse of their file order" if newest_first else
                "messages emitted oldest first by timestamp_ms; this file runs oldest first, so messages with "
                "the same timestamp keep their file order"
            )
        times, drift = TimeLog(), Drift()
        for i in order:
            session.turns.append(self._turn(messages[i], entries[i][0], stamps[i], times, drift))
        note_odd(session, messages)
        times.flush(session)
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        return session

    @staticmethod
    def _session(head: dict[str, Any], raw: Any, files: list[tuple[str, SourceText]], grouped: bool) -> ParsedSession:
        tid = head.get("thread_path")
        tid = tid if isinstance(tid, str) and tid else None
        session = ParsedSession(tid, "source:thread_path" if tid else "none", [], raw=raw, pointer="")
        title = head.get("title", head.get("threadName"))
        session.title = title if isinstance(title, str) else None
        if isinstance(head.get("participants"), list):
            session.meta["participants"] = [p.get("name") if isinstance(p, dict) else p for p in head["participants"]
                                            if isinstance(p, dict | str)]
        if head.get("thread_type"):
            session.meta["threadType"] = head["thread_type"]
        if grouped:  # the provenance of each file; the source's own checksum covers them all
            session.meta["files"] = [{"name": n, "sha256": p.sha256, "sizeBytes": p.size} for n, p in files]
        elif _PART.fullmatch(PurePosixPath(files[0][0]).stem):
            session.meta["filePart"] = _part_number(files[0][0])
        return session

    @staticmethod
    def _turn(m: Any, pointer: str, stamp: int | None, times: TimeLog, drift: Drift) -> Turn:
        if not isinstance(m, dict):
            return odd_entry(m, pointer)
        drift.unknown_keys(m, MESSAGE_KEYS, pointer)
        if m.get("type") is not None and m.get("type") not in MESSAGE_TYPES:
            drift.note("messageType", str(m.get("type")), pointer)
        raw = raw_text(m.get("timestamp_ms"))
        when = times.read(from_epoch(stamp, millis=True) if stamp is not None else None, raw, pointer)
        text = string(m.get("content"))
        mtype = m.get("type")
        extra: dict[str, Any] = {"type": mtype}
        lines = []
        link = ""
        for key, label in _MEDIA:
            items = m.get(key)
            for item in items if isinstance(items, list) else ():
                uri = string(item.get("uri")) if isinstance(item, dict) else ""
                lines.append(f"[{label}: {PurePosixPath(uri).name}]" if uri else f"[{label}]")
        if isinstance(m.get("sticker"), dict):
            uri = string(m["sticker"].get("uri"))
            lines.append(f"[sticker: {PurePosixPath(uri).name}]" if uri else "[sticker]")
        share = m.get("share")
        if isinstance(share, dict) and share:
            extra["share"] = share
            link = string(share.get("link"))
            if link and link not in text:
                lines.append(f"[share: {link}]")
        if m.get("reactions"):
            extra["reactions"] = m["reactions"]
        if m.get("is_unsent"):
            extra["unsent"] = True
        for key, out in (("call_duration", "callDuration"), ("missed", "missed")):
            if m.get(key) is not None:
                extra[out] = m[key]
        if isinstance(m.get("users"), list):
            extra["members"] = [u.get("name") for u in m["users"] if isinstance(u, dict)]
        if mtype is None:
            del extra["type"]
        content = markers(text, lines) if lines else text
        sender = str(m.get("sender_name") or "unknown")
        if mtype in SYSTEM_KINDS:
            extra["actor"] = sender
            return Turn("System", "system", content or str(mtype), when, raw, None, SYSTEM_KINDS[mtype],
                        pointer=pointer, extra=extra)
        kind = "media" if lines and not text and not link else "message"
        return Turn(sender, "user", content, when, raw, None, kind, pointer=pointer, extra=extra or None)

    def count_turns(self, raw: Any) -> int:
        if not isinstance(raw, dict):
            return 0
        if "messages" in raw:  # one file
            return len(raw["messages"]) if isinstance(raw["messages"], list) else 0
        return sum(self.count_turns(part) for part in raw.values())  # a thread's files: {name: file}
