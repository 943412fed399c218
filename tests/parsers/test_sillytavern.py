"""SillyTavern chat files: send dates in every form they take, roles, and what a swipe is."""

from datetime import UTC, datetime

import pytest

from parsers import registry
from parsers.grammars.sillytavern import send_time


@pytest.mark.parametrize(("raw", "want"), [
    ("May 1, 2024 10:00am", datetime(2024, 5, 1, 10, 0)),
    ("December 31, 2023 12:05am", datetime(2023, 12, 31, 0, 5)),
    ("December 31, 2023 12:05 PM", datetime(2023, 12, 31, 12, 5)),
    ("2024-5-1 @10h 07m 09s 123ms", datetime(2024, 5, 1, 10, 7, 9)),
    (1739302320000, datetime(2025, 2, 11, 19, 32, tzinfo=UTC)),
    ("2025-02-11T19:31:40.000Z", datetime(2025, 2, 11, 19, 31, 40, tzinfo=UTC)),
    ("February 30, 2024 10:00am", None),
    ("yesterday", None),
])
def test_send_dates(raw, want):
    assert send_time(raw)[0] == want


def test_a_chat_file_is_not_a_generic_json_lines_log():
    sample = ('{"user_name": "You", "character_name": "Bot", "create_date": "2024-05-01@10h00m00s", '
              '"chat_metadata": {}}\n'
              '{"name": "Bot", "is_user": false, "send_date": "May 1, 2024 10:00am", "mes": "hi"}\n'
              '{"name": "You", "is_user": true, "send_date": "May 1, 2024 10:01am", "mes": "hello"}\n')
    assert registry.detect(sample, "Bot - 2024-05-01@10h00m00s.jsonl", threshold=0.5).grammar == "sillytavern"
