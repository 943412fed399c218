"""Slack export day files: ids from the path, users.json resolution, events, bots, detection."""

from __future__ import annotations

import orjson
import pytest

from models.records import SourceText
from models.settings import Settings
from parsers import registry
from tests.helpers import GOLDEN
from validators.accounting import account

G = registry.get("slack")
USERS = orjson.dumps([{"id": "U1", "name": "ann", "real_name": "Ann A", "profile": {"display_name": "Ann"}},
                      {"id": "U2", "name": "bo", "profile": {"display_name": "", "real_name": "Bo B"}},
                      {"id": "U3", "name": "cibot", "is_bot": True, "profile": {"real_name": "CI"}}]).decode()


def _parse(messages, name="general/2024-01-01.json", companions=None):
    text = orjson.dumps(messages).decode()
    source = SourceText(text, name, "0" * 64, len(text), "utf-8", companions or {})
    (s,) = G.parse(source, Settings())
    return s


def _m(user="U1", text="hi", ts="1704103200.000100", **kw):
    return {"type": "message", "user": user, "text": text, "ts": ts, **kw}


def test_session_id_and_title_come_from_the_path():
    s = _parse([_m()], name="export/dev-ops/2024-01-01.json")
    assert (s.session_id, s.id_source, s.title) == ("dev-ops", "file-name", "#dev-ops")
    assert s.meta == {"channel": "dev-ops", "days": ["2024-01-01"]}


def test_users_json_resolves_ids_display_name_first():
    s = _parse([_m("U1"), _m("U2"), _m("U9", user_profile={"real_name": "Gil"}), _m("U8")],
               companions={"users.json": USERS})
    assert [t.speaker for t in s.turns] == ["Ann", "Bo B", "Gil", "U8"]
    assert s.assumptions == ["1 user ids kept as they are (not in users.json): U8"]


def test_without_users_json_ids_are_kept_and_said():
    s = _parse([_m("U1")])
    assert s.turns[0].speaker == "U1"
    assert "no users.json" in s.assumptions[0]


def test_ts_is_aware_utc_and_bad_ts_warns_once():
    s = _parse([_m(ts="1704103200.000100"), _m(ts="x"), _m(ts="y")])
    assert s.turns[0].time.isoformat() == "2024-01-01T10:00:00+00:00" and s.turns[0].time_raw == "1704103200.000100"
    assert [t.time for t in s.turns[1:]] == [None, None]
    assert len(s.warnings) == 1 and s.warnings[0].startswith("2 messages have a time")


@pytest.mark.parametrize(("subtype", "kind"), [("channel_join", "join"), ("channel_leave", "part"),
                                              ("channel_topic", "topic"), ("channel_purpose", "topic"),
                                              ("channel_name", "topic"), ("pinned_item", "system")])
def test_event_subtypes_are_system_turns_with_the_user_as_actor(subtype, kind):
    s = _parse([_m("U1", "<@U1> did something", subtype=subtype)], companions={"users.json": USERS})
    t = s.turns[0]
    assert (t.speaker, t.role, t.kind, t.extra["actor"]) == ("System", "system", kind, "Ann")


def test_bots_are_other_never_assistant():
    s = _parse([{"type": "message", "subtype": "bot_message", "bot_id": "B1", "username": "deploy", "text": "ok",
                 "ts": "1.0"},
                {"type": "message", "bot_id": "B2", "text": "", "ts": "2.0",
                 "attachments": [{"fallback": "Alert: disk full"}]},
                _m("U3", "build green", bot_id="B3")], companions={"users.json": USERS})
    assert [(t.speaker, t.role, t.content) for t in s.turns] == [
        ("deploy", "other", "ok"), ("B2", "other", "[attachment: Alert: disk full]"), ("CI", "other", "build green")]


def test_thread_replies_sit_next_to_their_parent():
    s = _parse([_m(text="parent", ts="1.0", thread_ts="1.0", reply_count=1), _m(text="other", ts="2.0"),
                _m(text="reply", ts="3.0", thread_ts="1.0")])
    assert [t.content for t in s.turns] == ["parent", "reply", "other"]
    assert [t.pointer for t in s.turns] == ["/0", "/2", "/1"]
    assert s.turns[1].extra["threadTs"] == s.turns[0].extra["ts"] == "1.0"


def test_channels_json_adds_the_channel_id():
    channels = orjson.dumps([{"id": "C1", "name": "general", "topic": {"value": "t"}}]).decode()
    s = _parse([_m()], companions={"channels.json": channels})
    assert s.meta == {"channel": "general", "channelId": "C1", "topic": "t", "days": ["2024-01-01"]}
    assert (s.session_id, s.id_source) == ("C1", "source:channels.json")


