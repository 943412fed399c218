"""The browser's pages over an output root (Starlette's TestClient): each page, its JSON twin, read-only."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from audit.browse import data
from audit.browse.app import create_app
from tests.audit.conftest import CHAT, IRC_KEY, KEY


def _tree(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def client(audited):
    return TestClient(create_app(audited, prefect_ui="http://127.0.0.1:4200"))


def _sessions(client, **params) -> list[str]:
    answer = client.get("/sessions", params={**params, "format": "json"}).json()
    return [s["session_key"] for s in answer["sessions"]]


def test_sessions_list_search_and_filters(client):
    assert sorted(_sessions(client)) == [IRC_KEY, KEY]
    assert _sessions(client, q="DEPLOY") == [KEY]  # contents, any case
    assert _sessions(client, q="Assistant") == [KEY]  # speakers
    assert _sessions(client, q="deploy noon") == [KEY]  # every word
    assert _sessions(client, q="deploy homelab") == []
    assert _sessions(client, q="deplo") == []  # whole words from the index...
    assert _sessions(client, q="deplo", match="substring") == [KEY]  # ...or any part, by a scan
    assert _sessions(client, platform="irc") == [IRC_KEY]
    assert _sessions(client, grammar="transcript", status="ok", coverage="full") == [KEY]
    assert _sessions(client, coverage="partial") == []
    assert _sessions(client, since="2024-03-01", until="2024-03-31") == [IRC_KEY]
    assert _sessions(client, until="2024-02-01") == []
    runs = client.get("/runs", params={"format": "json"}).json()["runs"]
    assert _sessions(client, run=runs[0]["run_id"]) == [KEY]  # the latest run rewrote the chat
    assert _sessions(client, sort="interactions", order="desc") == [IRC_KEY, KEY]
    assert _sessions(client, sort="interactions", order="asc") == [KEY, IRC_KEY]


def test_sessions_list_pages(client, monkeypatch):
    monkeypatch.setattr(data, "PAGE", 1)
    first = client.get("/sessions", params={"sort": "platform", "order": "asc", "format": "json"}).json()
    second = client.get("/sessions", params={"sort": "platform", "order": "asc", "page": 2, "format": "json"}).json()
    assert (first["total"], first["pages"]) == (2, 2)
    assert [s["platform"] for s in first["sessions"] + second["sessions"]] == ["irc", "transcript"]
    html = client.get("/sessions", params={"sort": "platform", "order": "asc"}).text
    assert 'id="next" href="/sessions?sort=platform&amp;order=asc&amp;page=2"' in html


def test_session_page_conversation_and_provenance(client):
    html = client.get(f"/session/{CHAT}").text
    assert "how is the deploy going" in html and f'id="session-key">{KEY}<' in html
    page = client.get(f"/session/{CHAT}", params={"format": "json"}).json()
    assert page["session_key"] == KEY and page["interaction_count"] == 4
    assert [r["kind"] for r in page["declared_regions"]] == ["session_header"]
    assert page["gate"]["sourceAccounting"] == "pass" and len(page["revisions"]) == 2
    deploy = page["interactions"][2]
    assert deploy["provenance"]["where"] == "lines 4-4"
    source = client.get(deploy["provenance"]["link"] + "&format=json").json()
    assert source["found"].endswith("chat.txt") and source["problem"] is None
    assert [line["text"] for line in source["excerpt"] if line["span"]] == ["User: how is the deploy going"]


def test_session_page_is_paged(client, monkeypatch):
    monkeypatch.setattr("audit.browse.app.TURNS_PAGE", 3)
    second = client.get(f"/session/{CHAT}", params={"page": 2, "format": "json"}).json()
    assert (second["page"], second["pages"]) == (2, 2) and [i["ordinal"] for i in second["interactions"]] == [4]


def test_revision_diff(client):
    answer = client.get(f"/diff/{CHAT}", params={"a": 0, "b": 1, "format": "json"}).json()
    assert [(m["ordinal"], m["change"], m["fields"]["content"]) for m in answer["messages"]] == [
        (3, "added", [None, "how is the deploy going"]), (4, "added", [None, "the deploy finished at noon"])]
    diff = answer["diff"]
    added = [d["line"] for d in diff if d["kind"] == "add"]
    assert any("the deploy finished at noon" in line for line in added)
    assert not [d for d in diff if d["kind"] == "del" and "mail me" in d["line"]]
    assert client.get(f"/diff/{CHAT}", params={"a": 0, "b": 7}).status_code == 404


def test_runs_run_and_quarantined_input(client, audited):
    runs = client.get("/runs", params={"format": "json"}).json()["runs"]
    assert len(runs) == 2 and runs[0]["prefect"] is None  # reconstruct() outside a flow: no flow run
    run = client.get(f"/runs/{runs[0]['run_id']}", params={"format": "json"}).json()
    assert run["counts"]["files_quarantined"] == 1 and [q["reasons"] for q in run["quarantine"]] == [["binary"]]
    assert [r["session_key"] for r in run["reconciliation"]] == [KEY, KEY]
    html = client.get(f"/runs/{runs[0]['run_id']}").text
    assert f"reconstruct rerun --out {audited} --run {runs[0]['run_id']}" in html
    key = run["quarantine"][0]["source_key"]
    page = client.get(f"/quarantine/{runs[0]['run_id']}/{key}", params={"format": "json"}).json()
    assert "control bytes" in page["entries"][0]["detail"] and page["records"][0]["reasons"] == ["binary"]


def test_prefect_flow_run_link(audited):
    from audit.browse.app import Pages

    pages = Pages(data.Archive(audited, audited / "ledger.sqlite"), "http://127.0.0.1:4200/")
    assert pages._flow_link({"prefect_flow_run_id": "abc"}) == "http://127.0.0.1:4200/runs/flow-run/abc"


def test_nothing_outside_sessions_and_nothing_written(client, audited):
    before = _tree(audited)
    for url in ("/sessions", f"/session/{CHAT}", f"/diff/{CHAT}", "/runs", "/sessions?q=hi"):
        assert client.get(url).status_code == 200
    assert client.get("/session/sessions/../ledger.sqlite").status_code == 404
    assert client.get("/session/ledger.sqlite", params={"format": "json"}).json()["error"] == "not_found"
    assert client.get("/quarantine/nope/x").status_code == 404
    assert _tree(audited) == before


def test_browse_command_serves_on_loopback_only(audited, monkeypatch):
    import uvicorn
    from typer.testing import CliRunner

    from flows.cli.app import app

    served = {}
    monkeypatch.setattr(uvicorn, "run", lambda application, **kw: served.update(kw, app=application))
    result = CliRunner().invoke(app, ["browse", str(audited), "--port", "8799"])
    assert result.exit_code == 0, result.output
    assert (served["host"], served["port"]) == ("127.0.0.1", 8799)
    assert TestClient(served["app"]).get("/sessions", params={"format": "json"}).json()["total"] == 2


def test_a_document_is_read_again_once_its_file_changes(audited, tmp_path):
    import os
    import shutil

    out = tmp_path / "out"
    shutil.copytree(audited, out)
    archive = data.Archive(out, out / "ledger.sqlite")
    assert archive.document(CHAT) is archive.document(CHAT)  # parsed once while unchanged
    path = out / CHAT
    path.write_bytes(path.read_bytes().replace(b"the deploy finished at noon", b"the deploy finished at one"))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    last = archive.document(CHAT)["artifacts"]["Chatthistorik"]["interactions"][3]
    assert last["content"] == "the deploy finished at one"


def test_the_title_is_listed_sorted_and_searched(tmp_path):
    from flows.pipeline import reconstruct
    from models.settings import Settings

    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    (src / "a.txt").write_text("Session: a\nTitle: Quarterly zanzibar review\nUser: hi\nAssistant: hello\n")
    (src / "b.txt").write_text("Session: b\nUser: hi there\nAssistant: hello again\n")
    reconstruct([src], out, Settings(workers=1))
    client = TestClient(create_app(out))

    def titles(**params) -> list[str | None]:
        answer = client.get("/sessions", params={**params, "format": "json"}).json()
        return [s["title"] for s in answer["sessions"]]

    assert titles(sort="title", order="asc") == ["Quarterly zanzibar review", None]  # null where none
    assert titles(q="zanzibar") == ["Quarterly zanzibar review"]  # a title's words are in the index
    assert titles(q="quarterly review") == ["Quarterly zanzibar review"]
    assert titles(q="zanzi", match="substring") == ["Quarterly zanzibar review"]
    assert "Quarterly zanzibar review" in client.get("/sessions").text
