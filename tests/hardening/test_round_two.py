"""Reliability, round two (issue 25, items 2, 5 and 6): inputs that crashed the run, changed meaning
silently or were refused now end in the ledger with a specific status and reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from audit.ledger import Ledger
from flows.exits import ExitCode
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.hardening import inputs


def run(tmp_path: Path, *builders, settings: Settings | None = None) -> tuple[dict, dict, Path]:
    """Build the inputs into one folder, run the pipeline over it; returns (expected, ledger, out):
    the ledger as ``{source path below the folder: (status, reasons)}``."""
    src = tmp_path / "in"
    src.mkdir(parents=True)
    expected: inputs.Expected = {}
    for build in builders:
        expected |= build(src)
    out = tmp_path / "out"
    summary = reconstruct([src], out, settings or Settings())
    return expected, ledger_rows(out, summary.run_id), out


def ledger_rows(out: Path, run_id: str) -> dict[str, tuple[str, str | None]]:
    ledger = Ledger(out / "ledger.sqlite")
    try:
        rows = ledger.db.execute("SELECT source_path, status, reasons FROM files WHERE run_id=?", (run_id,)).fetchall()
    finally:
        ledger.close()
    return {path.removeprefix("in/"): (status, reasons or None) for path, status, reasons in rows}


def ledger_details(out: Path) -> dict[str, str]:
    """The latest run's file details, by source path below the input folder."""
    ledger = Ledger(out / "ledger.sqlite")
    try:
        rows = ledger.db.execute("SELECT source_path, detail FROM files WHERE run_id=(SELECT max(run_id) FROM runs)"
                                 ).fetchall()
    finally:
        ledger.close()
    return {path.removeprefix("in/"): detail or "" for path, detail in rows}


def documents(out: Path) -> list[dict]:
    return [orjson.loads(p.read_bytes()) for p in sorted((out / "sessions").rglob("*.json"))]


# -- item 2: inputs that crashed the whole run --------------------------------------------------------
def test_a_corrupt_deflate_stream_quarantines_its_entry_and_the_others_land(tmp_path):
    expected, ledger, out = run(tmp_path, inputs.corrupt_deflate_zip)
    assert ledger == expected
    assert len(documents(out)) == 11


def test_a_symlink_loop_is_quarantined_and_the_rest_is_processed(tmp_path):
    expected, ledger, _ = run(tmp_path, inputs.symlink_loops, inputs.good_input)
    assert ledger == expected


# -- item 6: inputs refused today -------------------------------------------------------------------
def test_tar_gz_tgz_tar_and_gz_are_read_with_the_zip_rules(tmp_path):
    expected, ledger, out = run(tmp_path, inputs.tar_archives, inputs.archive_bombs)
    assert ledger == expected
    assert sorted(d["sessionId"] for d in documents(out)) == ["s-200", "s-201", "s-202", "s-204"]
    paths = {s["path"] for d in documents(out) for s in [d["artifacts"]["ByggLogg"]["source"]]}
    assert "in/mixed.tar.gz/a/chat.txt" in paths and "in/single.txt.gz/single.txt" in paths
    assert not (tmp_path / "escape.txt").exists()


def test_a_link_out_of_the_input_root_is_refused_unless_allowed(tmp_path):
    expected, ledger, out = run(tmp_path / "refused", inputs.outside_links)
    assert ledger == expected
    assert "root:x:0:0" not in "".join(p.read_text() for p in out.rglob("*") if p.is_file() and p.suffix == ".json")
    _, allowed, _ = run(tmp_path / "allowed", inputs.outside_links, settings=Settings(follow_outside_links=True))
    assert allowed["outside.txt"] == ("ok", None)


def test_windows_1252_and_latin_1_are_detected_decoded_and_the_guess_recorded(tmp_path):
    expected, ledger, out = run(tmp_path, inputs.legacy_encodings)
    assert ledger == expected
    docs = {d["artifacts"]["ByggLogg"]["source"]["path"]: d for d in documents(out)}
    irc, win = docs["in/irc-latin1.log"], docs["in/windows-1252.txt"]
    turns = irc["artifacts"]["Chatthistorik"]["interactions"]
    assert turns[0]["speaker"].startswith("Amélie ") and turns[1]["speaker"].startswith("Jürgen ")
    assert turns[1]["content"] == "Schöne Grüße aus München."
    assert "“Quoted” – it costs 5 € … naïve façade" in win["artifacts"]["Chatthistorik"]["interactions"][0]["content"]
    for doc in (irc, win):
        assert doc["artifacts"]["ByggLogg"]["source"]["encoding"] == "cp1252"
        assumption = doc["artifacts"]["ByggLogg"]["assumptions"][0]
        assert assumption.startswith("encoding cp1252 detected by charset-normalizer")
        assert "confidence 1.00" in assumption
    details = ledger_details(out)
    assert all("encoding cp1252 detected" in details[name] for name in expected)


