"""End to end without Prefect: the bundled samples, determinism, layout, bad input, path safety."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from audit.ledger import Ledger
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import ROOT, run_checker

SAMPLES = ROOT / "sample_logs"


def _docs(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "sessions").rglob("*.json"))}


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return out, reconstruct([SAMPLES], out, Settings())


def test_samples_reconstruct_without_quarantine(sample_run):
    out, summary = sample_run
    c = summary.counts
    assert c.files_quarantined == 0 and c.sessions_quarantined == 0, summary.quarantined
    assert c.sessions_ok + c.sessions_partial == len(_docs(out)) >= 8


def test_independent_checker_passes(sample_run):
    out, _ = sample_run
    proc = run_checker(out)
    assert proc.returncode == 0, proc.stdout
    assert " 0 failed" in proc.stdout


def test_second_run_into_a_new_folder_is_byte_identical(sample_run, tmp_path):
    out, _ = sample_run
    reconstruct([SAMPLES], tmp_path, Settings(workers=1))
    assert _docs(tmp_path) == _docs(out)


def test_idless_sessions_never_collide(sample_run):
    out, _ = sample_run
    noid = [k for k in _docs(out) if k.endswith("/999.json")]
    assert len(noid) >= 2 and len(set(noid)) == len(noid)


def test_planted_key_is_redacted(sample_run):
    out, _ = sample_run
    for path in out.rglob("*"):
        if path.is_file() and path.suffix == ".json":
            assert b"sk-proj-EXAMPLE" not in path.read_bytes(), path


def test_bad_inputs_are_quarantined_with_reasons_and_the_run_goes_on(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "empty.txt").write_bytes(b"")
    (src / "binary.dat").write_bytes(bytes(range(32)) * 50)
    (src / "mixed.txt").write_bytes(b"User: caf\xc3\xa9 cr\xe8me\n")  # UTF-8 and Latin-1 in one file
    (src / "prose.txt").write_text("Just a paragraph of prose with no speakers at all.\n")
    (src / "good.txt").write_text("User: hi\nAssistant: hello\n")
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings())
    by_source = {q.source_path.split("/")[-1]: ",".join(q.reasons) for q in summary.quarantined}
    assert by_source == {"empty.txt": "empty", "binary.dat": "binary", "mixed.txt": "undecodable",
                         "prose.txt": "no_grammar"}
    assert summary.counts.sessions_ok == 1
    for name in by_source:
        record = orjson.loads((out / "quarantine" / "in" / name / "file.json").read_bytes())
        assert record["reasons"] and record["detail"]
    ledger = Ledger(out / "ledger.sqlite")
    try:
        files = ledger.db.execute("SELECT COUNT(*) FROM files WHERE run_id=?", (summary.run_id,)).fetchone()[0]
    finally:
        ledger.close()
    assert files == 5


@pytest.mark.parametrize("raw_id", ["../../etc/passwd", "/abs/path", "C:\\x", "CON", "a\x00b", "x" * 300,
                                    "a\u2215b", "..", "ok-id"])
def test_ids_from_input_never_escape_the_output_root(tmp_path, raw_id):
    src = tmp_path / "in"
    src.mkdir()
    (src / "chat.txt").write_text(f"Session: {raw_id}\nUser: hi\nAssistant: hello\n")
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings())
    assert summary.counts.sessions_ok == 1
    written = [p for p in tmp_path.rglob("*.json")]
    assert written and all(out.resolve() in p.resolve().parents for p in written)
    doc = orjson.loads(next((out / "sessions").rglob("*.json")).read_bytes())
    if raw_id != "ok-id":
        assert doc["artifacts"]["ByggLogg"].get("sessionIdRaw") == raw_id.strip()


def test_incremental_skip_and_force(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("User: hi\nAssistant: hello\n")
    out = tmp_path / "out"
    reconstruct([src], out, Settings())
    again = reconstruct([src], out, Settings())
    assert again.counts.files_skipped == 1
    forced = reconstruct([src], out, Settings(), force=True)
    assert forced.counts.files_skipped == 0 and forced.counts.sessions_ok == 1
