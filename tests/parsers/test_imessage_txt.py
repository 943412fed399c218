"""imessage-txt: imessage-exporter's text export of an Apple Messages chat."""

from __future__ import annotations

from datetime import datetime

from models.records import SourceText
from models.settings import Settings
from parsers import registry

G = registry.get("imessage-txt")

CHAT = ("Dec 17, 2024  9:31:51 AM\nJess\nthe train is late\n\n"
        "Dec 17, 2024 10:14:08 PM (Read by Jess after 11 seconds)\nMe\nI'll pick you up\nat the station\n\n"
        "Jun 5, 2025 12:03:00 AM\n+15550001111\nstill up?\n")


def _parse(text: str, name: str = "Jess.txt"):
    (s,) = G.parse(SourceText(text, name, "0" * 64, len(text), "utf-8"), Settings())
    return s


def test_time_line_and_sender_start_a_turn_and_the_text_follows():
    s = _parse(CHAT)
    got = [(t.speaker, t.content, t.time, t.lines) for t in s.turns]
    assert got == [("Jess", "the train is late", datetime(2024, 12, 17, 9, 31, 51), (1, 4)),
                   ("Me", "I'll pick you up\nat the station", datetime(2024, 12, 17, 22, 14, 8), (5, 9)),
                   ("+15550001111", "still up?", datetime(2025, 6, 5, 0, 3), (10, 12))]
    assert s.turns[1].extra == {"receipt": "Read by Jess after 11 seconds"}
    assert s.turns[1].time_raw == "Dec 17, 2024 10:14:08 PM" and s.title == "Jess"
    assert G.count_turns(s.raw) == 3


def test_detection_wants_the_time_line_followed_by_a_sender():
    assert G.detect(CHAT, "Jess.txt") == 1.0
    assert G.detect("Dec 17, 2024  9:31:51 AM\n", "x.txt") == 0.0
    assert registry.detect(CHAT, "Jess.txt", threshold=0.5).grammar == "imessage-txt"
