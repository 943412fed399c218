"""Hostile and broken input: nothing crashes, nothing disappears, nothing escapes the output root."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import orjson
import pytest

from audit.ledger import Ledger
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.hardening.corpus import CLASSES, GLOBAL_ID, GLOBAL_TRANSCRIPT, GOOD_TRANSCRIPT

STATUSES = {"ok", "partial", "quarantined", "skipped", "companion"}


def _account(out: Path, summary: dict, inputs: int) -> list[tuple]:
    """Every input is in the ledger; sessions written + quarantined = sessions detected."""
    ledger = Ledger(out / "ledger.sqlite")
    try:
        files = ledger.db.execute("SELECT source_path, status, reasons, sessions FROM files WHERE run_id=?",
                                  (summary.run_id,)).fetchall()
        # the sources' sessions (a merged document's row, ordinal 0, is its session key's: #15)
        sessions = ledger.db.execute("SELECT status, output_path FROM sessions WHERE run_id=? AND ordinal > 0",
                                     (summary.run_id,)).fetchall()
    finally:
        ledger.close()
    assert len(files) == inputs, files
    assert all(status in STATUSES for _, status, _, _ in files)
    assert all(reasons for _, status, reasons, _ in files if status == "quarantined")
    detected = sum(n for *_, n in files)
    written = sum(1 for status, path in sessions if status in ("ok", "partial"))
    quarantined = sum(1 for status, _ in sessions if status == "quarantined")
    assert written + quarantined == detected == len(sessions)
    for _status, path in sessions:
        assert path is not None and (out / path).is_file()
    return files


def _inside(root: Path, base: Path) -> None:
    for p in base.rglob("*"):
        assert root.resolve() in p.resolve().parents or p.resolve() == root.resolve(), p


@pytest.mark.parametrize("klass", sorted(CLASSES))
def test_bad_input_class(klass, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    items = list(CLASSES[klass]())
    for name, data in items:
        (src / name).write_bytes(data)
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings())
    files = _account(out, summary, len(items))
    _inside(out, out)
    if klass == "timestamps_out_of_range":
        for doc in (out / "sessions").rglob("*.json"):
            d = orjson.loads(doc.read_bytes())
            for it in d["artifacts"]["Chatthistorik"]["interactions"]:
                assert "dateRaw" in it  # the raw value is kept even when no date could be set
    if klass == "empty_and_headers_only":
        assert {Path(p).name: s for p, s, _, _ in files}["empty.txt"] == "quarantined"


def test_same_session_id_in_two_files_is_one_session_with_both_snapshots(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text(GLOBAL_TRANSCRIPT)
    (src / "b.txt").write_text(GLOBAL_TRANSCRIPT.replace("hello", "hello again"))
    out = tmp_path / "out"
    reconstruct([src], out, Settings())
    docs = sorted((out / "sessions").rglob(f"{GLOBAL_ID}.json"))  # one key (a global id): two exports of it (#15)
    assert len(docs) == 1
    doc = orjson.loads(docs[0].read_bytes())
    assert sorted(s["path"] for s in doc["artifacts"]["ByggLogg"]["snapshots"]) == ["in/a.txt", "in/b.txt"]


def test_same_session_id_twice_in_one_file_quarantines_the_second(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text(GOOD_TRANSCRIPT + GOOD_TRANSCRIPT)
    summary = reconstruct([src], tmp_path / "out", Settings())
    assert [q.reasons for q in summary.quarantined] == [("duplicate_session_id",)]


def test_symlink_loops_and_broken_links(tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "ok.txt").write_text(GOOD_TRANSCRIPT)
    os.symlink(src, src / "sub" / "loop")
    os.symlink(src / "missing.txt", src / "broken.txt")
    os.symlink(src / "sub" / "ok.txt", src / "file-link.txt")
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings())
    files = _account(out, summary, 4)
    status = {Path(p).name: s for p, s, _, _ in files}
    assert status == {"ok.txt": "ok", "loop": "quarantined", "broken.txt": "quarantined", "file-link.txt": "ok"}


def _zip(path: Path, entries: dict[str, bytes], *, encrypted: bool = False) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    if encrypted:  # zipfile cannot write encrypted entries: set the "encrypted" flag bit in both headers
        raw = bytearray(path.read_bytes())
        for sig, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            at = raw.find(sig)
            while at != -1:
                raw[at + offset] |= 0x1
                at = raw.find(sig, at + 4)
        path.write_bytes(bytes(raw))


def test_zip_exports_are_guarded(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    _zip(src / "slip.zip", {"../../evil.txt": GOOD_TRANSCRIPT.encode(), "/abs.txt": GOOD_TRANSCRIPT.encode(),
                            "C:/drive.txt": GOOD_TRANSCRIPT.encode(), "fine/chat.txt": GOOD_TRANSCRIPT.encode()})
    _zip(src / "bomb.zip", {"big.txt": b"User: " + b"a" * (50 * 1024 * 1024)})
    _zip(src / "locked.zip", {"secret.txt": GOOD_TRANSCRIPT.encode()}, encrypted=True)
    inner = tmp_path / "inner.zip"
    _zip(inner, {"chat.txt": GOOD_TRANSCRIPT.encode()})
    _zip(src / "nested.zip", {"inner.zip": inner.read_bytes()})
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings(zip_max_ratio=100))
    files = _account(out, summary, 7)
    status = {p: (s, r) for p, s, r, _ in files}
    assert status["in/slip.zip/fine/chat.txt"][0] == "ok"
    assert all(s == "quarantined" and r == "zip_unsafe" for p, (s, r) in status.items() if "fine" not in p)
    assert not (tmp_path / "evil.txt").exists() and not Path("/abs.txt").exists()
    _inside(out, out)


@pytest.mark.slow  # still run by the default `pytest` (CI); deselect locally with -m "not slow"
def test_a_session_with_a_million_turns(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "huge.txt").write_bytes(b"".join(b"A: m%d\nB: r%d\n" % (i, i) for i in range(500_000)))
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings())
    assert summary.counts.sessions_ok == 1
    doc = next((out / "sessions").rglob("*.json"))
    perf = orjson.loads(doc.read_bytes())["artifacts"]["ai_protocol_performance"]
    assert perf["interactionCount"] == perf["sourceTurnCount"] == 1_000_000
