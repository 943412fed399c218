"""A conversation over several files (a Slack channel's day files) is one session; the ledger keeps every file."""

from __future__ import annotations

import shutil

import orjson
from typer.testing import CliRunner

from audit.ledger import Ledger
from flows.cli.app import app
from flows.core import ingest
from flows.exits import ExitCode
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import ROOT, key_document, run_checker

runner = CliRunner()


def _export(tmp_path):
    src = tmp_path / "acme-export"
    shutil.copytree(ROOT / "sample_logs" / "slack-export", src)
    return src


def _interactions(path):
    return orjson.loads(path.read_bytes())["artifacts"]["Chatthistorik"]["interactions"]


def test_ingest_groups_a_channel_folders_day_files(tmp_path):
    refs = ingest.discover([_export(tmp_path)], Settings())
    groups = {r.key: [p.key for p in r.parts] for r in refs if r.parts}
    assert groups == {
        "acme-export/design": ["acme-export/design/2024-04-02.json"],
        "acme-export/general": ["acme-export/general/2024-04-01.json", "acme-export/general/2024-04-02.json"],
    }
    assert sorted(r.key for r in refs if not r.parts) == ["acme-export/channels.json", "acme-export/users.json"]


def test_a_channel_is_one_session_with_a_thread_reply_from_a_later_day_beside_its_parent(tmp_path):
    out = tmp_path / "out"
    summary = reconstruct([_export(tmp_path)], out, Settings())
    assert summary.counts.sessions_ok == 2 and summary.counts.files == 5
    turns = _interactions(key_document(out, "slack", name="C01GENERAL.json"))
    assert [t["content"][:12] for t in turns] == ["<@U02OSKAR> ", "Welcome Oska", "Thanks, read", "Ping me if a",
                                                  "Deployed web", "Is the all-h", "15:00, room "]
    assert turns[3]["source"]["pointer"] == "/2024-04-02.json/0"
    ledger = Ledger(out / "ledger.sqlite")
    try:
        files = dict(ledger.db.execute("SELECT source_key, status FROM files").fetchall())
        sessions = ledger.db.execute("SELECT source_key, session_id, interactions FROM sessions").fetchall()
    finally:
        ledger.close()
    assert files["acme-export/general/2024-04-01.json"] == files["acme-export/general/2024-04-02.json"] == "ok"
    assert ("acme-export/general", "C01GENERAL", 7) in sessions
    again = reconstruct([tmp_path / "acme-export"], out, Settings())
    assert again.counts.files_skipped == 3


def test_a_broken_day_file_makes_the_channel_partial_and_names_the_file(tmp_path):
    src = _export(tmp_path)
    (src / "general" / "2024-04-03.json").write_text('[{"type": "message", "user": "U01MAJA", "te', encoding="utf-8")
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings())
    assert summary.counts.sessions_partial == 1
    doc = orjson.loads((key_document(out, "slack", name="C01GENERAL.json")).read_bytes())
    assert "2024-04-03.json" in doc["artifacts"]["Chatthistorik"]["coverageReason"]


def test_date_named_files_of_a_format_that_does_not_group_are_read_one_by_one(tmp_path):
    folder = tmp_path / "dce" / "general"
    folder.mkdir(parents=True)
    for day in ("2024-06-10", "2024-06-11"):
        shutil.copy(ROOT / "sample_logs" / "discord" / "design-reviews.json", folder / f"{day}.json")
    out = tmp_path / "out"
    summary = reconstruct([tmp_path / "dce"], out, Settings())
    assert summary.counts.sessions_ok == 2 and summary.counts.files == 2
    # the same channel read from each file: two snapshots with one sha256, one document (#15)
    assert len(list((out / "sessions" / "discord").rglob("*.json"))) == 1


def test_a_day_file_too_large_to_read_is_a_gap_in_its_channel(tmp_path):
    src = _export(tmp_path)
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings(max_file_bytes=700))
    assert summary.counts.sessions_partial >= 1
    doc = orjson.loads((key_document(out, "slack", name="C01GENERAL.json")).read_bytes())
    assert "2024-04-01.json" in doc["artifacts"]["Chatthistorik"]["coverageReason"]
    ledger = Ledger(out / "ledger.sqlite")
    try:
        row = ledger.db.execute("SELECT status, reasons FROM files WHERE source_key=?",
                                ("acme-export/general/2024-04-01.json",)).fetchone()
    finally:
        ledger.close()
    assert row == ("quarantined", "too_large")


def _telegram(tmp_path, pages=("messages.html", "messages2.html")):
    src = tmp_path / "tg" / "ChatExport_2021-03-14"
    src.mkdir(parents=True)
    sample = ROOT / "sample_logs" / "telegram_html" / "ChatExport_2021-03-14"
    for page in pages:
        shutil.copy(sample / ("messages2.html" if page != "messages.html" else page), src / page)
    return src.parent


