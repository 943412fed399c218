"""Times to the contract's form ``YYYY-MM-DDTHH:mm:ssZ`` in UTC; naive times take the source zone."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

MIN_YEAR, MAX_YEAR = 1, 9999
"""Every year the contract's four-digit form can write: a time in year 0001 or 9999 is a time like any
other (a placeholder date in a source is still what the source says, and ``dateRaw`` keeps it)."""


def to_utc_z(value: datetime, zone: tzinfo) -> str | None:
    """UTC text of a datetime, fractional seconds dropped; None when its UTC time falls outside the
    years 0001..9999 (9999-12-31 23:00 in a zone west of UTC is in year 10000)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone)
    try:
        utc = value.astimezone(UTC)
    except (OverflowError, ValueError):
        return None
    if not MIN_YEAR <= utc.year <= MAX_YEAR:
        return None
    return f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}Z"
