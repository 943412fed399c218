"""The benchmark's generated data, at a tiny size, is what it claims to be: it parses, with the grammars meant."""

from __future__ import annotations

import sqlite3

from bench import generate
from flows.pipeline import reconstruct
from models.settings import Settings


def _files(summary: dict) -> list[tuple[str, str, int]]:
    with sqlite3.connect(summary["ledger"]) as db:
        return db.execute("SELECT grammar, status, sessions FROM files WHERE run_id=? ORDER BY source_key",
                          (summary["run_id"],)).fetchall()


def _interactions(summary: dict) -> int:
    with sqlite3.connect(summary["ledger"]) as db:
        return db.execute("SELECT SUM(interactions) FROM sessions WHERE run_id=?", (summary["run_id"],)).fetchone()[0]


def test_generated_data_is_deterministic_and_parses(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    wa = data / "whatsapp.txt"
    generate.whatsapp(wa, 200)
    again = tmp_path / "again.txt"
    generate.whatsapp(again, 200)
    assert wa.read_bytes() == again.read_bytes()
    text = wa.read_text(encoding="utf-8")
    assert text.startswith("1/1/19, 08:") and any(ord(ch) > 127 for ch in text)

    generate.transcripts(data / "transcripts", 6)
    (data / "chatgpt").mkdir()
    generate.conversations(data / "chatgpt" / "conversations.json", 4, mean_bytes=2000)

    wa_run = reconstruct([wa], tmp_path / "out-wa", Settings(), runner=None)
    assert _files(wa_run) == [("whatsapp", "ok", 1)]
    # every generated line is a message or a system line; system lines may or may not count as turns
    assert 190 <= _interactions(wa_run) <= 200

    tr_run = reconstruct([data / "transcripts"], tmp_path / "out-tr", Settings(), runner=None)
    assert [row[:2] for row in _files(tr_run)] == [("transcript", "ok")] * 6
    assert tr_run["counts"]["sessions_ok"] == 6

    gpt_run = reconstruct([data / "chatgpt"], tmp_path / "out-gpt", Settings(), runner=None)
    assert _files(gpt_run) == [("chatgpt", "ok", 4)]
    assert gpt_run["counts"]["sessions_ok"] == 4 and gpt_run["counts"]["sessions_quarantined"] == 0
