"""signal-export's chat.md: messages with the exporter's trailing spaces, replies, reactions,
attachments, stickers, deleted messages and calls. Before this grammar such a file was read by the
generic transcript grammar: the quote, the reactions and the attachment links stayed in the text,
the trailing spaces too, and a deleted message read as its placeholder words."""

from __future__ import annotations

from datetime import datetime

import orjson
import pytest

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.grammars.signal_export import SignalExport
from parsers.text import decode
from validators.accounting import LineIndex, account

CHAT = ("[2024-03-01 09:15:02] Ann Lee: Morning!  \n\n"
        "[2024-03-01 09:16:40] Me: Yes, 10 at the station.\nBring the map.  \n\n"
        "[2024-03-01 09:17:05] Ann Lee: \n\n> Yes, 10 at the station.\n> Bring the map.\n\n"
        "Great  \n(- Me: 👍, Bo: ❤ -)\n\n"
        "[2024-03-01 09:18:00] Me:   ![a_map.jpg](./media/a_map.jpg)  \n\n"
        "[2024-03-01 09:19:00] Ann Lee: (This message was deleted)\n\n"
        "[2024-03-01 20:02:11] Ann Lee: Missed voice call  \n\n"
        "[2024-03-01 20:09:00] Ann Lee:   \n(( 😀 ))\n\n")


def _parse(text: str, name: str = "Ann Lee/chat.md"):
    source = decode(text.encode(), name)
    (session,) = SignalExport().parse(source, Settings())
    assert account(session, LineIndex(source.text)).clean
    assert SignalExport().count_turns(session.raw) == len(session.turns)
    return session


@pytest.mark.parametrize("name", ["Ann Lee/chat.md", "export.md"])
def test_signal_export_wins_over_the_generic_transcript(name):
    detection = registry.detect(CHAT, name, threshold=Settings().detect_threshold)
    assert detection.grammar == "signal-export" and detection.margin >= registry.MARGIN, detection.scores


def test_a_plain_transcript_with_the_same_stamps_stays_a_transcript():
    text = "[2024-03-01 09:15:02] Ann: hi\n[2024-03-01 09:16:40] Bo: hello\n"
    assert SignalExport().detect(text, "notes.txt") == 0.0


def test_every_part_of_a_message_is_read_apart():
    s = _parse(CHAT)
    assert s.title == "Ann Lee"
    assert [(t.speaker, t.kind, t.content) for t in s.turns] == [
        ("Ann Lee", "message", "Morning!"), ("Me", "message", "Yes, 10 at the station.\nBring the map."),
        ("Ann Lee", "message", "Great"), ("Me", "media", "[attachment: a_map.jpg]"), ("Ann Lee", "message", ""),
        ("Ann Lee", "call", "Missed voice call"), ("Ann Lee", "media", "[sticker: 😀]")]
    assert s.turns[2].extra == {"quote": "Yes, 10 at the station.\nBring the map.",
                                "reactions": [{"from": "Me", "emoji": "👍"}, {"from": "Bo", "emoji": "❤"}]}
    assert s.turns[4].extra == {"deleted": True}
    assert s.turns[0].time == datetime(2024, 3, 1, 9, 15, 2)


def test_a_message_line_quoted_in_a_text_starts_a_turn_and_the_document_stays_complete():
    text = ("[2024-02-10 18:00:00] Ines: who?  \n\n"
            "[2024-02-10 18:03:15] Tomás: [2024-02-10 18:00:00] Ines: who?  \n\n")
    s = _parse(text)
    assert [t.content for t in s.turns] == ["who?", "[2024-02-10 18:00:00] Ines: who?"]


def test_the_product_writes_a_complete_document():
    got = process_bytes(CHAT.encode(), "Ann Lee/chat.md", RunContext.from_settings(Settings()))
    (doc,) = [orjson.loads(s.encoded) for s in got.sessions]
    assert doc["artifacts"]["ByggLogg"]["grammar"]["id"] == "signal-export"
    assert doc["artifacts"]["Chatthistorik"].get("coverage") != "partial"
    assert len(doc["artifacts"]["Chatthistorik"]["interactions"]) == 7
