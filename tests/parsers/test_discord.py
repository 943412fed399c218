"""DiscordChatExporter exports: nickname beats name, event types as System turns, markers, raw times."""

from __future__ import annotations

import orjson
import pytest

from models.errors import ParseError
from models.records import RegionKind, SourceText
from models.settings import Settings
from parsers import registry
from tests.helpers import CONFORMANCE, GOLDEN, load_source
from validators.accounting import account

G = registry.get("discord")


def _msg(i, mtype="Default", content="hi", **author):
    return {"id": str(i), "type": mtype, "timestamp": "2024-01-01T10:00:00.5+01:00", "timestampEdited": None,
            "content": content, "author": {"id": "1", "name": "ann_1", "nickname": None, "isBot": False, **author},
            "attachments": [], "embeds": [], "reactions": [], "mentions": []}


def _parse(*messages, **doc):
    body = {"guild": {"id": "9", "name": "Guild"}, "channel": {"id": "77", "name": "general"},
            "messages": list(messages), **doc}
    text = orjson.dumps(body).decode()
    (s,) = G.parse(SourceText(text, "general.json", "0" * 64, len(text), "utf-8"), Settings())
    return s


@pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="../shared/conformance is absent")
def test_conformance_group_dm():
    (s,) = G.parse(load_source(CONFORMANCE / "fixtures" / "chatanalytics_discord_dce_GC_3A_5M.json"), Settings())
    assert [(t.speaker, t.role) for t in s.turns] == [
        ("System", "system"), ("theplant", "user"), ("System", "system"), ("lombi", "user"), ("mlomb", "user")]
    assert [t.extra.get("actor") for t in s.turns if t.role == "system"] == ["lombi", "lombi"]
    assert s.turns[4].extra["replyTo"] == "1064990824305274930"
    assert s.session_id == "1064990764406419508" and s.title == "Direct Messages / a group chat"
    assert s.turns[0].time.utcoffset().total_seconds() == 0 and s.turns[0].time_raw.endswith(".489+00:00")


def test_nickname_beats_name_and_name_is_the_fallback():
    s = _parse(_msg(1, nickname="Ann"), _msg(2))
    assert [t.speaker for t in s.turns] == ["Ann", "ann_1"]


@pytest.mark.parametrize("mtype", ["ChannelNameChange", "ChannelIconChange", "RecipientAdd", "Call", "ThreadCreated",
                                   "ChannelPinnedMessage", "GuildMemberJoin", "SomethingNew"])
def test_every_other_type_is_a_system_turn_with_the_author_as_actor(mtype):
    s = _parse(_msg(1, mtype, content="", nickname="Ann"))
    t = s.turns[0]
    assert (t.speaker, t.role, t.extra["actor"]) == ("System", "system", "Ann")
    assert t.content == mtype  # the exporter wrote no text: the type says what happened


@pytest.mark.parametrize("mtype", ["20", "ChatInputCommand", "23"])
def test_a_bots_reply_to_a_command_is_the_bots_turn_even_when_its_type_is_a_number(mtype):
    s = _parse(_msg(1, mtype, content="Rolled a 4", isBot=True, nickname="Dice"),
               _msg(2, "18", content="Started a thread."), _msg(3, "99", content=""))
    got = [(t.speaker, t.role, t.kind, t.content) for t in s.turns]
    assert got == [("Dice", "other", "message", "Rolled a 4"), ("System", "system", "system", "Started a thread."),
                   ("System", "system", "system", "99")]
    assert s.turns[0].extra["type"] == mtype and s.turns[0].extra.get("actor") is None
    assert s.meta["formatDrift"] == {"messageType:99": {"count": 1, "first": "/messages/2"}}


def test_bots_are_other_and_attachments_add_markers():
    m = _msg(1, "Reply", content="", isBot=True, name="ci")
    m["attachments"] = [{"id": "a", "url": "https://cdn/x.png", "fileName": "x.png", "fileSizeBytes": 1}]
    s = _parse(m)
    t = s.turns[0]
    assert (t.speaker, t.role, t.kind, t.content) == ("ci", "other", "media", "[attachment: x.png]")


def test_edit_and_call_end_are_kept_raw_and_count_mismatch_warns():
    m = _msg(1, "Call", content="Started a call.")
    m["timestampEdited"] = "2024-01-01T10:05:00+01:00"
    m["callEndedTimestamp"] = "2024-01-01T10:30:00+01:00"
    s = _parse(m, messageCount=3)
    assert s.turns[0].extra["editedRaw"] == "2024-01-01T10:05:00+01:00"
    assert s.turns[0].extra["callEndedRaw"] == "2024-01-01T10:30:00+01:00"
    assert s.warnings == ["messageCount says 3 but the export holds 1 messages"]


def test_extra_keys_follow_the_raw_time_convention():
    for path in (GOLDEN / "discord").glob("*.expected.json"):
        for session in orjson.loads(path.read_bytes()):
            for turn in session["turns"]:
                for key in turn["extra"] or {}:
                    assert key not in ("date", "timestamp") and not key.endswith(("At", "Date", "Timestamp"))


