"""Helpers shared by the AI-assistant export grammars (ChatGPT, Claude, JSON Lines).

They agree on a few rules: an entry that is not an object is still one turn (B1), kept verbatim;
a time that cannot be read gives no time and one aggregated warning per session, never one per
message; tool inputs are shown as compact JSON with sorted keys so a render is stable; and a big
export is read one conversation at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, BinaryIO

import ijson
import orjson

from models.errors import ParseError, Reason
from models.records import ParsedSession, Turn
from parsers.timeparse import parse_iso


class TimeNotes:
    """Counts the turns of one session whose source time is present but unreadable."""

    __slots__ = ("bad", "first")

    def __init__(self) -> None:
        self.bad = 0
        self.first: tuple[str, str] | None = None

    def note(self, when: datetime | None, raw: str | None, where: str) -> datetime | None:
        if when is None and raw not in (None, ""):
            self.bad += 1
            if self.first is None:
                self.first = (raw, where)
        return when

    def flush(self, session: ParsedSession) -> None:
        if self.bad:
            raw, where = self.first or ("", "")
            session.warnings.append(
                f"{plural(self.bad, 'time')} could not be read (first {raw!r} at {where}): no time set there"
            )


def plural(n: int, word: str, suffix: str = "s") -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}{suffix}"


def read_time(value: Any, *, guess_millis: bool = True) -> tuple[datetime | None, str | None]:
    """(time, raw text) of a source time: epoch seconds (or milliseconds, told by size, when the
    format allows both) or ISO text.

    Epochs are aware UTC; ISO text is aware only when it carries a zone. Booleans and other
    types are not times, but their text is kept so the loss is visible.
    """
    kind = type(value)
    if kind is int or kind is float:  # the common case first: this runs once per message
        seconds = value / 1000 if guess_millis and abs(value) > 1e11 else value
        try:
            return datetime.fromtimestamp(int(seconds), UTC), str(value)
        except (ValueError, OverflowError, OSError):
            return None, str(value)
    if kind is str:
        if len(value) >= 16 and value[10:11] in ("T", " "):
            try:  # the C parser reads strict ISO several times faster than a regex
                when = datetime.fromisoformat(value)
                return (when.replace(microsecond=0) if when.microsecond else when), value
            except ValueError:
                pass
        return (parse_iso(value), value) if value else (None, None)
    if value is None:
        return None, None
    if isinstance(value, bool):
        return None, str(value).lower()
    return None, orjson.dumps(value).decode()


def malformed_turn(value: Any, pointer: str | None = None, lines: tuple[int, int] | None = None) -> Turn:
    """An entry of a message list that is not an object: still one turn (B1), kept verbatim."""
    content = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return Turn("System", "system", content, None, None, None, "notice", lines, pointer,
                {"malformedEntry": True})


def odd_warning(count: int, where: str) -> str:
    if count == 1:
        return f"1 of the {where} entries is not an object: kept verbatim as a System notice"
    return f"{count} of the {where} entries are not objects: kept verbatim as System notices"


def json_text(value: Any) -> str:
    """Compact JSON with sorted keys (tool inputs, unknown content), stable across runs."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()


def compact(fields: dict[str, Any]) -> dict[str, Any] | None:
    """``extra`` without empty values; None when nothing is left (convention 5)."""
    out = {k: v for k, v in fields.items() if v is not None and v != "" and v != [] and v != {}}
    return out or None


def stream_items(fp: BinaryIO, name: str, grammar: str) -> Iterator[Any]:
    """The top-level objects of a JSON list, one at a time (or the one object when it is not a list)."""
    head = fp.read(4096)
    bom = 3 if head.startswith(b"\xef\xbb\xbf") else 0
    head = head[bom:].lstrip()
    fp.seek(bom)  # ijson does not skip a BOM
    prefix = "item" if head.startswith(b"[") else ""
    try:
        yield from ijson.items(fp, prefix, use_float=True)
    except ijson.JSONError as exc:
        raise ParseError(Reason.PARSE_ERROR, f"not valid JSON: {exc}", path=name, grammar=grammar) from None