# -- item 5: silent changes of meaning --------------------------------------------------------------
def test_a_lone_surrogate_is_read_as_a_replacement_character_counted_and_recorded(tmp_path):
    expected, ledger, out = run(tmp_path, inputs.lone_surrogate_export)
    assert ledger == expected
    docs = {d["sessionId"]: d for d in documents(out)}
    assert sorted(docs) == ["conv-1", "conv-2", "conv-3"]
    assert docs["conv-2"]["artifacts"]["Chatthistorik"]["interactions"][0]["content"] == "broken \ufffd here"
    assert docs["conv-3"]["artifacts"]["Chatthistorik"]["interactions"][0]["content"] == "😀 and \\ud800"
    for doc in docs.values():
        warnings = doc["artifacts"]["ByggLogg"]["warnings"]
        assert any(w.startswith("1 lone UTF-16 surrogate escapes") for w in warnings), warnings
    assert "1 lone UTF-16 surrogate escapes" in ledger_details(out)["gpt/conversations.json"]


def test_a_lone_surrogate_in_a_streamed_export_is_read_the_same_and_counted(tmp_path):
    """Streamed exports (stream_json_bytes) are split entry by entry: the entry that holds the escape
    is read with U+FFFD too, and the input's ledger row counts it (its documents carry no warning:
    docs/bad-input.md)."""
    small = Settings(stream_json_bytes=500, stream_text_bytes=500)
    expected, ledger, out = run(tmp_path, inputs.lone_surrogate_export, settings=small)
    assert ledger == expected
    docs = {d["sessionId"]: d for d in documents(out)}
    assert sorted(docs) == ["conv-1", "conv-2", "conv-3"]
    assert docs["conv-2"]["artifacts"]["Chatthistorik"]["interactions"][0]["content"] == "broken \ufffd here"
    assert "1 lone UTF-16 surrogate escapes" in ledger_details(out)["gpt/conversations.json"]


def test_a_whatsapp_author_past_60_characters_stays_the_author(tmp_path):
    expected, ledger, out = run(tmp_path, inputs.whatsapp_long_author)
    assert ledger == expected
    (doc,) = documents(out)
    first = doc["artifacts"]["Chatthistorik"]["interactions"][0]
    assert (first["role"], first["content"]) == ("user", "Hola, ¿cómo estás?")
    assert first["speakerNameRaw"] == inputs.LONG_AUTHOR  # the display name has [] for () (the speaker format)


def test_years_0001_and_9999_are_parsed_normalised_and_gated(tmp_path):
    expected, ledger, out = run(tmp_path, inputs.extreme_years)
    assert ledger == expected
    dates = {d["sessionId"]: ([i["date"] for i in d["artifacts"]["Chatthistorik"]["interactions"]], d["createdAt"])
             for d in documents(out)}
    assert dates == {"y1": (["0001-01-01T00:00:00Z", "0001-01-01T00:00:05Z"], "0001-01-01T00:00:00Z"),
                     "y9": (["9999-12-31T23:59:58Z", "9999-12-31T23:59:59Z"], "9999-12-31T23:59:58Z"),
                     "years": (["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"], "0001-01-01T00:00:00Z")}
    for doc in documents(out):
        assert doc["artifacts"]["ai_protocol_performance"]["gate"]["timestamps"] == "pass"


def test_a_year_pushed_past_9999_by_its_zone_has_no_date_and_says_so(tmp_path):
    _, _, out = run(tmp_path, inputs.extreme_years, settings=Settings(source_tz="America/Los_Angeles"))
    y9 = next(d for d in documents(out) if d["sessionId"] == "y9")
    assert [i.get("date") for i in y9["artifacts"]["Chatthistorik"]["interactions"]] == [None, None]
    assert any("out of range" in w for w in y9["artifacts"]["ByggLogg"]["warnings"])


# -- all of them at once, through the command a person runs ------------------------------------------
ALL = (inputs.good_input, inputs.corrupt_deflate_zip, inputs.symlink_loops, inputs.tar_archives,
       inputs.archive_bombs, inputs.outside_links, inputs.legacy_encodings, inputs.lone_surrogate_export,
       inputs.whatsapp_long_author, inputs.extreme_years)


@pytest.mark.slow  # a real `reconstruct run` with its own Prefect: about a minute
def test_a_run_over_every_hostile_input_at_once_finishes_and_records_each(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    expected: inputs.Expected = {}
    for build in ALL:
        expected |= build(src)
    command = Path(sys.executable).with_name("reconstruct")
    if not command.is_file():
        pytest.skip(f"the reconstruct command is not installed beside {sys.executable}")
    done = subprocess.run([str(command), "run", str(src), "--out", str(out), "--workers", "2"],
                          capture_output=True, text=True, timeout=900, env={**os.environ, "COLUMNS": "200"})
    printed = done.stdout + done.stderr
    assert done.returncode == ExitCode.QUARANTINED, printed
    assert "Traceback" not in printed, printed
    ledger = Ledger(out / "ledger.sqlite")
    try:
        (run_id, state), = ledger.db.execute("SELECT run_id, status FROM runs").fetchall()
    finally:
        ledger.close()
    assert state == "completed"
    assert ledger_rows(out, run_id) == expected
