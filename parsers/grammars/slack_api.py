"""Slack Web API history pages: responses of ``conversations.history`` and ``conversations.replies`` saved to a file.

Dialects: one page (``{"ok": true, "messages": [...], "has_more": true, "response_metadata": {...}}``),
several pages in one file as a JSON array of pages, or pages written one after the other (concatenated
or one per line, as a paging loop appends them). History pages list a channel's top-level messages
newest first; replies pages list a thread, its parent first, then the replies oldest first.

Decisions:
- A file is one session: the conversation whose pages it holds. session_id = the file stem when it is
  a Slack conversation id (``C024BE91L``, ``D0123ABCD``, ``G...``; id source "file-name"), else none
  (the API's pages do not name their channel).
- Interactions are in chronological order with every thread next to its parent: top-level messages by
  ``ts``, each followed by its replies by ``ts`` (a reply whose parent is not in the file sits where its
  parent would be). Ties and unreadable ``ts`` values keep the order they had in the file, so the result
  is deterministic whatever the page order.
- The same message in two pages (a thread's parent in a replies page and in a history page, a
  ``thread_broadcast`` in both, overlapping pages) is one interaction: the first copy in the file is
  the turn, each later copy is a declared ``duplicate`` region naming the first.
- A page with ``"ok": false`` (a saved error) has no messages: a warning names it.
- Messages are read exactly as in Slack export day files (``parsers.grammars.slack.message_turn``):
  users through a ``users.json`` beside the file (the export's list, or a saved ``users.list`` page),
  events as System turns, bots with role "other".
- Concatenated pages are not one JSON document: they are read as the array of their pages, and the
  pointers (``/1/messages/4``) address that array.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

import regex

from models.errors import ParseError, Reason
from models.records import ParsedSession, Region, RegionKind, SourceText
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._chatjson import Record, explained_share, note_odd
from parsers.grammars.slack import Directory, message_turn, thread_order
from parsers.jsonload import load_json
from parsers.memory import paused_gc
from parsers.registry import register

_PAGE = regex.compile(r'"ok"\s*:\s*(?:true|false)')
_CONVERSATION_ID = regex.compile(r"[CDG][A-Z0-9]{8,}")
_API_KEYS = frozenset({"type", "user", "bot_id", "subtype", "thread_ts", "client_msg_id"})
PAGE_KEYS = frozenset({
    "ok", "messages", "has_more", "pin_count", "channel_actions_ts", "channel_actions_count", "response_metadata",
    "latest", "oldest", "warning", "error", "needed", "provided", "is_limited",
})


def _api_record(record: Record) -> bool:
    return record.container == "messages" and "ts" in record.keys and not _API_KEYS.isdisjoint(record.keys)


def read_pages(text: str, name: str, grammar: str) -> tuple[list[Any], bool]:
    """The pages of a file, and whether they came as one JSON document (a page or an array of pages)."""
    try:
        data = load_json(text, name, grammar)
    except ParseError:
        pages = _concatenated(text)
        if pages is None:
            raise
        return pages, False
    return data, True


def _concatenated(text: str) -> list[Any] | None:
    """Objects written one after the other (``{...}{...}`` or one per line); None when it is not that."""
    decoder = json.JSONDecoder()
    pages: list[Any] = []
    pos, end = 0, len(text)
    with paused_gc():
        while True:
            while pos < end and (text[pos].isspace() or text[pos] == ","):
                pos += 1
            if pos == end:
                break
            try:
                page, pos = decoder.raw_decode(text, pos)
            except json.JSONDecodeError:
                return None
            pages.append(page)
    return pages if len(pages) > 1 else None


def _entries(pages: list[Any], single: bool) -> Iterator[tuple[str, Any]]:
    """(pointer, message) of every page's messages, in file order."""
    for p, page in enumerate(pages):
        messages = page.get("messages") if isinstance(page, dict) else None
        for i, m in enumerate(messages if isinstance(messages, list) else []):
            yield f"/messages/{i}" if single else f"/{p}/messages/{i}", m


@register
class SlackApi(Grammar):
    name = "slack-api"
    detect_needs = ('"ok"',)  # a page's ok flag
    version = "1"
    structured = True
    companion_names = ("users.json",)
    description = "Slack Web API conversations.history / conversations.replies pages saved as JSON (one or many)"
    example = ('{"ok": true, "messages": [{"type": "message", "user": "U061F7AUR", "text": "island", '
               '"ts": "1482960137.003543"}], "has_more": false}')

    def detect(self, sample: str, name: str) -> float:
        if not _PAGE.search(sample):
            return 0.0
        return explained_share(sample, _api_record) or 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data, whole = read_pages(source.text, source.name, self.name)
        single = isinstance(data, dict)
        pages = [data] if single else data
        if not isinstance(pages, list) or not all(isinstance(p, dict) for p in pages):
            raise ParseError(Reason.PARSE_ERROR, "expected a Web API page or a list of pages", path=source.name,
                             grammar=self.name)
        stem = PurePosixPath(source.name).stem
        sid = stem if _CONVERSATION_ID.fullmatch(stem) else None
        session = ParsedSession(sid, "file-name" if sid else "none", [], raw=data, pointer="", title=stem)
        entries = list(_entries(pages, single))
        d = Directory(source.companions.get("users.json"))
        first: dict[str, str] = {}
        for n in thread_order(entries):
            pointer, m = entries[n]
            ts = m.get("ts") if isinstance(m, dict) else None
            if isinstance(ts, str) and ts in first:
                session.regions.append(Region(RegionKind.DUPLICATE, f"repeats the message ts {ts} at {first[ts]}",
                                              pointer=pointer))
                continue
            if isinstance(ts, str):
                first[ts] = pointer
            session.turns.append(message_turn(m, pointer, d))
        self._notes(session, pages, single, whole, entries, d)
        d.finish(session)
        yield session

    @staticmethod
    def _notes(session: ParsedSession, pages: list[dict], single: bool, whole: bool,
               entries: list[tuple[str, Any]], d: Directory) -> None:
        note_odd(session, [m for _, m in entries])
        failed = [i for i, p in enumerate(pages) if p.get("ok") is False]
        if failed:
            session.warnings.append(f"{len(failed)} of {len(pages)} pages are saved errors (ok: false, first: page "
                                    f"{failed[0]}, error {pages[failed[0]].get('error')!r}): they hold no messages")
        if pages and pages[-1].get("has_more") is True:
            session.warnings.append("the last page says has_more: the conversation continues past this file")
        session.meta["pages"] = len(pages)
        if not whole:
            session.assumptions.append("pages written one after the other: read as the array of their pages")
        for p, page in enumerate(pages):
            d.drift.unknown_keys(page, PAGE_KEYS, "" if single else f"/{p}")

    def count_turns(self, raw: Any) -> int:
        pages = [raw] if isinstance(raw, dict) else raw if isinstance(raw, list) else []
        seen: set[str] = set()
        count = 0
        for page in pages:
            messages = page.get("messages") if isinstance(page, dict) else None
            for m in messages if isinstance(messages, list) else []:
                ts = m.get("ts") if isinstance(m, dict) else None
                if isinstance(ts, str):
                    if ts in seen:
                        continue
                    seen.add(ts)
                count += 1
        return count

