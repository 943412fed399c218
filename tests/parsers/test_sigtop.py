"""sigtop's text export of a Signal Desktop chat: messages by their From/Type fields, events, quotes,
reactions, attachments and edits. Before this grammar such a file was read by the generic transcript
grammar, every field line (``Sent: ...``, ``Type: incoming``) a turn of its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import orjson

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.grammars.sigtop import Sigtop
from parsers.text import decode
from validators.accounting import Accountant

HEAD = "Conversation: Ann Lee (+4915112345678)\n\n"
ANN = "From: Ann Lee (+4915112345678)\nType: incoming\nSent: Fri, 1 Mar 2024 09:15:02 +0100\n"


def _parse(text: str):
    source = decode(text.encode(), "Ann Lee.txt")
    (session,) = Sigtop().parse(source, Settings())
    accounting = Accountant.of(source, lines=True, shape=Sigtop.turn_shape).account(session, True)
    assert accounting.clean, accounting.reason()
    assert Sigtop().count_turns(session.raw) == len(session.turns)
    return session


def test_messages_events_and_their_fields():
    text = (HEAD + ANN + "Received: Fri, 1 Mar 2024 09:15:03 +0100\nReaction: 👍 from You\n\n"
            "Morning!\n\nSecond line\n\n"
            "From: You\nType: outgoing\nSent: Fri, 1 Mar 2024 09:16:00 +0100\n"
            "Attachment: map.jpg (image/jpeg, 9 bytes)\n\n"
            "Type: group-v2-change\nSent: Fri, 1 Mar 2024 09:17:00 +0100\n\n")
    assert registry.detect(text, "Ann Lee.txt", threshold=Settings().detect_threshold).grammar == "sigtop"
    s = _parse(text)
    assert s.title == "Ann Lee (+4915112345678)"
    assert [(t.speaker, t.role, t.kind, t.content) for t in s.turns] == [
        ("Ann Lee", "user", "message", "Morning!\n\nSecond line"), ("You", "user", "media", "[attachment: map.jpg]"),
        ("System", "system", "notice", "[group-v2-change]")]
    assert s.turns[0].time == datetime(2024, 3, 1, 8, 15, 2, tzinfo=UTC)
    assert s.turns[0].time.utcoffset() == timezone(timedelta(hours=1)).utcoffset(None)
    assert s.turns[0].extra == {"reactions": [{"emoji": "👍", "from": "You"}], "recipient": "+4915112345678"}
    assert [x.line for x in s.shaped] == [4, 14]  # each Type line under a From line, declared


def test_a_quote_and_an_edit_history():
    text = (HEAD + ANN + "\n>From: You\n>Sent: Fri, 1 Mar 2024 09:10:00 +0100\n>\n> shall we?\n\nGreat\n\n"
            + ANN + "Edited: 2 versions\n\n|Version: 2\n|Sent: Fri, 1 Mar 2024 09:21:00 +0100\n|\n| at 10:15\n|\n"
            "|Version: 1\n|Sent: Fri, 1 Mar 2024 09:20:00 +0100\n|\n| at 10\n\n")
    quoted, edited = _parse(text).turns
    assert (quoted.content, quoted.extra["quote"], quoted.extra["quoteFrom"]) == ("Great", "shall we?", "You")
    assert (edited.content, edited.extra["edits"]) == ("at 10:15", 2)


def test_a_text_line_shaped_as_a_header_is_found_by_the_census():
    text = HEAD + ANN + "\nFrom: a line of text\n\n"
    source = decode(text.encode(), "Ann Lee.txt")
    (s,) = Sigtop().parse(source, Settings())
    assert not Accountant.of(source, lines=True, shape=Sigtop.turn_shape).account(s, True).clean


def test_the_product_writes_a_complete_document():
    text = HEAD + ANN + "\nMorning!\n\n"
    got = process_bytes(text.encode(), "Ann Lee.txt", RunContext.from_settings(Settings()))
    (doc,) = [orjson.loads(s.encoded) for s in got.sessions]
    assert doc["artifacts"]["ByggLogg"]["grammar"]["id"] == "sigtop"
    history = doc["artifacts"]["Chatthistorik"]
    assert history.get("coverage") != "partial" and history["interactions"][0]["date"] == "2024-03-01T08:15:02Z"
