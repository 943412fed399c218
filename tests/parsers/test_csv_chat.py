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


def test_kakaotalks_csv_is_its_own_layout_with_its_placeholders_as_media():
    source, s = _parse('Date,User,Message\n2024-05-20 20:15:03,"지수","사진"\n'
                       '2024-05-20 20:16:00,"지수","파일: a.pdf"\n2024-05-20 20:17:00,"Ann","Photo"\n'
                       '2024-05-20 20:18:00,"Ann","사진 잘 나왔네"\n', "KakaoTalk_Chat_스터디_2024-05-21-08-02-11.csv")
    assert s.meta["csvLayout"] == "kakaotalk"
    assert [t.kind for t in s.turns] == ["media", "media", "media", "message"]
    assert s.turns[0].time == datetime(2024, 5, 20, 20, 15, 3)  # local time: the source zone applies
    assert account(s, LineIndex(source.text)).clean and GRAMMAR.count_turns(s.raw) == 4


def test_other_layouts_have_no_placeholders():
    _, s = _parse("timestamp;sender;message\n2024-06-01 08:00:05;Ann;Photo\n")
    assert s.meta["csvLayout"] == "generic" and s.turns[0].kind == "message"
