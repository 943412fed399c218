"""Helpers shared by the human chat JSON grammars (Telegram, Discord, Slack, Messenger).

These exports agree on little, but on three things they do: an entry that is not an object still
counts as one turn (B1), a time that cannot be read is dropped with one aggregated warning per
session rather than one per message, and format-specific facts go to ``extra`` only when present.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import orjson

from models.records import ParsedSession, Turn
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
