"""parsers.timeparse: the ISO forms read, and what is refused rather than guessed."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from parsers.timeparse import clock_24h, parse_iso


@pytest.mark.parametrize(("raw", "want"), [
    ("2025-08-24T10:00:00Z", datetime(2025, 8, 24, 10, 0, tzinfo=UTC)),
    ("2025-08-24 10:00", datetime(2025, 8, 24, 10, 0)),
    ("2025-08-24 10:00:05.123+0200", datetime(2025, 8, 24, 10, 0, 5, tzinfo=timezone(timedelta(hours=2)))),
    ("2019-12-24, 12:23", datetime(2019, 12, 24, 12, 23)),
    ("2019-12-24,12:23:09", datetime(2019, 12, 24, 12, 23, 9)),
])
def test_read(raw, want):
    assert parse_iso(raw) == want


@pytest.mark.parametrize("raw", ["2025-02-30 10:00", "24.08.2025 10:00", "2025-08-24", "2025-08-24,, 10:00",
                                 "10:00", "2025-08-24 25:00"])
def test_refused(raw):
    assert parse_iso(raw) is None


@pytest.mark.parametrize(("hour", "meridiem", "want"), [
    (12, "AM", 0), (12, "p.m.", 12), (1, "PM", 13), (13, "p. m.", 13), (7, None, 7),
    (0, "a. m.", 0), (0, "PM", 12),  # the 0-11 clock (CLDR 'K') some locales pair with a meridiem
])
def test_clock_24h(hour, meridiem, want):
    assert clock_24h(hour, meridiem) == want
