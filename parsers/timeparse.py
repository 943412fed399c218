"""Source timestamps to datetimes without guessing: ISO 8601 forms, Unix epochs, clock parts.

Every function returns None for a value it cannot read or that is out of range; the caller keeps
the raw text, so nothing is lost and nothing is invented.
"""

from __future__ import annotations

from datetime import UTC, datetime

import regex

_ISO_LOOSE = regex.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})(?:[T ]|, ?)(?P<time>\d{2}:\d{2}(?::\d{2})?)(?P<frac>[.,]\d+)?"
    r"\s*(?P<zone>Z|UTC|[+-]\d{2}:?\d{2})?"
)


def parse_iso(value: str) -> datetime | None:
    """ISO 8601 date-times: ``2025-08-24T10:00:00Z``, ``2025-08-24 10:00``, ``...+0000``, fractions,
    and the comma some chat exporters put between date and clock (``2019-12-24, 12:23``).

    Naive when the text has no zone. Fractional seconds are dropped (the format has none).
    """
    m = _ISO_LOOSE.fullmatch(value.strip())
    if not m:
        return None
    time = m["time"] if m["time"].count(":") == 2 else m["time"] + ":00"
    zone = m["zone"] or ""
    if zone in ("Z", "UTC"):
        zone = "+00:00"
    try:
        return datetime.fromisoformat(f"{m['date']}T{time}{zone}")
    except ValueError:
        return None


def from_epoch(value: float | int | str | None, *, millis: bool = False) -> datetime | None:
    """Unix epoch seconds (or milliseconds) to an aware UTC datetime; None when absent or absurd."""
    if value is None or value == "":
        return None
    try:
        seconds = float(value) / (1000.0 if millis else 1.0)
        return datetime.fromtimestamp(int(seconds), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def from_parts(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
               ) -> datetime | None:
    """A naive datetime from numeric parts, or None when the calendar says no (30 February, 25:61)."""
    try:
        return datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None


def clock_24h(hour: int, meridiem: str | None) -> int:
    """Hour on a 24 h clock from a 12 h reading; ``13 p.m.`` (seen in real exports) stays 13.

    Hour 0 is read on the 0-11 clock that some locales pair with a meridiem (CLDR's ``K``:
    ``午前0:15``, and ``00:08 a. m.`` in Spanish WhatsApp exports): midnight's hour, or noon's after p.m.
    """
    if not meridiem:
        return hour
    pm = meridiem.replace(".", "").replace(" ", "").replace("\u202f", "").lower().startswith("p")
    if hour > 12:
        return hour
    if pm:
        return 12 if hour == 12 else hour + 12
    return 0 if hour == 12 else hour
