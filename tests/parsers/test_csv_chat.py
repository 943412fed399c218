"""Chat logs as CSV/TSV: layouts by header, records over several lines, malformed records kept."""

from datetime import datetime

import pytest

from models.errors import ParseError
from models.settings import Settings
from parsers import registry
from parsers.grammars.csv_chat import CsvChat, dce_time
from parsers.text import decode
from validators.accounting import LineIndex, account

GRAMMAR = CsvChat()


def _parse(text, name="chat.csv"):
    source = decode(text.encode(), name)
    (session,) = GRAMMAR.parse(source, Settings())
    return source, session


def test_a_quoted_field_over_lines_is_one_turn_spanning_them():
    source, s = _parse('sender,time,text\nAnn,2024-01-01T10:00:00Z,"one\n\ntwo"\nBo,2024-01-01T10:01:00Z,ok\n')
    assert [(t.speaker, t.content, t.lines) for t in s.turns] == [("Ann", "one\n\ntwo", (2, 4)), ("Bo", "ok", (5, 5))]
    assert account(s, LineIndex(source.text)).clean and GRAMMAR.count_turns(s.raw) == 2


def test_a_record_with_the_wrong_field_count_is_kept_as_a_notice():
    source, s = _parse("timestamp\tauthor\tmessage\n2024-01-01 10:00:00\tAnn\thi\tstray\n")
    (turn,) = s.turns
    assert (turn.role, turn.kind, turn.content) == ("system", "notice", "2024-01-01 10:00:00\tAnn\thi\tstray")
    assert turn.extra == {"malformedRecord": "4 fields, the header has 3"}
    assert account(s, LineIndex(source.text)).clean


def test_times_iso_and_the_old_discord_default_others_never_guessed():
    assert dce_time("01-Jan-20 01:33 PM") == datetime(2020, 1, 1, 13, 33)
    assert dce_time("13/01/2020 01:33") is None
    _, s = _parse("date,from,body\n03/04/2024 10:00,Ann,hi\n")
    assert s.turns[0].time is None and s.turns[0].time_raw == "03/04/2024 10:00"
    assert any("could not be read" in w for w in s.warnings)


def test_a_role_column_gives_roles():
    _, s = _parse("role,content,created_at\nuser,q,2024-01-01T00:00:00Z\nassistant,a,2024-01-01T00:00:01Z\n")
    assert [(t.speaker, t.role) for t in s.turns] == [("user", "user"), ("assistant", "assistant")]


def test_csv_that_is_not_a_chat_is_not_claimed():
    sample = "id,name,price\n1,apple,0.5\n2,pear,0.7\n"
    assert GRAMMAR.detect(sample, "prices.csv") == 0.0
    with pytest.raises(ParseError):
        _parse(sample)


def test_the_discord_exporter_header_wins_over_the_generic_layout():
    text = 'AuthorID,Author,Date,Content,Attachments,Reactions\n"1","Ann","2024-01-01T00:00:00+00:00","hi","a.png",""\n'
    _, s = _parse(text)
    assert s.meta["csvLayout"] == "discordchatexporter" and s.turns[0].content == "hi\n[attachment: a.png]"
    assert registry.detect(decode(text.encode(), "c.csv").text, "c.csv", threshold=0.5).grammar == "csv-chat"
