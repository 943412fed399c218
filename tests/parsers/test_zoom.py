"""The Zoom meeting chat grammar: its shapes, where a date comes from, and what it leaves to others."""

from datetime import datetime

import pytest

from models.settings import Settings
from parsers import registry
from parsers.grammars.zoom import Zoom, folder_start
from parsers.text import decode

ZOOM = Zoom()


def _parse(text: str, name: str = "meeting_saved_chat.txt"):
    return next(ZOOM.parse(decode(text.encode(), name), Settings()))


def _detect(text: str, name: str = "chat.txt") -> str:
    return registry.detect(text, name, threshold=0.5).grammar


@pytest.mark.parametrize(("name", "want"), [
    ("Zoom/2024-01-05 10.00.00 Sync 8123/meeting_saved_chat.txt", datetime(2024, 1, 5, 10, 0)),
    ("C:\\Users\\ann\\Documents\\Zoom\\2024-01-05 10.00.00 Sync\\meeting_saved_chat.txt", datetime(2024, 1, 5, 10)),
    ("2024-01-05 10.00.00/meeting_saved_chat.txt", datetime(2024, 1, 5, 10)),
    ("meeting_saved_chat.txt", None),
    ("2024-02-30 10.00.00 Sync/meeting_saved_chat.txt", None),  # not a calendar date: no date at all
    ("2024-01-05 10.00.00 Sync/sub/meeting_saved_chat.txt", None),  # only the file's own folder names it
])
def test_folder_start(name, want):
    assert folder_start(name) == want


def test_one_line_is_zoom_not_irc_and_weechat_stays_irc():
    zoom = "10:02:15\t From  Ann Lee : hi\n10:02:40\t From  Bo  to  Ann Lee(Direct Message) : hey\n"
    assert _detect(zoom) == "zoom"
    weechat = "2024-01-05 10:02:15\tann\thi\n2024-01-05 10:02:40\tbo\they\n"
    assert _detect(weechat) == "irc"


def test_two_line_turns_recipients_and_reactions():
    s = _parse("10:00:01 From Ann Lee to Everyone:\n\tfirst\n\tsecond\n"
               "10:00:09 From Bo to Ann Lee(privately):\n\tReacted to \"first\" with 🎉\n")
    assert [(t.speaker, t.content, t.kind) for t in s.turns] == [
        ("Ann Lee", "first\nsecond", "message"), ("Bo", 'Reacted to "first" with 🎉', "reaction")]
    assert s.turns[1].extra == {"private": True, "to": "Ann Lee", "reaction": "🎉", "reactedTo": "first"}
    assert [t.lines for t in s.turns] == [(1, 3), (4, 5)]


def test_dates_from_the_folder_with_midnight_and_no_invention_without_it():
    text = "23:59:50 From Ann to Everyone:\n\tlate\n00:00:10 From Bo to Everyone:\n\tlater\n"
    dated = _parse(text, "2024-01-05 23.30.00 Sync/meeting_saved_chat.txt")
    assert [t.time for t in dated.turns] == [datetime(2024, 1, 5, 23, 59, 50), datetime(2024, 1, 6, 0, 0, 10)]
    assert any("midnight passed 1" in a for a in dated.assumptions)
    undated = _parse(text)
    assert [t.time for t in undated.turns] == [None, None]
    assert [t.time_raw for t in undated.turns] == ["23:59:50", "00:00:10"]
    assert any("without a date" in w for w in undated.warnings)


def test_a_recording_chat_keeps_its_clocks_raw_even_in_a_dated_folder():
    s = _parse("00:03:10\tLena:\thello\n", "2024-01-05 10.00.00 Sync/chat.txt")
    assert (s.turns[0].speaker, s.turns[0].content, s.turns[0].time) == ("Lena", "hello", None)


def test_preamble_and_unshaped_clock_lines_are_declared_not_dropped():
    s = _parse("Chat of the weekly sync\n10:00:01 From Ann to Everyone:\n\thi\n10:00:05 From \n")
    assert s.regions[0].kind.value == "preamble" and s.regions[0].lines == (1, 1)
    assert [t.role for t in s.turns] == ["user", "system"]
    assert ZOOM.count_turns(s.raw) == len(s.turns)
    assert any("none of Zoom's shapes" in w for w in s.warnings)
