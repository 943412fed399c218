"""Times to the contract's form ``YYYY-MM-DDTHH:mm:ssZ`` in UTC; naive times take the source zone."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

MIN_YEAR, MAX_YEAR = 1970, 2100


def to_utc_z(value: datetime, zone: tzinfo) -> str | None:
    """UTC text of a datetime, fractional seconds dropped; None when outside 1970..2100 (implausible)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone)
    try:
        utc = value.astimezone(UTC)
    except (OverflowError, ValueError):
        return None
    if not MIN_YEAR <= utc.year <= MAX_YEAR:
        return None
    return f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}Z"
