"""Rerun mass latch (seed 003): a rerun may not shrink an accepted document past the threshold.

A changed export is a new snapshot of its session and is merged, never shrinking it (#15); what can
shrink is a snapshot's own reparse: the same input under other settings (here ``max_turn_chars``,
which truncates the turns)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from audit.ledger import Ledger, SessionRecord
from flows.cli.app import app
from flows.pipeline import reconstruct
from models.settings import Settings
from models.status import SessionStatus

DOC = "sessions/transcript/3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b/3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b.json"
QUARANTINE = "quarantine/in/chat.txt/session-1.json"
# Four turns of four characters: a reparse keeping ``n`` of each keeps n/4 of the content.
TEXT = "Session: 3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b\nUser: aaaa\nAssistant: bbbb\nUser: cccc\nAssistant: dddd\n"


def _settings(n: int, settings: Settings | None = None) -> Settings:
    return (settings or Settings()).model_copy(update={"max_turn_chars": n})


def _run(tmp_path: Path, n: int, settings: Settings | None = None, **kw) -> dict:
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    (src / "chat.txt").write_text(TEXT)
    return reconstruct([src], tmp_path / "out", _settings(n, settings), **kw)


def _session_row(out: Path, run_id: str) -> SessionRecord:
    ledger = Ledger(out / "ledger.sqlite")
    try:
        [row] = ledger.sessions.of_run(run_id)
        return row
    finally:
        ledger.close()


def _history(out: Path) -> list[dict]:
    return orjson.loads((out / ".revisions" / "index.json").read_bytes())["files"][0]["history"]


def test_a_shrinking_rerun_is_quarantined_and_the_old_document_stays(tmp_path):
    out = tmp_path / "out"
    _run(tmp_path, 4)
    accepted = (out / DOC).read_bytes()
    summary = _run(tmp_path, 2)
    assert (out / DOC).read_bytes() == accepted
    assert summary.counts.sessions_quarantined == 1 and summary.counts.sessions_ok == 0
    row = _session_row(out, summary.run_id)
    assert (row.status, row.reasons) == (SessionStatus.QUARANTINED, ("mass_latch",))
    assert "interactions 4->4" in row.detail and "characters 16->8" in row.detail
    record = orjson.loads((out / QUARANTINE).read_bytes())
    assert record["reasons"] == ["mass_latch"]
    assert record["mass"] == {"accepted": {"interactions": 4, "characters": 16},
                              "rejected": {"interactions": 4, "characters": 8}}
    assert len(record["rejectedDocument"]["artifacts"]["Chatthistorik"]["interactions"]) == 4
    assert record["acceptedDocument"] == DOC
    assert [h["rev"] for h in _history(out)] == ["v0"]  # nothing replaced, nothing indexed
    assert summary.quarantined[0].reasons == ("mass_latch",)


def test_growth_and_small_shrink_pass(tmp_path):
    out = tmp_path / "out"
    _run(tmp_path, 3)
    _run(tmp_path, 4)
    four = hashlib.sha256((out / DOC).read_bytes()).hexdigest()
    # 3/4 is exactly the threshold, not below it (force: this input was seen in the first run)
    summary = _run(tmp_path, 3, force=True)
    assert summary.counts.sessions_partial == 1
    assert hashlib.sha256((out / DOC).read_bytes()).hexdigest() != four
    assert [h["rev"] for h in _history(out)] == ["v0", "v1", "v2"]


def test_allow_shrink_overrides_and_is_recorded(tmp_path):
    out = tmp_path / "out"
    _run(tmp_path, 4)
    latched = _run(tmp_path, 2)
    assert latched.counts.sessions_quarantined == 1
    # the held input is not 'unchanged': the next run may decide otherwise without --force
    summary = _run(tmp_path, 2, allow_shrink=True)
    assert summary.counts.sessions_partial == 1
    doc = orjson.loads((out / DOC).read_bytes())
    assert [i["content"] for i in doc["artifacts"]["Chatthistorik"]["interactions"]] == ["aa", "bb", "cc", "dd"]
    row = _session_row(out, summary.run_id)
    assert row.status is SessionStatus.PARTIAL and "mass latch overridden (--allow-shrink)" in row.detail
    last = _history(out)[-1]
    assert last["rev"] == "v1" and last["note"].startswith("allow-shrink: interactions 4->4, characters 16->8")
    ledger = Ledger(out / "ledger.sqlite")
    try:
        assert orjson.loads(ledger.runs.get(summary.run_id).args)["allow_shrink"] is True
    finally:
        ledger.close()
    # accepted now: an unchanged rerun is skipped again
    again = _run(tmp_path, 2)
    assert again.counts.files_skipped == 1


@pytest.mark.parametrize("overrides, latched", [
    ({"in": 0.5}, False),     # this dataset allows halving
    ({"other": 0.1}, True),   # another dataset's threshold does not apply
    ({}, True),
])
def test_threshold_per_dataset(tmp_path, overrides, latched):
    settings = Settings(mass_latch_overrides=overrides)
    _run(tmp_path, 4, settings)
    summary = _run(tmp_path, 2, settings)
    assert summary.counts.sessions_quarantined == int(latched)


def test_global_threshold(tmp_path):
    settings = Settings(mass_latch_threshold=0.4)
    _run(tmp_path, 4, settings)
    assert _run(tmp_path, 1, settings).counts.sessions_quarantined == 1
    assert _run(tmp_path, 2, settings).counts.sessions_partial == 1


def test_run_command_has_the_allow_shrink_flag():
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert "--allow-shrink" in result.output


def test_allow_shrink_through_the_prefect_flow(tmp_path, prefect_harness):
    from flows.pipeline import run_archive

    src = tmp_path / "in"
    src.mkdir()
    (src / "chat.txt").write_text(TEXT)
    run_archive([src], tmp_path / "out", Settings(workers=1))
    settings = Settings(workers=1, max_turn_chars=2)
    assert run_archive([src], tmp_path / "out", settings).counts.sessions_quarantined == 1
    assert run_archive([src], tmp_path / "out", settings, allow_shrink=True).counts.sessions_partial == 1