def test_detection_needs_guild_and_channel():
    frame = '{"guild": {"id": "0"}, "channel": {"id": "1"}, "dateRange": {}, "messages": ['
    assert G.detect(frame, "a.json") == 0.6  # nothing to count yet: the frame alone
    assert G.detect(frame + '{"type": "Default", "timestamp": "x", "author": {"name": "a"}, "content": "hi"}',
                    "a.json") == 1.0
    assert G.detect('{"channel": {"id": "1"}, "messages": [{"type": "message"}]}', "a.json") == 0.0


def test_unknown_keys_and_types_are_counted_as_drift():
    m = _msg(2, "SuperReaction", content="boom")
    m["sparkle"] = True
    s = _parse(_msg(1), m)
    assert s.turns[1].content == "boom"
    assert s.meta["formatDrift"] == {"key:sparkle": {"count": 1, "first": "/messages/1"},
                                     "messageType:SuperReaction": {"count": 1, "first": "/messages/1"}}


def _export(*messages, cid="77", name="general"):
    body = {"guild": {"id": "9", "name": "Guild"}, "channel": {"id": cid, "name": name},
            "messages": list(messages), "messageCount": len(messages)}
    return orjson.dumps(body).decode()


def _parts(files: dict[str, str]):
    """A partitioned export's files as one grouped source, parsed ("" text: a part that could not be read)."""
    parts = tuple(SourceText(text, f"dce/{name}", "0" * 64, len(text), "utf-8" if text else "unreadable")
                  for name, text in files.items())
    source = SourceText("", "dce/Guild - general [77].json", "0" * 64, 0, "utf-8", parts=parts)
    return list(G.parse(source, Settings())), source


def test_a_partitioned_channel_is_one_session_in_part_order_with_its_parts_named_in_pointers():
    files = {"Guild - general [77] [part 10].json": _export(_msg(10)),
             "Guild - general [77] [part 2].json": _export(_msg(2)),
             "Guild - general [77].json": _export(_msg(1))}
    files.update({f"Guild - general [77] [part {n}].json": _export(_msg(n)) for n in range(3, 10)})
    (s,), _ = _parts(files)
    assert [t.extra["messageId"] for t in s.turns] == [str(n) for n in range(1, 11)]
    assert s.turns[0].pointer == "/Guild - general [77].json/messages/0"
    assert s.turns[9].pointer == "/Guild - general [77] [part 10].json/messages/0"
    assert s.session_id == "77" and s.meta["declaredMessageCount"] == 10 and len(s.meta["files"]) == 10
    assert G.count_turns(s.raw) == 10 and s.coverage_reason is None and not s.warnings
    assert account(s, None).clean


def test_a_message_in_two_parts_is_kept_once_and_the_repeat_is_declared_and_said():
    (s,), _ = _parts({"Guild - general [77].json": _export(_msg(1), _msg(2)),
                      "Guild - general [77] [part 2].json": _export(_msg(2), _msg(3))})
    assert [t.extra["messageId"] for t in s.turns] == ["1", "2", "3"]
    assert [(r.kind, r.pointer) for r in s.regions] == [
        (RegionKind.DUPLICATE, "/Guild - general [77] [part 2].json/messages/0")]
    assert "/Guild - general [77].json/messages/1" in s.regions[0].reason
    assert s.warnings == ["1 messages appear twice in the export's parts and are kept once "
                          "(the repeats are declared duplicates): ids 2"]
    assert G.count_turns(s.raw) == 3 and account(s, None).clean


def test_parts_named_alike_that_hold_another_channel_are_a_session_of_their_own():
    sessions, _ = _parts({"Guild - general [77].json": _export(_msg(1)),
                          "Guild - general [77] [part 2].json": _export(_msg(2), cid="78", name="other")})
    assert [(s.session_id, len(s.turns)) for s in sessions] == [("77", 1), ("78", 1)]
    assert all("hold 2 channels" in s.warnings[-1] for s in sessions)


def test_an_unreadable_or_broken_part_makes_the_channel_partial_naming_it():
    (s,), _ = _parts({"Guild - general [77].json": _export(_msg(1)),
                      "Guild - general [77] [part 2].json": "",
                      "Guild - general [77] [part 3].json": '{"guild": {"id": "9"}, "messages": [{"id": "3", '})
    assert s.coverage_reason.startswith("2 parts of the export are not readable exports")
    assert "[part 2].json" in s.coverage_reason and "[part 3].json" in s.coverage_reason
    with pytest.raises(ParseError, match="none of the 1 parts"):
        _parts({"Guild - general [77] [part 2].json": ""})


def test_the_first_part_keeps_the_plain_name_as_discordchatexporter_writes_it():
    assert G.group_of("Guild - general [77] [part 2].json") == ("Guild - general [77].json", 2)
    assert G.group_of("Guild - general [77].json") is None  # a plain export: grouped only beside its parts
