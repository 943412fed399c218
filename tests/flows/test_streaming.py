"""Large structured exports are streamed one session at a time, with the same documents as a whole read."""

from __future__ import annotations

import orjson

from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import GOLDEN


def _docs(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "sessions").rglob("*.json"))}


def test_streamed_and_whole_reads_give_identical_documents(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    data = orjson.loads((GOLDEN / "chatgpt" / "conversations.json").read_bytes())
    many = [{**c, "id": f"{c['id']}-{i}"} for i in range(50) for c in data]
    (src / "conversations.json").write_bytes(orjson.dumps(many, option=orjson.OPT_INDENT_2).replace(b"\n", b"\r\n"))
    whole, streamed = tmp_path / "whole", tmp_path / "streamed"
    a = reconstruct([src], whole, Settings())
    b = reconstruct([src], streamed, Settings(stream_json_bytes=1))
    assert a.counts == b.counts and a.counts.sessions_ok + a.counts.sessions_partial == 100
    assert _docs(whole) == _docs(streamed)


def test_a_truncated_stream_keeps_the_sessions_before_the_break(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    data = orjson.loads((GOLDEN / "chatgpt" / "conversations.json").read_bytes())
    raw = orjson.dumps([{**c, "id": f"{c['id']}-{i}"} for i in range(3) for c in data])
    (src / "conversations.json").write_bytes(raw[: int(len(raw) * 0.8)])
    summary = reconstruct([src], tmp_path / "out", Settings(stream_json_bytes=1))
    counts = summary.counts
    assert counts.sessions_ok + counts.sessions_partial >= 3
    assert counts.files_quarantined == 1
    assert [q.reasons for q in summary.quarantined if q.what == "file"] == [("parse_error",)]
