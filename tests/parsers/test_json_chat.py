"""The generic JSON chat grammar: Google Chat Takeout times, Teams HTML and replies, detection margins."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.settings import Settings
from parsers import registry
from parsers.grammars.json_chat import JsonChat, chronological, google_time, html_text
from parsers.text import decode


def _parse(doc, name="export.json"):
    return list(JsonChat().parse(decode(orjson.dumps(doc), name), Settings()))


def _detect(doc, name="export.json"):
    return registry.detect(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode(), name,
                           threshold=Settings().detect_threshold)


@pytest.mark.parametrize("raw", ["Tuesday, March 2, 2021 at 1:15:22 PM UTC",
                                 "Tuesday, March 2, 2021 at 1:15:22\u202fPM UTC",
                                 "Tuesday, March 2, 2021 at 1:15:22\u00a0PM UTC"])
def test_google_chat_times_read_with_any_space_before_the_meridiem(raw):
    assert google_time(raw) == datetime(2021, 3, 2, 13, 15, 22, tzinfo=UTC)


@pytest.mark.parametrize("raw", ["Tuesday, March 2, 2021 at 1:15:22 PM PST", "Tuesday, March 2, 2021 at 1:15:22 PM",
                                 "Unknown Date", "Tuesday, Smarch 2, 2021 at 1:15:22 PM UTC",
                                 "Tuesday, February 30, 2021 at 1:15:22 PM UTC"])
def test_google_chat_times_not_in_utc_or_not_dates_are_left_empty(raw):
    assert google_time(raw) is None


@given(st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1)).map(
    lambda d: d.replace(microsecond=0)))
def test_google_chat_times_round_trip(when):
    hour = when.hour % 12 or 12
    raw = f"{when:%A, %B} {when.day}, {when.year} at {hour}:{when:%M:%S}\u202f{'PM' if when.hour >= 12 else 'AM'} UTC"
    assert google_time(raw) == when.replace(tzinfo=UTC)


def test_unreadable_google_time_is_warned_and_never_guessed():
    doc = {"messages": [{"creator": {"name": "Ann"}, "created_date": "Monday, May 6, 2024 at 9:00:00 AM CEST",
                         "text": "hi", "message_id": "a"}]}
    (session,) = _parse(doc)
    assert session.turns[0].time is None and session.turns[0].time_raw.endswith("CEST")
    assert any("could not be read" in w for w in session.warnings)


def test_teams_html_bodies_read_as_text():
    assert html_text("<p>One&nbsp;&amp; two</p><p>three<br/>four</p>") == "One & two\nthree\nfour"
    assert html_text('Hi <at id="0">Ann Lee</at>, <attachment id="9"></attachment>ok') == "Hi Ann Lee, ok"


def _teams(i, when, who, text, **kw):
    return {"id": str(i), "messageType": "message", "createdDateTime": when, "from": {"user": {"displayName": who}},
            "body": {"contentType": "text", "content": text}, **kw}


def test_teams_replies_nested_under_their_message_follow_it_oldest_first():
    replies = [_teams(3, "2024-01-01T10:09:00Z", "Cy", "second reply"),
               _teams(2, "2024-01-01T10:05:00Z", "Bo", "first")]
    doc = {"value": [_teams(4, "2024-01-01T11:00:00Z", "Ann", "later"),
                     _teams(1, "2024-01-01T10:00:00Z", "Ann", "question", replies=replies)]}
    (session,) = _parse(doc)
    assert [t.content for t in session.turns] == ["question", "first", "second reply", "later"]
    assert session.turns[1].pointer == "/value/1/replies/1"
    assert JsonChat().count_turns(session.raw) == 4


def test_teams_system_events_are_system_turns_with_their_initiator():
    event = {"id": "9", "messageType": "systemEventMessage", "createdDateTime": "2024-01-01T10:00:00Z", "from": None,
             "body": {"contentType": "html", "content": "<systemEventMessage/>"},
             "eventDetail": {"@odata.type": "#microsoft.graph.chatRenamedEventMessageDetail", "chatDisplayName": "Ops",
                             "initiator": {"user": {"displayName": "Ann Lee"}}}}
    (session,) = _parse({"value": [event]})
    turn = session.turns[0]
    assert (turn.speaker, turn.role, turn.extra["actor"]) == ("System", "system", "Ann Lee")
    assert turn.content.startswith("[systemEventMessage] ") and '"chatDisplayName":"Ops"' in turn.content


def test_an_entry_that_is_not_a_record_stays_a_turn():
    doc = {"room_name": "r", "messages": [{"type": "m.room.message", "sender": "@a:x", "origin_server_ts": 1,
                                           "content": {"body": "hi"}}, 42]}
    (session,) = _parse(doc)
    assert len(session.turns) == 2 and session.turns[1].extra == {"malformedEntry": True}


def test_unknown_keys_are_format_drift():
    doc = {"messages": [{"creator": {"name": "Ann"}, "created_date": "x", "text": "hi", "sparkles": 1}]}
    (session,) = _parse(doc)
    assert session.meta["formatDrift"]["key:sparkles"] == {"count": 1, "first": "/messages/0"}


@pytest.mark.parametrize("doc", [
    {"messages": [{"creator": {"name": "Ann"}, "created_date": "Tuesday, March 2, 2021 at 10:15:22 AM UTC",
                   "text": "hi", "topic_id": "t", "message_id": "m"}] * 3},
    {"room_name": "r", "messages": [{"type": "m.room.message", "sender": "@a:x", "origin_server_ts": 1700000000000,
                                     "content": {"msgtype": "m.text", "body": "hi"}, "event_id": "$1"}] * 3},
    {"value": [_teams(1, "2024-01-01T10:00:00Z", "Ann", "hi")] * 3},
])
def test_each_platform_is_detected_with_a_margin(doc):
    detection = _detect(doc)
    assert detection.grammar == "json-chat" and detection.margin >= 0.5, detection.scores


@pytest.mark.parametrize(("doc", "grammar"), [
    ({"participants": [{"name": "A"}], "messages": [{"sender_name": "A", "timestamp_ms": 1700000000000,
                                                     "content": "hi", "type": "Generic"}] * 3}, "messenger"),
    ({"ok": True, "messages": [{"type": "message", "user": "U1", "text": "hi", "ts": "1700000000.000100"}] * 3},
     "slack-api"),
])
def test_neighbours_keep_their_inputs(doc, grammar):
    detection = _detect(doc, "message_1.json")
    assert detection.grammar == grammar and detection.scores.get("json-chat", 0) == 0, detection.scores


def test_chronological_reads_a_newest_first_list_backwards_and_keeps_untimed_records_in_place():
    t = [datetime(2024, 1, 1, h, tzinfo=UTC) for h in range(4)]
    assert chronological([t[3], t[2], None, t[1], t[0]]) == ([4, 3, 2, 1, 0], True)
    assert chronological([t[0], None, t[2], t[2]]) == ([0, 1, 2, 3], False)


def test_hangouts_takeout_is_hangouts_not_json_chat():
    event = {"sender_id": {"gaia_id": "1"}, "timestamp": "1401010000000000", "event_type": "REGULAR_CHAT_MESSAGE",
             "chat_message": {"message_content": {"segment": [{"type": "TEXT", "text": "hi"}]}}}
    doc = {"conversations": [{"conversation": {"conversation": {"participant_data": []}}, "events": [event] * 3}]}
    detection = _detect(doc, "Hangouts.json")
    assert detection.grammar == "hangouts" and detection.margin >= 0.5, detection.scores


def test_a_hangouts_author_missing_from_the_directory_keeps_the_source_id():
    from parsers.grammars.hangouts import Hangouts
    event = {"sender_id": {"gaia_id": "42"}, "timestamp": "1401010000000000", "event_type": "REGULAR_CHAT_MESSAGE",
             "chat_message": {"message_content": {"segment": [{"type": "TEXT", "text": "a"},
                                                              {"type": "LINE_BREAK"}, {"type": "TEXT", "text": "b"}]}}}
    doc = {"conversations": [{"conversation": {"conversation": {"participant_data": []}}, "events": [event]}]}
    (session,) = Hangouts().parse(decode(orjson.dumps(doc), "Hangouts.json"), Settings())
    assert (session.turns[0].speaker, session.turns[0].content) == ("42", "a\nb")
    assert session.turns[0].time == datetime(2014, 5, 25, 9, 26, 40, tzinfo=UTC)


def test_teams_messages_with_equal_times_keep_the_api_order_newest_first():
    doc = {"value": [_teams(2, "2024-01-01T10:00:00Z", "Bo", "second"),
                     _teams(1, "2024-01-01T10:00:00Z", "Ann", "first")]}
    (session,) = _parse(doc)
    assert [t.content for t in session.turns] == ["first", "second"]
    assert chronological([None, None], newest=True) == ([1, 0], True)
