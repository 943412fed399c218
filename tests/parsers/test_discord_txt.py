"""DiscordChatExporter's plain-text export: preamble, message blocks, sections, postamble count."""

from datetime import datetime

from models.settings import Settings
from parsers import registry
from parsers.grammars.discord_txt import DiscordTxt
from parsers.text import decode
from tests.helpers import read_one
from validators.accounting import LineIndex, account

GRAMMAR = DiscordTxt()
RULE = "=" * 62


def _parse(lines, name="Guild - chan [123456789012345678].txt"):
    source = decode(("\n".join(lines) + "\n").encode(), name)
    (session,) = read_one(GRAMMAR, source, Settings())
    return source, session


def _export(*messages, count=None):
    body = [RULE, "Guild: G", "Channel: C / chan", RULE, ""]
    for m in messages:
        body += [*m, "", ""]
    return [*body, RULE, f"Exported {count if count is not None else len(messages)} message(s)", RULE]


def test_day_first_dates_are_decided_from_the_whole_file_and_recorded():
    source, s = _parse(_export(["[05/03/2024 21:12] ann", "a"], ["[14/03/2024 07:30] bo", "b"]))
    assert [t.time for t in s.turns] == [datetime(2024, 3, 5, 21, 12), datetime(2024, 3, 14, 7, 30)]
    assert any("dmy" in a for a in s.assumptions)
    assert s.session_id == "123456789012345678" and s.title == "G / C / chan"
    assert account(s, LineIndex(source.text)).clean


def test_the_exporters_own_count_finds_a_message_the_parse_lost():
    _, s = _parse(_export(["[2024-03-05 21:12:00] ann", "a"], count=2))
    assert GRAMMAR.count_turns(s.raw) == 2 and len(s.turns) == 1  # the gate makes such a session partial


def test_sections_after_a_blank_line_are_not_content_but_a_section_word_in_text_is():
    _, s = _parse(_export(["[2024-03-05 21:12:00] ann", "see {Attachments} below", "", "{Attachments}", "https://x/a.png",
                           "", "{Reactions}", "👍 (2)"]))
    (t,) = s.turns
    assert t.content == "see {Attachments} below\n[attachment: https://x/a.png]"
    assert t.extra == {"reactions": "👍 (2)"}


def test_a_system_notification_is_a_system_turn_with_its_actor():
    _, s = _parse(_export(["[2024-03-05 21:12:00] ann", "Pinned a message."]))
    assert (s.turns[0].role, s.turns[0].speaker, s.turns[0].extra) == ("system", "System", {"actor": "ann"})


def test_only_the_exporters_preamble_is_claimed():
    plain = "[2024-03-05 21:12:00] ann\nhello\n"
    assert GRAMMAR.detect(plain, "x.txt") == 0.0
    text = "\n".join(_export(["[2024-03-05 21:12:00] ann", "hello"]))
    assert registry.detect(text, "x.txt", threshold=0.5).grammar == "discord-txt"
