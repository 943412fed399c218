"""Issue 12 item 14: no secret reaches any output artifact (documents, quarantine records, blobs,
index.json, the ledger, Parquet, CSV, the report). Every value here is FAKE, built from pieces."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import polars as pl

from audit.export import Format
from audit.export import write as write_datasets
from audit.ledger import Ledger
from audit.report import write_report
from flows.pipeline import reconstruct
from models.settings import Settings
from normalizers.secrets import Redactor

GHP = "gh" + "p_" + "Q" * 36
SK = "sk-" + "W" * 40
JWT = "ey" + "J" + "R" * 10 + ".ey" + "J" + "T" * 10 + "." + "U" * 12
AKIA = "AK" + "IA" + "V" * 16
PEM_BODY = "MIIE" + "X" * 60
PGP_BODY = "lQO" + "Y" * 60
CORES = {
    "env assignment": "hunter" + "2envpass",
    "json password": "jsonpass" + "Z9z9",
    "url password with @": "p@ss" + "w0rdZ",
    "pgp block": PGP_BODY,
    "pem without end": PEM_BODY,
    "github token": "Q" * 36,
    "openai key": "W" * 40,
    "jwt": "T" * 10,
    "aws key id": "V" * 16,
}

TRANSCRIPT = f"""Session: {SK}
[2025-01-01 10:00:00] User: DB_PASSWORD={CORES['env assignment']} and {{"password": "{CORES['json password']}"}}
[2025-01-01 10:00:05] Assistant: use postgres://admin:{CORES['url password with @']}@db.example.org:5432/app
[2025-01-01 10:00:09] User: -----BEGIN PGP PRIVATE KEY BLOCK-----
{PGP_BODY}
-----END PGP PRIVATE KEY BLOCK-----
[2025-01-01 10:00:12] Assistant: and this one -----BEGIN RSA PRIVATE KEY-----
{PEM_BODY}
[2025-01-01 10:01:00] {AKIA}: hi from a key
[2025-01-01 10:01:05] {AKIA}: again
"""


def _chatgpt() -> str:
    def node(nid, parent, children, role, text, meta=None):
        return {"id": nid, "parent": parent, "children": children, "message": {
            "id": nid, "author": {"role": role}, "create_time": 1700000001.0,
            "content": {"content_type": "text", "parts": [text]}, "metadata": meta or {}}}
    return json.dumps([{
        "id": "conv-1", "title": f"keys {GHP}", "create_time": 1700000000.0, "current_node": "b",
        "mapping": {
            "root": {"id": "root", "parent": None, "children": ["a"], "message": None},
            "a": node("a", "root", ["b"], "user", "look"),
            "b": node("b", "a", [], "assistant", "done", {
                "model_slug": "gpt-4o", "citations": [{"url": f"https://x.example/?t={JWT}", "title": GHP}],
                "attachments": [{"name": f"{GHP}.txt"}]}),
        },
    }])


def _texts(out: Path) -> dict[str, str]:
    """Every artifact under OUT as text: files as they are, SQLite and Parquet through their readers."""
    texts = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = str(path.relative_to(out))
        if path.suffix == ".parquet":
            texts[rel] = pl.read_parquet(path).write_ndjson()  # nested columns too (lists of reasons)
        elif path.name.startswith("ledger.sqlite"):
            if path.name == "ledger.sqlite":
                db = sqlite3.connect(path)
                texts[rel] = "\n".join(db.iterdump())
                db.close()
        else:
            texts[rel] = path.read_bytes().decode("utf-8", errors="replace")
        texts[f"name:{rel}"] = rel
    return texts


def test_no_secret_reaches_any_output_artifact(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "chat.txt").write_text(TRANSCRIPT)
    (src / f"notes-{GHP}.txt").write_text("Session: n-1\nUser: hello\nAssistant: hi\n")
    (src / "conversations.json").write_text(_chatgpt())
    (src / f"empty-{SK}.txt").write_text("")
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings())
    assert summary.counts.sessions_ok + summary.counts.sessions_partial == 3, summary.quarantined
    ledger = Ledger(out / "ledger.sqlite")
    try:
        write_report(out, ledger)
        write_datasets(out, ledger, Format.CSV, out / "export")
    finally:
        ledger.close()
    leaks = [(rel, what) for rel, text in _texts(out).items() for what, core in CORES.items() if core in text]
    assert leaks == []


def test_every_redaction_is_counted_where_it_was_made(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "conversations.json").write_text(_chatgpt())
    out = tmp_path / "out"
    reconstruct([src], out, Settings())
    doc = json.loads(next((out / "sessions").rglob("*.json")).read_bytes())
    fields = {r["field"] for r in doc["artifacts"]["ByggLogg"]["redactions"]}
    assert {"title", "sourceFields"} <= fields
    perf = doc["artifacts"]["ai_protocol_performance"]["redactions"]
    assert perf["total"] == len(doc["artifacts"]["ByggLogg"]["redactions"])


def test_password_forms_the_patterns_missed():
    r = Redactor("redact", False)
    for text, kind in ((f"DB_PASSWORD={CORES['env assignment']}", "password_assignment"),
                       (f'{{"password": "{CORES["json password"]}"}}', "password_assignment"),
                       (f"postgres://admin:{CORES['url password with @']}@db:5432/x", "url_password"),
                       (f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n{PGP_BODY}\n-----END PGP PRIVATE KEY BLOCK-----",
                        "private_key"),
                       (f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}", "private_key")):
        out, found = r.scrub(text)
        assert found == [kind] and not any(core in out for core in CORES.values()), (text, out)
