"""The pure merge of a session's snapshots (normalizers/snapshots.py): the issue's cases, by example."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from flows.core.process import process_group, process_text
from models.settings import Settings
from normalizers.assemble import RunContext
from normalizers.encode import encode_document
from normalizers.snapshots import Snapshot, merge, snapshot_of
from parsers.text import decode
from tests.helpers import ROOT, checker_module
from validators import gate
from validators.snapshots import check_merged

SETTINGS = Settings()


def documents(text: str, name: str, settings: Settings = SETTINGS, fmt: str | None = None) -> list[bytes]:
    """The gated documents of one input, as the pipeline encodes them."""
    if fmt:
        settings = settings.model_copy(update={"format": fmt})
    outcome = process_text(decode(text.encode(), name), RunContext.from_settings(settings))
    docs = [s.encoded for s in outcome.sessions if s.encoded]
    assert docs, outcome.detail
    return docs


def snap(text: str, name: str = "WhatsApp Chat with Hiking Club.txt", **kw) -> Snapshot:
    return snapshot_of(documents(text, name, **kw)[0])


def merged_ok(snapshots: list[Snapshot]):
    """The merge, checked as the flow checks it: the merge's accounting, the gate, the contract's checker."""
    out = merge(snapshots, SETTINGS)
    assert check_merged(out, snapshots) == []
    encoded = encode_document(out.document)
    counted = out.document["artifacts"]["ai_protocol_performance"]["sourceTurnCount"]
    assert gate.check(out.document, encoded, counted).failures == []
    checker = checker_module()  # ../shared is optional: test_merges_pass_the_contract_checker skips without it
    if checker is not None:
        problems, _ = checker.check_document(Path(out.document["sessionId"] + ".json"), encoded)
        assert problems == []
    return out


def contents(doc: dict) -> list[str]:
    return [i["content"] for i in doc["artifacts"]["Chatthistorik"]["interactions"]]


WA_1 = """[03/06/2024, 18:40:12] Grace Obi: Watering rota for June?
[03/06/2024, 18:41:05] Tom Reyes: Mondays are mine
[03/06/2024, 18:42:30] Grace Obi: Great, thanks Tom
[03/06/2024, 18:45:02] Tom Reyes: The tomatoes need staking too
[03/06/2024, 18:47:40] Ana Lind: I can bring canes on Friday
"""
# a month later: the chat went on; Tom deleted his tomatoes message, Ana edited hers
WA_2 = """[03/06/2024, 18:40:12] Grace Obi: Watering rota for June?
[03/06/2024, 18:41:05] Tom Reyes: Mondays are mine
[03/06/2024, 18:42:30] Grace Obi: Great, thanks Tom
[03/06/2024, 18:47:40] Ana Lind: I can bring canes on Saturday
[04/06/2024, 09:12:00] Grace Obi: Canes arrived
[05/06/2024, 20:01:33] Tom Reyes: Staked them all
"""


def test_merges_pass_the_contract_checker():
    """The independent checker of ../shared over a merged document (merged_ok asks it too when present)."""
    checker = checker_module()
    if checker is None:
        pytest.skip("../shared/tools/check_session_docs.py is absent: ../shared is not beside this checkout")
    out = merge([snap(WA_1), snap(WA_2)], SETTINGS)
    problems, _ = checker.check_document(Path(out.document["sessionId"] + ".json"), encode_document(out.document))
    assert problems == []


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_whatsapp_twice_one_deleted_one_edited(order):
    a, b = snap(WA_1), snap(WA_2)  # two exports: two keys, which the flow links on proof (tests/flows)
    pair = [(a, b)[i] for i in order]
    out = merged_ok(pair)
    doc = out.document
    items = doc["artifacts"]["Chatthistorik"]["interactions"]
    assert contents(doc) == ["Watering rota for June?", "Mondays are mine", "Great, thanks Tom",
                             "The tomatoes need staking too", "I can bring canes on Saturday", "Canes arrived",
                             "Staked them all"]
    assert [i["ordinal"] for i in items] == list(range(1, 8))
    assert items[3]["absent"] == "deleted" and items[3]["snapshots"] == [a.source_sha256]
    assert items[4]["editHistory"] == [{"content": "I can bring canes on Friday", "snapshots": [a.source_sha256]}]
    assert items[0]["snapshots"] == [a.source_sha256, b.source_sha256]
    assert all("absent" not in i for i in items if i is not items[3])
    log = doc["artifacts"]["ByggLogg"]
    assert [s["sha256"] for s in log["snapshots"]] == [a.source_sha256, b.source_sha256]
    assert log["source"]["sha256"] == b.source_sha256
    rec = out.reconciliation.to_dicts()
    assert [(r["new"], r["unchanged"], r["edited"], r["absent"]) for r in rec] == [(5, 0, 0, 0), (2, 3, 1, 1)]
    assert encode_document(doc) == encode_document(merged_ok([b, a]).document)


def test_merge_of_one_is_its_document():
    doc = documents(WA_1, "WhatsApp Chat with Hiking Club.txt")[0]
    out = merged_ok([snapshot_of(doc)])
    assert encode_document(out.document) == doc
    assert encode_document(merged_ok([snapshot_of(doc), snapshot_of(doc)]).document) == doc


def test_a_phone_in_another_zone_and_reencoded_text_match():
    shifted = WA_2.replace("18:4", "20:4").replace("\n", "\r\n").replace("Mondays are mine", "Mondays  are mine ")
    a, b = snap(WA_1), snap(shifted, "WhatsApp Chat with Hiking Club (1).txt")
    out = merged_ok([a, b])
    items = out.document["artifacts"]["Chatthistorik"]["interactions"]
    assert len(items) == 7
    latest = next(s for s in out.document["artifacts"]["ByggLogg"]["snapshots"] if s["latest"])
    assert abs(next(s for s in out.document["artifacts"]["ByggLogg"]["snapshots"]
                    if not s["latest"])["timeShiftHours"]) == 2
    assert latest["timeShiftHours"] == 0


def _chatgpt(conversations: list[dict]) -> str:
    return orjson.dumps(conversations).decode()


def _conversation(cid: str, title: str, messages: list[tuple[str, str, str, int]]) -> dict:
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": [messages[0][0]]}}
    parent = "root"
    for n, (mid, role, text, at) in enumerate(messages):
        nxt = [messages[n + 1][0]] if n + 1 < len(messages) else []
        mapping[mid] = {"id": mid, "parent": parent, "children": nxt, "message": {
            "id": mid, "author": {"role": role}, "create_time": at,
            "content": {"content_type": "text", "parts": [text]}}}
        parent = mid
    return {"id": cid, "conversation_id": cid, "title": title, "create_time": messages[0][3],
            "mapping": mapping, "current_node": messages[-1][0]}


def test_two_chatgpt_exports_a_month_apart():
    early = [("m1", "user", "What is polars?", 1700000000), ("m2", "assistant", "A DataFrame library.", 1700000010)]
    later = [*early, ("m3", "user", "And lazy frames?", 1702600000), ("m4", "assistant", "Deferred plans.", 1702600010)]
    first = documents(_chatgpt([_conversation("c1", "Polars", early)]), "conversations.json", fmt="chatgpt")
    second = documents(_chatgpt([_conversation("c1", "Polars", later),
                                 _conversation("c2", "New", [("n1", "user", "hi", 1702600100)])]),
                       "conversations.json", fmt="chatgpt")
    snaps = [snapshot_of(d) for d in first + second]
    assert [s.key for s in snaps] == ["chatgpt:c1", "chatgpt:c1", "chatgpt:c2"]
    out = merged_ok(snaps[:2])
    assert contents(out.document) == ["What is polars?", "A DataFrame library.", "And lazy frames?", "Deferred plans."]
    assert out.reconciliation["new"].to_list() == [2, 2]


SLACK_USERS = orjson.dumps([{"id": "U1", "name": "ann", "real_name": "Ann Lee"},
                            {"id": "U2", "name": "bo", "real_name": "Bo Berg"}]).decode()
SLACK_CHANNELS = orjson.dumps([{"id": "C01GEN", "name": "general", "created": 1700000000}]).decode()
PARENT = "1711962000.000100"


def _slack_day(*messages: tuple[str, str, str, str | None]) -> bytes:
    rows = []
    for ts, user, text, thread in messages:
        row = {"type": "message", "user": user, "text": text, "ts": ts, "team": "T01ACME"}
        if thread:
            row |= {"thread_ts": thread, "parent_user_id": "U1"}
        if ts == PARENT:
            row |= {"thread_ts": PARENT, "reply_count": 2}
        rows.append(row)
    return orjson.dumps(rows)


def _slack(days: dict[str, bytes]) -> Snapshot:
    parts = [(data, f"general/{day}.json") for day, data in sorted(days.items())]
    outcome = process_group(parts, "general", RunContext.from_settings(SETTINGS),
                            {"users.json": SLACK_USERS, "channels.json": SLACK_CHANNELS})
    return snapshot_of(outcome.sessions[0].encoded)


def test_slack_exports_of_overlapping_ranges():
    """Export A holds April 1-2, export B April 2-3: a message edited on the 2nd, a thread reply on the 3rd."""
    a = _slack({"2024-04-01": _slack_day((PARENT, "U1", "Release today?", None),
                                         ("1711962100.000200", "U2", "Yes, at five", PARENT)),
                "2024-04-02": _slack_day(("1712048400.000300", "U2", "Released", None),
                                         ("1712048500.000400", "U1", "Thanks!", None))})
    b = _slack({"2024-04-02": _slack_day(("1712048400.000300", "U2", "Released 2.4", None),
                                         ("1712048500.000400", "U1", "Thanks!", None)),
                "2024-04-03": _slack_day(("1712134800.000500", "U2", "Hotfix went out", PARENT),
                                         ("1712134900.000600", "U1", "Good morning", None))})
    assert a.key == b.key == "slack:C01GEN@T01ACME"  # a channel id within its workspace
    for pair in ([a, b], [b, a]):
        out = merged_ok(pair)
        items = out.document["artifacts"]["Chatthistorik"]["interactions"]
        assert contents(out.document) == ["Release today?", "Yes, at five", "Released 2.4", "Thanks!",
                                          "Hotfix went out", "Good morning"]
        assert [i.get("absent") for i in items] == ["outside_range", "outside_range", None, None, None, None]
        assert items[2]["editHistory"] == [{"content": "Released", "snapshots": [a.source_sha256]}]
        rows = out.reconciliation.to_dicts()
        assert [(r["new"], r["unchanged"], r["edited"], r["absent"]) for r in rows] == [(4, 0, 0, 0), (2, 1, 1, 2)]
    assert encode_document(merge([a, b], SETTINGS).document) == encode_document(merge([b, a], SETTINGS).document)


def test_one_message_met_hours_apart_is_no_zone_shift():
    a = snap("[03/06/2024, 09:00:00] Tom Reyes: ok\n[03/06/2024, 09:05:00] Grace Obi: Rota?\n")
    b = snap("[03/06/2024, 12:00:00] Tom Reyes: ok\n[03/06/2024, 12:30:00] Ana Lind: Canes?\n")
    out = merged_ok([a, b])
    assert [s["timeShiftHours"] for s in out.document["artifacts"]["ByggLogg"]["snapshots"]] == [0, 0]
    assert len(contents(out.document)) == 4


def test_transcripts_without_times_merge_by_place():
    a = snap("User: hello\nAssistant: hi there\nUser: tell me a joke\nAssistant: no\n", "chat.txt",
             fmt="transcript")
    b = snap("User: hello\nAssistant: hi there\nAssistant: no\nUser: thanks\nAssistant: bye\n", "chat.txt",
             fmt="transcript")  # the latest: without times, the one with more messages
    out = merged_ok([a, b])
    items = out.document["artifacts"]["Chatthistorik"]["interactions"]
    assert contents(out.document) == ["hello", "hi there", "tell me a joke", "no", "thanks", "bye"]
    assert [i.get("absent") for i in items] == [None, None, "deleted", None, None, None]


def test_media_omitted_and_the_attachment_name_are_one_message():
    """An export without media says <Media omitted> where one with media names the file."""
    head = "[03/06/2024, 18:40:12] Grace Obi: Rota?\n[03/06/2024, 18:40:30] Ana Lind: Mine is Monday\n"
    a = snap(head + "[03/06/2024, 18:41:05] Tom Reyes: <Media omitted>\n")
    b = snap(head + "[03/06/2024, 18:41:05] Tom Reyes: IMG-20240603-WA0001.jpg (file attached)\n"
             "[03/06/2024, 18:42:05] Tom Reyes: ok\n")
    out = merged_ok([a, b])
    assert contents(out.document) == ["Rota?", "Mine is Monday", "IMG-20240603-WA0001.jpg (file attached)", "ok"]
    assert out.reconciliation["unchanged"].to_list() == [0, 3]


def _export_slice(path: str, lo: int, hi: int, edit: int | None = None) -> bytes:
    """A sample export cut to messages[lo:hi] (another export's date range); ``edit``: that message's
    text changed, as the platform exports an edited message."""
    data = orjson.loads((ROOT / path).read_bytes())
    messages = [dict(m) for m in data["messages"]]
    if edit is not None:
        key = "content" if "content" in messages[edit] else "text"
        messages[edit][key] = "edited: " + str(messages[edit][key])
    data["messages"] = messages[lo:hi]
    if "messageCount" in data:
        data["messageCount"] = hi - lo
    if "personal_information" not in data and data.get("type") == "private_group":
        # a basic group's message ids are the exporting account's: one account's exports (a full export)
        data = {"about": "Here is the data you requested.", "personal_information": {"user_id": 5550001},
                "chats": {"about": "", "list": [data]}}
    return orjson.dumps(data)


@pytest.mark.parametrize(("path", "grammar"), [("sample_logs/discord/design-reviews.json", "discord"),
                                               ("sample_logs/telegram/result.json", "telegram")])
def test_exports_of_overlapping_ranges_by_message_id(path, grammar):
    n = len(orjson.loads((ROOT / path).read_bytes())["messages"])
    older = snapshot_of(documents(_export_slice(path, 0, n - 1).decode(), "old.json", fmt=grammar)[0])
    newer = snapshot_of(documents(_export_slice(path, 1, n, edit=2).decode(), "new.json", fmt=grammar)[0])
    assert older.key == newer.key
    whole = snapshot_of(documents(_export_slice(path, 0, n).decode(), "all.json", fmt=grammar)[0])
    for pair in ([older, newer], [newer, older]):
        out = merged_ok(pair)
        items = out.document["artifacts"]["Chatthistorik"]["interactions"]
        assert len(items) == whole.table.height
        assert [i.get("absent") for i in items] == ["outside_range"] + [None] * (n - 1)
        assert [i for i in items if "editHistory" in i] == [i for i in items if i.get("content", "").startswith(
            "edited: ")]
        rows = out.reconciliation.to_dicts()
        assert (rows[1]["new"], rows[1]["unchanged"], rows[1]["edited"], rows[1]["absent"]) == (1, n - 3, 1, 1)
        assert [r["expected"] for r in rows] == [r["reconstructed"] for r in rows]


def test_a_partial_snapshot_makes_the_merged_document_partial_and_is_named():
    a = snap(WA_1, settings=SETTINGS.model_copy(update={"max_turn_chars": 20}))
    b = snap(WA_2)
    assert a.head["artifacts"]["Chatthistorik"]["coverage"] == "partial"
    out = merged_ok([a, b])
    history = out.document["artifacts"]["Chatthistorik"]
    assert history["coverage"] == "partial"
    named = f"snapshot {a.source_sha256[:12]} (WhatsApp Chat with Hiking Club.txt): "
    assert history["coverageReason"].startswith(named)
    records = out.document["artifacts"]["ByggLogg"]["snapshots"]
    assert [("coverageReason" in r) for r in records] == [True, False]
    assert "coverage" not in merged_ok([b]).document["artifacts"]["Chatthistorik"]