def test_companion_files_score_zero_and_day_files_score_their_explained_share():
    day = '[{"type": "message", "user": "U1", "text": "hi", "ts": "1704103200.000100"}]'
    assert G.detect(day, "general/2024-01-01.json") == 1.0
    assert G.detect(day, "general/export.json") == 1.0
    half = '[{"type": "message", "user": "U1", "text": "hi", "ts": "1.2"}, {"user": "U1", "text": "x", "when": 3}]'
    assert G.detect(half, "general/2024-01-01.json") == 0.5
    cut = day[:-1] + ", " + day[1:-10]  # a sample cut short in its last record still counts that record
    assert G.detect(cut, "general/2024-01-01.json") == 1.0
    for name in ("users.json", "channels.json", "export/users.json"):
        assert G.detect(day, name) == 0.0
    for path in (GOLDEN / "slack" / "acme").glob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert G.detect(text, f"acme/{path.name}") == 0.0
        assert G.detect(text, "acme/general/2024-01-01.json") == 0.0  # not message lists either
    page = '{"ok": true, "messages": [{"type": "message", "user": "U1", "text": "hi", "ts": "1.2"}]}'
    assert G.detect(page, "history.json") == 0.0  # a Web API page is the slack-api grammar's


def test_unknown_keys_and_subtypes_are_counted_as_drift_and_still_turns():
    s = _parse([_m(text="a", sparkle=1), _m(text="b", subtype="huddle_v9", sparkle=2), _m(text="c")])
    assert [t.content for t in s.turns] == ["a", "b", "c"]
    assert s.meta["formatDrift"] == {"key:sparkle": {"count": 2, "first": "/0"},
                                     "subtype:huddle_v9": {"count": 1, "first": "/1"}}
    assert "formatDrift" not in _parse([_m()]).meta


def test_an_empty_text_is_read_from_the_rich_text_blocks():
    section = {"type": "rich_text_section", "elements": [
        {"type": "text", "text": "ship it "}, {"type": "user", "user_id": "U2"}, {"type": "text", "text": " in "},
        {"type": "channel", "channel_id": "C9"}, {"type": "emoji", "name": "rocket"}]}
    items = {"type": "rich_text_list", "elements": [
        {"type": "rich_text_section", "elements": [{"type": "link", "url": "https://x.org", "text": "notes"}]},
        {"type": "rich_text_section", "elements": [{"type": "link", "url": "https://y.org"}]}]}
    blocks = [{"type": "rich_text", "elements": [section, items]}]
    s = _parse([_m(text="", blocks=blocks), _m(text="kept", ts="1704103201.000100", blocks=blocks)])
    assert s.turns[0].content == "ship it <@U2> in <#C9>:rocket:\n<https://x.org|notes>\n<https://y.org>"
    assert s.turns[0].extra["textFrom"] == "blocks"
    assert s.turns[1].content == "kept" and "textFrom" not in s.turns[1].extra


def test_message_changed_keeps_the_new_text_and_the_author():
    s = _parse([{"type": "message", "subtype": "message_changed", "ts": "2.0", "hidden": True,
                 "message": {"type": "message", "user": "U1", "text": "fixed typo", "ts": "1.0",
                             "edited": {"user": "U1", "ts": "2.0"}},
                 "previous_message": {"type": "message", "user": "U1", "text": "fixd typo", "ts": "1.0"}}],
               companions={"users.json": USERS})
    t = s.turns[0]
    assert (t.role, t.content, t.extra["actor"], t.extra["editedRaw"]) == ("system", "fixed typo", "Ann", "2.0")


def _channel(days, companions=None):
    parts = tuple(SourceText(text, f"export/general/{day}.json", "0" * 64, len(text), "utf-8")
                  for day, text in days)
    group = SourceText("", "export/general", "1" * 64, sum(p.size for p in parts), "utf-8", companions or {},
                       parts=parts)
    (s,) = G.parse(group, Settings())
    return s


def test_a_channel_is_one_session_over_its_day_files_with_threads_beside_their_parents():
    day1 = orjson.dumps([_m(text="parent", ts="100.0", thread_ts="100.0", reply_count=2), _m(text="a", ts="200.0"),
                         _m(text="r1", ts="300.0", thread_ts="100.0")]).decode()
    day2 = orjson.dumps([_m(text="b", ts="90000.0"), _m(text="r2", ts="90001.0", thread_ts="100.0")]).decode()
    s = _channel([("2024-01-01", day1), ("2024-01-02", day2)])
    assert [t.content for t in s.turns] == ["parent", "r1", "r2", "a", "b"]
    assert [t.pointer for t in s.turns] == ["/2024-01-01.json/0", "/2024-01-01.json/2", "/2024-01-02.json/1",
                                            "/2024-01-01.json/1", "/2024-01-02.json/0"]
    assert (s.session_id, s.title, s.meta["days"]) == ("general", "#general", ["2024-01-01", "2024-01-02"])
    assert G.count_turns(s.raw) == 5 and s.coverage_reason is None
    assert account(s, None).clean
    s.turns.pop(2)
    assert account(s, None).listed == ["/2024-01-02.json/1"]


def test_a_broken_day_file_in_a_channel_is_a_coverage_gap_not_a_failure():
    s = _channel([("2024-01-01", orjson.dumps([_m()]).decode()), ("2024-01-02", '[{"type": "mess'),
                  ("2024-01-03", "")])
    assert len(s.turns) == 1 and s.meta["days"] == ["2024-01-01"]
    assert s.coverage_reason == ("2 day files of the channel are not readable lists of messages: "
                                 "2024-01-02.json, 2024-01-03.json")


def test_enterprise_grid_org_users_json_resolves_names_and_root_files_are_companions():
    s = _parse([_m("U1")], companions={"org_users.json": USERS})
    assert s.turns[0].speaker == "Ann"
    assert {"canvases.json", "content_flags.json", "integration_logs.json"} <= set(G.companion_names)
