"""IRC grammar: dialects, events as System turns, irssi dates, session ids."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.settings import Settings
from parsers import registry
from parsers.grammars.irc import event_of
from parsers.text import decode
from tests.helpers import CONFORMANCE

IRC = registry.get("irc")


def parse(text: str, name: str = "irc.log"):
    (session,) = IRC.parse(decode(text.encode(), name), Settings())
    assert IRC.count_turns(session.raw) == len(session.turns)
    return session


def test_supybot_conformance_fixture():
    path = CONFORMANCE / "fixtures" / "perceval_supybot_irc_2012_10_18.log"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/conformance is not beside this checkout)")
    s = parse(path.read_text(encoding="utf-8"), path.name)
    assert len(s.turns) == 8
    assert sum(t.role == "system" for t in s.turns) == 4
    assert {t.speaker for t in s.turns if t.role != "system"} == {"jamespage", "scuttlemonkey", "guyfry"}
    assert s.turns[0].time == datetime(2012, 10, 18, 9, 30, 30, tzinfo=UTC)
    assert (s.session_id, s.id_source) == ("ceph_2012-10-18", "source:channel")


def test_irssi_dates_come_from_log_opened_and_day_changed():
    s = parse("--- Log opened Thu Oct 18 23:58:00 2012\n23:59 <@alice> late\n--- Day changed Fri Oct 19 2012\n"
              "00:01 <+bob> early\n")
    assert [t.time for t in s.turns] == [datetime(2012, 10, 18, 23, 59), datetime(2012, 10, 19, 0, 1)]
    assert [t.speaker for t in s.turns] == ["alice", "bob"]
    assert [t.lines for t in s.turns] == [(2, 2), (4, 4)]
    assert s.meta["loggerLines"] == 2 and not s.warnings


def test_irssi_clock_without_a_date_has_no_time_and_one_warning():
    s = parse("10:00 <alice> hi\n10:01 <bob> hey\n")
    assert [t.time for t in s.turns] == [None, None]
    assert [t.time_raw for t in s.turns] == ["10:00", "10:01"]
    assert len(s.warnings) == 1 and s.warnings[0].startswith("2 turn times could not be read")


def test_events_are_system_turns_with_their_actor():
    s = parse(
        "2012-10-18 09:30:30\t-->\talice (~a@host) has joined #dev\n"
        "2012-10-18 09:30:31\t--\talice is now known as al\n"
        "2012-10-18 09:30:32\t--\tMode #dev [+o al] by ChanServ\n"
        "2012-10-18 09:30:33\t *\tal waves\n"
        "2012-10-18 09:30:34\t<--\tal (~a@host) has left #dev\n"
    )
    got = [(t.speaker, t.role, t.kind, t.extra) for t in s.turns]
    assert got == [
        ("System", "system", "join", {"actor": "alice"}),
        ("System", "system", "system", {"event": "nick", "newNick": "al", "actor": "alice"}),
        ("System", "system", "system", {"event": "mode", "actor": "ChanServ"}),
        ("al", "user", "action", None),
        ("System", "system", "part", {"actor": "al"}),
    ]
    assert s.turns[0].time == datetime(2012, 10, 18, 9, 30, 30)  # weechat: naive


def test_notices_and_kicks():
    assert event_of("bob was kicked from #x by alice [spam]") == (
        "part", "alice", {"target": "bob", "actor": "alice"})
    s = parse("2021-03-01T08:00:00Z  -NickServ- This nickname is registered\n")
    assert (s.turns[0].speaker, s.turns[0].kind) == ("NickServ", "notice")


def test_session_id_file_name_first_then_channel_else_none():
    text = "2012-10-18T09:30:30+0000  *** a has joined #ceph\n2012-10-18T09:31:00+0000  <a> hi\n"
    assert parse(text, "chat_ceph-day.log").session_id == "ceph-day"
    assert parse(text).session_id == "ceph_2012-10-18"
    two = text + "2012-10-18T09:32:00+0000  *** a has joined #other\n"
    s = parse(two)
    assert s.session_id is None and "2 channels" in s.assumptions[0]


def test_detect():
    assert IRC.detect("2012-10-18T09:30:30+0000  <jamespage> hi\n", "x.log") >= 0.9
    assert IRC.detect("10:00 <@nick> text\n10:01 -!- nick [~u@host] has joined #chan\n", "x.log") >= 0.9
    assert IRC.detect("just some text\n", "x.log") == 0.0


BRACKETED = ("--- Log opened Thu Oct 18 09:00:00 2012\n[09:00] <alice> morning all\n[09:01] * bob waves\n"
             "[09:01] *carol stretches\n[09:02] *** dave has joined #proj\n[09:03] -!- erin has quit [Ping timeout]\n"
             "[09:04:30] <@alice> meeting at ten\n")


def test_bracketed_clock_logs_are_irc_on_both_routes():
    from models.settings import Settings
    from parsers import registry
    from tests.helpers import parse_text
    g = registry.get("irc")
    assert registry.detect(BRACKETED, "proj.log", threshold=0.5).grammar == "irc"
    source, (s,) = parse_text("irc", BRACKETED, "proj.log")
    assert s.meta["dialect"] == "bracketed"
    assert [(t.speaker, t.kind) for t in s.turns] == [
        ("alice", "message"), ("bob", "action"), ("carol", "action"), ("System", "join"), ("System", "quit"),
        ("alice", "message")]
    assert s.turns[5].time.isoformat() == "2012-10-18T09:04:30" and g.count_turns(s.raw) == 6
    (c,) = g.parse_columns(source, Settings())
    assert c.frame["speaker"].to_list() == [t.speaker for t in s.turns]
