"""Datasets from the documents a run writes: parts per run, the current rows, compaction by export."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from audit import datasets
from audit.datasets import tables
from flows.cli.app import app
from flows.pipeline import reconstruct
from models.settings import Settings

TWO = "User: hi\nAssistant: hello\n"
FOUR = TWO + "User: how are you\nAssistant: fine thanks\n"
def _sid(stem: str) -> str:
    """A file's session id: a UUID made of its name (global: a rerun of the file is the same key)."""
    return f"00000000-0000-4000-8000-{stem.encode().hex():0>12}"


DOC = f"sessions/transcript/{_sid('a')}/{_sid('a')}.json"  # the session key of a.txt's session line
DOC_B = f"sessions/transcript/{_sid('b')}/{_sid('b')}.json"


def _write(src: Path, name: str, text: str) -> None:
    """An input whose session is named after the file (``Session: a`` in a.txt), so its later
    contents are snapshots of the same session."""
    src.mkdir(exist_ok=True)
    (src / name).write_text(f"Session: {_sid(Path(name).stem)}\n{text}")


def _reads_under(monkeypatch, folder: Path) -> list[Path]:
    """Every read of an existing file below ``folder`` (Path.read_bytes, Path.open)."""
    seen: list[Path] = []
    real_read, real_open = Path.read_bytes, Path.open

    def read_bytes(self):
        if folder in Path(self).absolute().parents and Path(self).exists():
            seen.append(self)
        return real_read(self)

    def open_(self, mode="r", *a, **k):
        if "r" in mode and folder in Path(self).absolute().parents and Path(self).exists():
            seen.append(self)
        return real_open(self, mode, *a, **k)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setattr(Path, "open", open_)
    return seen


def test_a_run_reads_no_document_it_does_not_replace(tmp_path, monkeypatch):
    src, out = tmp_path / "in", tmp_path / "out"
    for i in range(4):
        _write(src, f"old{i}.txt", TWO.replace("hi", f"hi {i}"))
    reconstruct([src], out, Settings(workers=1))
    _write(src, "new.txt", FOUR)
    reads = _reads_under(monkeypatch, (out / "sessions").absolute())
    summary = reconstruct([src], out, Settings(workers=1))
    assert summary.counts.files_skipped == 4 and reads == []
    monkeypatch.undo()
    sessions, turns = tables(out)
    assert sessions.height == 5 and turns.height == 4 * 2 + 4
    assert len(list((out / datasets.PARTS / "sessions").glob("*/*.parquet"))) == 2  # one part per run here


def test_the_tables_hold_the_latest_revision_of_each_current_document(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    _write(src, "a.txt", TWO)
    _write(src, "b.txt", TWO.replace("hi", "hey"))
    first = reconstruct([src], out, Settings(workers=1))
    _write(src, "a.txt", FOUR)
    second = reconstruct([src], out, Settings(workers=1))
    sessions, turns = tables(out)
    by_path = dict(zip(sessions["output_path"], sessions["run_id"], strict=True))
    assert by_path == {DOC: second.run_id, DOC_B: first.run_id}
    assert turns.filter(pl.col("output_path") == DOC).height == 4
    # a revert is a revision too: the tables follow it without reading the documents again
    confirm = f"CONFIRM REVERT {DOC} v0"
    reverted = CliRunner().invoke(app, ["revert", DOC, "--to", "v0", "--out", str(out), "--confirm", confirm])
    assert reverted.exit_code == 0, reverted.output
    sessions, turns = tables(out)
    assert turns.filter(pl.col("output_path") == DOC).height == 2
    assert sessions.filter(pl.col("output_path") == DOC)["run_id"].to_list() == [first.run_id]
    # a document no longer there has no rows
    (out / DOC).unlink()
    assert tables(out)[0]["output_path"].to_list() == [DOC_B]


def test_without_parts_the_documents_are_read_and_give_the_same_tables(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    _write(src, "a.txt", FOUR)
    _write(src, "b.txt", TWO)
    reconstruct([src], out, Settings(workers=1))
    from_parts = tables(out)
    shutil.rmtree(out / datasets.PARTS)
    for got, expected in zip(tables(out), from_parts, strict=True):
        assert_frame_equal(got, expected)


def test_export_compacts_the_parts_into_one_with_the_same_tables(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    _write(src, "a.txt", TWO)
    reconstruct([src], out, Settings(workers=1))
    for i in range(3):
        _write(src, f"n{i}.txt", TWO.replace("hi", f"hi {i}"))
        _write(src, "a.txt", FOUR + f"User: round {i}\nAssistant: ok\n")
        reconstruct([src], out, Settings(workers=1))
    before = tables(out)
    # a part per run and one per merge phase (a.txt's later contents are snapshots merged with the first)
    assert len(list((out / datasets.PARTS / "sessions").rglob("*.parquet"))) == 4 + 3
    result = CliRunner().invoke(app, ["export", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert [p.parent.name for p in (out / datasets.PARTS / "sessions").rglob("*.parquet")] == [datasets.COMPACTED]
    for got, expected in zip(tables(out), before, strict=True):
        assert_frame_equal(got, expected)
    exported = pl.read_parquet(out / "datasets" / "sessions.parquet").sort("output_path")
    assert exported.select(before[0].columns).with_columns(pl.col(pl.Datetime).dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                                          pl.col("status", "flag").cast(pl.Utf8)).equals(before[0])
    assert pl.read_parquet(out / "datasets" / "turns.parquet")["content"].equals(before[1]["content"])
