"""The Skype export grammar: names, markup, order, and what an odd export becomes."""

import orjson
import pytest

from models.errors import ParseError
from models.settings import Settings
from parsers import registry
from parsers.grammars.skype import Skype, markup_text
from parsers.text import decode

SKYPE = Skype()


def _export(*conversations, user="8:live:me"):
    return {"userId": user, "exportDate": "2025-04-28T08:15:02Z", "conversations": list(conversations)}


def _conv(cid, messages, name=None):
    return {"id": cid, "displayName": name, "properties": {}, "threadProperties": None, "MessageList": messages}


def _msg(i, sender, content, when, mtype="RichText", name=None, **more):
    return {"id": str(i), "displayName": name, "originalarrivaltime": when, "messagetype": mtype,
            "content": content, "from": sender, "properties": None, **more}


def _parse(data):
    return list(SKYPE.parse(decode(orjson.dumps(data), "messages.json"), Settings()))


def test_markup_text_decodes_entities_keeps_link_targets_and_edit_marks():
    text, extra = markup_text('a &amp; b <a href="https://x.org/p">the page</a> <a href="https://y.org">'
                              'https://y.org</a><e_m a="live:me" ts_ms="1" ts="1" t="61"></e_m>')
    assert text == "a & b the page https://y.org"
    assert extra == {"edited": True, "links": ["https://x.org/p"]}


def test_names_come_from_the_export_never_invented():
    data = _export(
        _conv("8:live:bo", [_msg(2, "8:live:bo", "hi", "2025-01-01T10:00:05Z"),
                            _msg(1, "8:live:me", "hello", "2025-01-01T10:00:00Z")], name="Bo Berg"),
        _conv("19:g@thread.skype", [
            _msg(3, "8:live:cy", "<partlist type=\"ended\"><part identity=\"live:me\"><name>Me Myself</name>"
                 "</part></partlist>", "2025-01-02T10:00:00Z", mtype="Event/Call"),
            _msg(4, "8:live:cy", "yo", "2025-01-02T10:01:00Z", name="Cy"),
            _msg(5, "8:live:dee", "new here", "2025-01-02T10:02:00Z")], name="Group"))
    one, group = _parse(data)
    assert [t.speaker for t in one.turns] == ["Me Myself", "Bo Berg"]  # the call names me; the chat names Bo
    assert [t.speaker for t in group.turns] == ["System", "Cy", "live:dee"]  # nobody names dee: the bare id
    assert group.turns[2].extra["from"] == "8:live:dee"


def test_oldest_first_with_equal_times_in_reverse_list_order_and_bots():
    data = _export(_conv("28:bot", [_msg(3, "28:bot", "b", "2025-01-01T10:00:00Z"),
                                    _msg(2, "8:live:me", "a2", "2025-01-01T10:00:00Z"),
                                    _msg(1, "8:live:me", "a1", "2024-12-31T10:00:00Z")], name="Helper"))
    (s,) = _parse(data)
    assert [t.content for t in s.turns] == ["a1", "a2", "b"]
    assert (s.turns[2].speaker, s.turns[2].role, s.turns[2].extra["bot"]) == ("Helper", "other", True)


def test_media_deleted_and_activity():
    data = _export(_conv("19:g@thread.skype", [
        _msg(1, "8:live:me", '<URIObject type="Video.1/Message.1">To view this video, go to: x'
             '<OriginalName v="clip.mp4"/></URIObject>', "2025-01-01T10:00:00Z", mtype="RichText/Media_Video"),
        _msg(2, "8:live:me", "", "2025-01-01T10:01:00Z", properties={"deletetime": "1"}),
        _msg(3, "8:live:me", "<topicupdate><eventtime>1</eventtime><initiator>8:live:me</initiator>"
             "<value>Ops</value></topicupdate>", "2025-01-01T10:02:00Z", mtype="ThreadActivity/TopicUpdate"),
    ]))
    (s,) = _parse(data)
    assert (s.turns[0].kind, s.turns[0].content) == ("media", "[video: clip.mp4]\nTo view this video, go to: x")
    assert (s.turns[1].content, s.turns[1].extra["deleted"]) == ("", True)
    assert (s.turns[2].role, s.turns[2].content) == ("system", "TopicUpdate (eventtime: 1; initiator: 8:live:me; "
                                                               "value: Ops)")


def test_unknown_types_are_drift_and_odd_entries_still_turns():
    data = _export(_conv("8:live:bo", [_msg(1, "8:live:bo", "hey", "2025-01-01T10:00:00Z", mtype="Future/Thing"),
                                       "not an object"]))
    (s,) = _parse(data)
    assert len(s.turns) == SKYPE.count_turns(s.raw) == 2
    assert "messageType:Future/Thing" in s.meta["formatDrift"]


def test_a_large_export_is_recognised_before_its_first_message():
    head = '{\n  "userId": "8:live:me",\n  "exportDate": "2025-04-28T08:15:02Z",\n  "conversations": [\n'
    sample = head + '    {"id": "8:live:x", "displayName": "X", "properties": {"a": "' + "z" * 70000
    assert registry.detect(sample[:65536], "messages.json", threshold=0.5).grammar == "skype"


def test_not_an_export_is_a_parse_error():
    with pytest.raises(ParseError):
        _parse({"userId": "8:live:me", "conversations": {"not": "a list"}})
