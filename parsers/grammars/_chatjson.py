"""Helpers shared by the human chat JSON grammars (Telegram, Discord, Slack, Messenger).

These exports agree on little, but on three things they do: an entry that is not an object still
counts as one turn (B1), a time that cannot be read is dropped with one aggregated warning per
session rather than one per message, and format-specific facts go to ``extra`` only when present.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any

import orjson

from models.records import ParsedSession, Turn
from parsers.sample import shared
from parsers.timeparse import parse_iso


class TimeLog:
    """Counts the turns of one session whose time is unreadable or absent, for one warning each."""

    __slots__ = ("bad", "first_bad", "missing")

    def __init__(self) -> None:
        self.bad = 0
        self.first_bad: tuple[str, str] | None = None
        self.missing = 0

    def read(self, when: datetime | None, raw: str | None, pointer: str) -> datetime | None:
        """``when`` as given; an unreadable ``raw`` (or no time at all) is counted, never guessed."""
        if when is None:
            if raw in (None, ""):
                self.missing += 1
            else:
                self.bad += 1
                if self.first_bad is None:
                    self.first_bad = (raw, pointer)
        return when

    def flush(self, session: ParsedSession, what: str = "messages") -> None:
        if self.bad:
            raw, where = self.first_bad or ("", "")
            session.warnings.append(
                f"{self.bad} {what} have a time that could not be read (first {raw!r} at {where}): no date set"
            )
        if self.missing:
            session.warnings.append(f"{self.missing} {what} carry no time: no date set")


def iso_time(raw: str) -> datetime | None:
    """An ISO date-time: the C parser first (most exports write strict ISO, and it is several times
    faster than a regex), the tolerant ``parse_iso`` for the rest. A date alone is not a time."""
    if len(raw) >= 16 and raw[10:11] in ("T", " "):
        try:
            when = datetime.fromisoformat(raw)
            # Same result as parse_iso whichever parser read it: no fraction (the contract has none).
            return when.replace(microsecond=0) if when.microsecond else when
        except ValueError:
            pass
    return parse_iso(raw)


def raw_text(value: Any) -> str | None:
    """A source time value as text (``str()`` of a number), None when absent."""
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def odd_entry(value: Any, pointer: str) -> Turn:
    """An entry of a message list that is not an object: still one turn (B1), kept verbatim."""
    content = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return Turn("System", "system", content, None, None, None, "notice", pointer=pointer,
                extra={"malformedEntry": True})


def chronological(stamps: list[float | None], newest: bool = True) -> tuple[list[int], bool]:
    """Indexes of a message list oldest first by its ``stamps`` (epoch numbers, None where a message has
    no time), and whether the list itself runs newest first (Messenger, Skype and Teams write it so);
    ``newest`` decides when the times cannot tell.

    Messages with the same stamp keep the list's own order, reversed when it runs newest first; a
    message without a time takes its older neighbour's, so it stays where the list has it.
    """
    known = [s for s in stamps if s is not None]
    ups = sum(1 for a, b in pairwise(known) if b > a)
    downs = sum(1 for a, b in pairwise(known) if b < a)
    newest_first = downs > ups or (downs == ups and newest)
    order = range(len(stamps) - 1, -1, -1) if newest_first else range(len(stamps))
    keys: dict[int, tuple[float, int]] = {}
    last = None
    for rank, i in enumerate(order):
        last = stamps[i] if stamps[i] is not None else last
        keys[i] = (last if last is not None else -(2**62), rank)
    return sorted(keys, key=keys.__getitem__), newest_first


def note_odd(session: ParsedSession, entries: Iterable[Any]) -> None:
    odd = sum(1 for e in entries if not isinstance(e, dict))
    if odd:
        session.warnings.append(f"{odd} entries of the message list are not objects: kept verbatim as notices")


def string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def markers(content: str, lines: Iterable[str]) -> str:
    """The message text followed by one ``[...]`` marker line per attachment-like item."""
    return "\n".join(x for x in (content, *lines) if x)


def compact(fields: dict[str, Any]) -> dict[str, Any] | None:
    """``extra`` without empty values; None when nothing is left (convention 5)."""
    out = {k: v for k, v in fields.items() if v is not None and v != "" and v != [] and v != {} and v is not False}
    return out or None


# --- detection: the message records of a JSON sample, found by a tolerant scan -----------------------------

_SPACE = "[\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
"""White space as the ``regex`` module reads ``\\s`` (Unicode White_Space), which the scan has always used."""
_STRING = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
_KEYS_AND_BRACKETS = re.compile(
    rf'(?:[^"{{}}\[\]]++|{_STRING}(?!{_SPACE}*:))*+(?:"([^"\\\n]*(?:\\.[^"\\\n]*)*)"{_SPACE}*:|([{{}}\[\]])|"|\Z)')
"""The scan's tokens: a key (group 1: its text between the quotes) or a bracket (group 2), after a run of what
the scan passes over (values, strings that are no key, other characters); a lone quote opens a string the
sample cuts short (a line end or the sample's end inside it); the last match is the sample's end. Every
search matches where it starts, so the scan is linear (``re``: faster than ``regex`` here)."""
_ACTOR = frozenset({"from", "from_id", "actor", "actor_id", "author", "user", "bot_id", "username", "sender_name",
                    "sender", "role", "speaker", "name", "creator", "sender_id"})
_TIME = frozenset({"date", "date_unixtime", "timestamp", "timestamp_ms", "ts", "time", "created_at", "create_time",
                   "created_date", "createdDateTime", "origin_server_ts"})
_CONTENT = frozenset({"text", "content", "message", "body", "photos", "files", "attachments", "sticker", "photo",
                      "file", "media_type", "parts", "blocks"})
TOP = ""
"""The container of the items of a top-level array (a Slack day file)."""


@dataclass(frozen=True, slots=True)
class Record:
    """A message-like object of a JSON sample: its own keys, the key of the array holding it (``TOP`` for a
    top-level array, None when it is not in an array), and its text (cut short at the end of the sample)."""

    keys: frozenset[str]
    container: str | None
    text: str


def _message_like(keys: set[str]) -> bool:
    actor, time, content = (not s.isdisjoint(keys) for s in (_ACTOR, _TIME, _CONTENT))
    return actor + time + content >= 2


def _slot(parent: list[Any] | None, bracket: str) -> str | None:
    """An array's own key (``TOP`` at the top level); an object's container (its array's key, or None)."""
    if parent is None:
        return TOP if bracket == "[" else None
    if parent[0] == "[":
        return parent[4] if bracket == "{" else None
    return parent[3] if bracket == "[" else None


def sample_records(sample: str) -> tuple[Record, ...]:
    """The outermost message-like objects of a JSON sample (``_scan``), scanned once per ``Sample``."""
    return shared(sample, "records", lambda: _scan(sample))


def _scan(sample: str) -> tuple[Record, ...]:
    """The outermost message-like objects (two of an author, a time and a content key) of a JSON sample.

    The sample is usually cut short (64 KiB of a larger file), so this is a tolerant bracket-and-string
    scan, not a parse: an object still open at the end counts with the keys seen so far. Shared by the
    human chat grammars, so each one's share has the same denominator."""
    stack: list[list[Any]] = []  # [bracket, start, keys, pending key, container]
    found: list[tuple[int, int, Record]] = []
    for m in _KEYS_AND_BRACKETS.finditer(sample):
        key, bracket = m.group(1, 2)
        if key is not None:
            if stack and stack[-1][0] == "{":
                stack[-1][2].add(key)
                stack[-1][3] = key
            continue
        if bracket is None:  # a string the sample cuts short, or the sample's end
            continue
        at = m.start(2)
        if bracket in "{[":
            stack.append([bracket, at, set(), None, _slot(stack[-1] if stack else None, bracket)])
            continue
        if not stack:
            continue
        bracket, start, keys, _, container = stack.pop()
        if bracket == "{" and _message_like(keys):
            found.append((start, at + 1, Record(frozenset(keys), container, sample[start:at + 1])))
    for bracket, start, keys, _, container in stack:
        if bracket == "{" and _message_like(keys):
            found.append((start, len(sample), Record(frozenset(keys), container, sample[start:])))
    found.sort(key=lambda f: (f[0], -f[1]))
    out: list[Record] = []
    end = -1
    for start, stop, record in found:
        if start >= end:
            out.append(record)
            end = stop
    return tuple(out)


def explained_share(sample: str, explains: Callable[[Record], bool]) -> float | None:
    """The share of the sample's message records that ``explains`` accepts; None when it has none."""
    records = sample_records(sample)
    if not records:
        return None
    return sum(1 for r in records if explains(r)) / len(records)