def test_ingest_groups_a_telegram_chats_pages_in_page_order_and_leaves_a_lone_page_alone(tmp_path):
    root = _telegram(tmp_path, ("messages.html", "messages2.html", "messages10.html", "messages9.html"))
    lone = tmp_path / "tg" / "Other"
    lone.mkdir()
    shutil.copy(root / "ChatExport_2021-03-14" / "messages.html", lone / "messages.html")
    refs = {r.key: r for r in ingest.discover([root], Settings())}
    group = refs["tg/ChatExport_2021-03-14/messages.html"]
    assert [p.key.rsplit("/", 1)[1] for p in group.parts] == ["messages.html", "messages2.html", "messages9.html",
                                                               "messages10.html"]
    assert not refs["tg/Other/messages.html"].parts


def test_a_telegram_chats_pages_are_one_document_that_names_each_page(tmp_path):
    out = tmp_path / "out"
    summary = reconstruct([_telegram(tmp_path)], out, Settings())
    assert summary.counts.sessions_ok == 1 and summary.counts.files == 2
    path = key_document(out, "telegram-html", name="999.json")
    doc = orjson.loads(path.read_bytes())
    parts = [i["source"]["part"] for i in doc["artifacts"]["Chatthistorik"]["interactions"]]
    assert parts == ["messages.html"] * 7 + ["messages2.html"] * 4
    assert {r["part"] for r in doc["artifacts"]["ByggLogg"]["declaredRegions"]} == {"messages.html", "messages2.html"}
    assert doc["artifacts"]["ai_protocol_performance"]["sourceAccounting"]["unaccounted"] == 0
    checked = run_checker(path)
    assert checked.returncode == 0, checked.stdout
    ledger = Ledger(out / "ledger.sqlite")
    try:
        files = dict(ledger.db.execute("SELECT source_key, status FROM files").fetchall())
    finally:
        ledger.close()
    assert files == {"tg/ChatExport_2021-03-14/messages.html": "ok", "tg/ChatExport_2021-03-14/messages2.html": "ok"}


def test_an_undecodable_or_missing_telegram_page_makes_the_chat_partial_naming_it(tmp_path):
    root = _telegram(tmp_path, ("messages.html", "messages2.html", "messages4.html"))
    (root / "ChatExport_2021-03-14" / "messages2.html").write_bytes(b"<html>" + b"\xc3(" * 400)
    out = tmp_path / "out"
    summary = reconstruct([root], out, Settings())
    assert summary.counts.sessions_partial == 1
    path = key_document(out, "telegram-html", name="999.json")
    reason = orjson.loads(path.read_bytes())["artifacts"]["Chatthistorik"]["coverageReason"]
    assert "messages3.html (missing)" in reason and "messages2.html (not readable)" in reason


DCE = ROOT / "tests" / "golden" / "discord" / "partitioned"
RUNS = "Data Engineering - Ops - nightly-runs [901]"


def test_ingest_groups_the_parts_of_each_discord_channel_apart(tmp_path):
    shutil.copytree(DCE, tmp_path / "dce", ignore=shutil.ignore_patterns("*.expected.json"))
    groups = {r.name: [p.name.rsplit("/", 1)[1] for p in r.parts]
              for r in ingest.discover([tmp_path / "dce"], Settings()) if r.parts}
    assert groups == {
        "dce/Data Engineering - Ops - deploys [905].json": ["Data Engineering - Ops - deploys [905].json",
                                                            "Data Engineering - Ops - deploys [905] [part 2].json"],
        f"dce/{RUNS}.json": [f"{RUNS}.json", f"{RUNS} [part 2].json", f"{RUNS} [part 3].json"],
    }


def test_a_partitioned_discord_channel_is_one_document_where_the_whole_export_would_be(tmp_path):
    shutil.copytree(DCE, tmp_path / "dce", ignore=shutil.ignore_patterns("*.expected.json"))
    out = tmp_path / "out"
    summary = reconstruct([tmp_path / "dce"], out, Settings())
    assert summary.counts.sessions_ok == 2 and summary.counts.files == 5
    docs = sorted((out / "sessions" / "discord").rglob("*.json"))
    assert sorted(d.name for d in docs) == ["901.json", "905.json"]
    assert docs[0].parent != docs[1].parent  # two channels, two conversations
    runs = next(d for d in docs if d.name == "901.json")
    turns = orjson.loads(runs.read_bytes())["artifacts"]["Chatthistorik"]["interactions"]
    assert len(turns) == 7 and turns[-1]["source"]["pointer"] == f"/{RUNS} [part 3].json/messages/0"
    whole = tmp_path / "whole" / "dce"  # the same channel exported without --partition
    whole.mkdir(parents=True)
    merged = orjson.loads((DCE / f"{RUNS}.json").read_bytes())
    for n in (2, 3):
        merged["messages"] += orjson.loads((DCE / f"{RUNS} [part {n}].json").read_bytes())["messages"]
    (whole / f"{RUNS}.json").write_bytes(orjson.dumps(merged))
    reconstruct([whole], tmp_path / "out2", Settings())
    again = tmp_path / "out2" / runs.relative_to(out)
    assert [t["content"] for t in _interactions(again)] == [t["content"] for t in turns]


