"""IRC grammar: dialects, events as System turns, irssi dates, session ids."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.grammars.irc import DIALECTS, counted_by_dialect, event_of
from parsers.text import decode
from tests.helpers import CONFORMANCE, columns_of, read_one

IRC = registry.get("irc")


def parse(text: str, name: str = "irc.log"):
    (session,) = read_one(IRC, decode(text.encode(), name))
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
    s = parse("[09:16:36] -repo-commit-feed- [proj] ann pushed 2 commits\n"
              "[09:16:40] -ChanServ(ChanServ@services.)- hi\n", "#proj_20230412.log")
    assert [(t.speaker, t.content) for t in s.turns] == [
        ("repo-commit-feed", "[proj] ann pushed 2 commits"), ("ChanServ", "hi")]


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
    (c,) = columns_of(g, source)
    assert c.frame["speaker"].to_list() == [t.speaker for t in s.turns]


XCHAT = ("**** BEGIN LOGGING AT Mon Dec 31 22:40:02 2018\n\ndec 31 22:40:02 --> You are now talking on #ny\n"
         "dec 31 23:59:50 <mika>\tten seconds!\ndec 31 23:59:58 *\true raises a glass\n"
         "jan 01 00:00:01 <rue> happy new year\nJan 01 00:00:04 ---\tmika is now known as mika_zz\n"
         "**** ENDING LOGGING AT Tue Jan  1 00:10:00 2019\n")


def _both_routes(text: str, name: str):
    """The session by the line engine, after checking the column route reads the same turns."""
    source = decode(text.encode(), name)
    (s,) = read_one(IRC, source, Settings())
    (c,) = columns_of(IRC, source)
    assert c.frame["speaker"].to_list() == [t.speaker for t in s.turns]
    assert c.frame["time"].to_list() == [t.time for t in s.turns]
    assert c.frame["kind"].to_list() == [t.kind for t in s.turns]
    assert (c.assumptions, c.warnings, c.regions) == (s.assumptions, s.warnings, s.regions)
    assert IRC.count_turns(s.raw) == len(s.turns)
    return s


def test_xchat_and_hexchat_logs_take_their_year_from_begin_logging_on_both_routes():
    assert registry.detect(XCHAT, "#ny.log", threshold=0.5).grammar == "irc"
    s = _both_routes(XCHAT, "#ny.log")
    assert s.meta["dialect"] == "xchat" and s.meta["loggerLines"] == 2
    assert [(t.speaker, t.kind, t.time) for t in s.turns] == [
        ("System", "system", datetime(2018, 12, 31, 22, 40, 2)),
        ("mika", "message", datetime(2018, 12, 31, 23, 59, 50)),
        ("rue", "action", datetime(2018, 12, 31, 23, 59, 58)), ("rue", "message", datetime(2019, 1, 1, 0, 0, 1)),
        ("System", "system", datetime(2019, 1, 1, 0, 0, 4))]
    assert s.turns[1].content == "ten seconds!"  # hexchat's tab after the nick is no part of the text
    assert [r.lines for r in s.regions] == [(1, 2), (8, 8)]


def test_an_xchat_log_without_begin_logging_keeps_no_date():
    s = _both_routes("dec 31 23:59:50 <mika> ten seconds!\n", "#ny.log")
    assert s.turns[0].time is None and s.turns[0].time_raw == "dec 31 23:59:50" and s.warnings


ZNC = "[09:00:12] *** Joins: nadia (~nadia@203.0.113.7)\n[09:01:40] <nadia> hi\n[23:59:59] * nadia waves\n"


@pytest.mark.parametrize("name", ["#chan_2024-03-05.log", "2024-03-05.log", "#chan.20240305.log",
                                  "libera_#chan_20240305.log", "moddata/log/me/libera/#chan/2024-03-05.log",
                                  "#chan.2024.03.05.log"])
def test_clock_only_logs_are_dated_from_the_file_name_as_an_assumption(name):
    s = _both_routes(ZNC, name)
    assert [t.time for t in s.turns] == [datetime(2024, 3, 5, 9, 0, 12), datetime(2024, 3, 5, 9, 1, 40),
                                         datetime(2024, 3, 5, 23, 59, 59)]
    assert s.assumptions[0].startswith("3 clock times dated 2024-03-05, the date in the file name")
    assert not s.warnings


@pytest.mark.parametrize("name", ["#chan.log", "znc/#chan/latest.log", "#chan_2024-13-05.log", "chan_v20.log"])
def test_a_clock_only_log_whose_name_holds_no_date_keeps_no_invented_date(name):
    s = _both_routes(ZNC, name)
    assert [t.time for t in s.turns] == [None, None, None]
    assert [t.time_raw for t in s.turns] == ["09:00:12", "09:01:40", "23:59:59"]
    assert not s.assumptions
    assert s.warnings == ["3 turn times could not be read (a clock time before any Day changed/Log opened date):"
                          " time left empty, raw text kept"]


def test_the_logs_own_date_lines_win_over_the_file_name():
    text = "[08:00:00] <a> before\n--- Day changed Wed Mar 06 2024\n[09:00:00] <b> after\n"
    s = _both_routes(text, "#chan_2024-03-05.log")
    assert [t.time for t in s.turns] == [datetime(2024, 3, 5, 8), datetime(2024, 3, 6, 9)]
    assert s.assumptions[0].startswith("1 clock time dated 2024-03-05")


def test_the_file_name_date_is_in_the_document_as_an_assumption():
    got = process_bytes(ZNC.encode(), "#chan_2024-03-05.log", RunContext.from_settings(Settings()))
    (doc,) = [orjson.loads(s.encoded) for s in got.sessions]
    assert any("the date in the file name" in a for a in doc["artifacts"]["ByggLogg"]["assumptions"])
    assert doc["artifacts"]["Chatthistorik"]["interactions"][0]["date"] == "2024-03-05T09:00:12Z"


def test_zncs_joins_parts_and_quits_are_events_with_their_actor():
    text = ("[09:00] *** Joins: nadia (~n@h)\n[09:01] *** Parts: nadia (~n@h) (lunch)\n"
            "[09:02] *** Quits: omar (~o@h) (Ping timeout)\n")
    s = _both_routes(text, "#chan_2024-03-05.log")
    assert [(t.kind, t.extra["actor"]) for t in s.turns] == [("join", "nadia"), ("part", "nadia"), ("quit", "omar")]


WEECHAT = ("2024-03-08 19:00:00\t****  Beginning of log  ****\n2024-03-08 19:01:12\t@tomas\tmorning\n"
           "2024-03-08 19:01:30\t<ines>\thello\n2024-03-08 19:02:00\t\tirc: disconnected from server\n"
           "2024-03-08 19:02:05\t=!=\tirc: unable to connect\n2024-03-08 19:04:01\t****  End of log  ****\n")


def test_weechat_info_lines_empty_prefixes_errors_and_bracketed_nicks():
    s = _both_routes(WEECHAT, "irc.libera.#weechat.weechatlog")
    assert [(t.speaker, t.role, t.content) for t in s.turns] == [
        ("tomas", "user", "morning"), ("ines", "user", "hello"), ("System", "system", "irc: disconnected from server"),
        ("System", "system", "irc: unable to connect")]
    assert [r.lines for r in s.regions] == [(1, 1), (6, 6)] and s.meta["loggerLines"] == 2


@pytest.mark.parametrize(("name", "sid"), [("znc/#homelab/2024-03-05.log", "homelab_2024-03-05"),
                                           ("libera_#homelab_20240305.log", "homelab_2024-03-05"),
                                           ("2024-03-05.log", None), ("#a/#b_2024-03-05.log", None)])
def test_a_log_naming_no_channel_takes_it_from_its_path(name, sid):
    s = _both_routes(ZNC, name)
    assert s.session_id == sid
    assert (s.id_source == "source:channel in the file's path") == (sid is not None)


_LINE_PARTS = ["10:00 <ann> hi", "[10:00] <ann> hi", "dec 31 21:11:58 <ann> hi", "2012-10-18 09:30:30\tann\thi",
               "2012-10-18 09:30:30\t****  Beginning of log  ****", "2012-10-18T09:30:30+0000  <ann> hi",
               "2012-10-18T09:30:30", "2012-10-18T09:30:30\u001c", "text", "", " 10:00 indented", "Dec  1 10:00:00\t"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_LINE_PARTS), max_size=12), st.booleans())
def test_the_survey_counts_every_dialect_as_count_turns_does(parts, final_newline):
    """The survey's one-pass count in every dialect equals ``count_turns`` in each (the gate's count of a
    streamed log is the survey's)."""
    text = "\n".join(parts) + ("\n" if final_newline else "")
    assert counted_by_dialect(text) == {d: IRC.count_turns((d, text)) for d in DIALECTS}