def test_a_rerun_of_one_file_of_a_conversation_takes_the_whole_conversation():
    day, page = ingest.InputRef("x/general/2024-04-02.json", "x/general/2024-04-02.json", "p"), \
        ingest.InputRef("x/tg/messages2.html", "x/tg/messages2.html", "p")
    channel = ingest.InputRef("x/general", "x/general", "p", parts=(day,))
    chat = ingest.InputRef("x/tg/messages.html", "x/tg/messages.html", "p", parts=(page,))
    alone = ingest.InputRef("x/a.txt", "x/a.txt", "p")
    found, gone = ingest.select([channel, chat, alone], [day.key, "x/tg/messages.html", "x/gone.txt"])
    assert found == [channel, chat] and gone == ["x/gone.txt"]


def _files(out):
    ledger = Ledger(out / "ledger.sqlite")
    try:
        run = ledger.runs.latest_id()
        return dict(ledger.db.execute("SELECT source_key, status FROM files WHERE run_id=?", (run,)).fetchall())
    finally:
        ledger.close()


def test_rerun_failed_of_a_slack_day_file_reruns_its_channel(prefect_harness, tmp_path, monkeypatch):
    src = _export(tmp_path)
    out = tmp_path / "out"
    monkeypatch.setenv("RECONSTRUCT_MAX_FILE_BYTES", "700")  # one day file is too large on the first run
    first = runner.invoke(app, ["run", str(src), "--out", str(out), "--workers", "1"])
    assert first.exit_code == ExitCode.QUARANTINED, first.output
    assert _files(out)["acme-export/general/2024-04-01.json"] == "quarantined"
    monkeypatch.delenv("RECONSTRUCT_MAX_FILE_BYTES")
    again = runner.invoke(app, ["rerun", "--failed", "--out", str(out)])
    assert again.exit_code == ExitCode.OK, again.output
    assert _files(out) == {"acme-export/general/2024-04-01.json": "ok", "acme-export/general/2024-04-02.json": "ok"}
    assert len(_interactions(key_document(out, "slack", name="C01GENERAL.json"))) == 7


def test_rerun_failed_of_a_telegram_page_reruns_its_chat(prefect_harness, tmp_path):
    root = _telegram(tmp_path)
    page = root / "ChatExport_2021-03-14" / "messages2.html"
    good = page.read_bytes()
    page.write_bytes(b"<html>" + b"\xc3(" * 400)
    out = tmp_path / "out"
    first = runner.invoke(app, ["run", str(root), "--out", str(out), "--workers", "1"])
    assert first.exit_code == ExitCode.QUARANTINED, first.output
    assert _files(out) == {"tg/ChatExport_2021-03-14/messages.html": "partial",
                           "tg/ChatExport_2021-03-14/messages2.html": "quarantined"}
    page.write_bytes(good)
    again = runner.invoke(app, ["rerun", "--failed", "--out", str(out)])
    assert again.exit_code == ExitCode.OK, again.output
    assert _files(out) == {"tg/ChatExport_2021-03-14/messages.html": "ok",
                           "tg/ChatExport_2021-03-14/messages2.html": "ok"}
    doc = key_document(out, "telegram-html", name="999.json")
    assert len(_interactions(doc)) == 11


def test_a_vk_peers_pages_are_one_document_in_offset_order(tmp_path):
    """VK's archive pages (messages0.html, messages50.html) are grouped by ingest and read as one session."""
    src = tmp_path / "vk" / "messages" / "2000000001"
    shutil.copytree(ROOT / "tests" / "golden" / "vk-html" / "messages" / "2000000001", src,
                    ignore=shutil.ignore_patterns("*.json"))
    refs = {r.key: r for r in ingest.discover([tmp_path / "vk"], Settings())}
    group = refs["vk/messages/2000000001/messages.html"]
    assert [p.key.rsplit("/", 1)[1] for p in group.parts] == ["messages0.html", "messages50.html"]
    out = tmp_path / "out"
    summary = reconstruct([tmp_path / "vk"], out, Settings())
    assert summary.counts.sessions_ok == 1 and summary.counts.files == 2
    doc = orjson.loads(key_document(out, "vk-html", name="2000000001.json").read_bytes())
    parts = [i["source"]["part"] for i in doc["artifacts"]["Chatthistorik"]["interactions"]]
    assert parts == ["messages50.html"] * 2 + ["messages0.html"] * 3  # oldest first: the later page holds the older
    assert doc["artifacts"]["ai_protocol_performance"]["sourceAccounting"]["unaccounted"] == 0
