"""Publishing a large document: its turns are streamed from its parts a piece at a time, never read,
deduplicated or sorted whole, and the published tables are those of a full rebuild, file by file."""

from __future__ import annotations

from contextlib import closing

import polars as pl

from audit import current, datasets, publication
from audit.ledger import Ledger
from flows.pipeline import reconstruct
from models.settings import Settings

from .test_publication import _chat, _same_as_full_rebuild

PIECE = 12  # turns per part of the large document, as a streamed document's ranges write them


def _archive(tmp_path) -> tuple:
    """An archive of small chats and one of 60 turns whose rows are split into parts of ``PIECE``
    turns, one of them written again by another run (the same rows twice: overlapping ranges)."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for i in range(6):
        (src / f"c{i}.txt").write_text(_chat(f"c{i}", 1 + i % 2, title=f"Topic {i}"))
    (src / "big.txt").write_text(_chat("c3big", 30, title="the long one"))
    reconstruct([src], out, Settings(workers=1))
    with closing(Ledger(out / "ledger.sqlite", read_only=True)) as ledger:
        big = next(p for p in ledger.revisions.latest() if "big" in p)
    for part in datasets._part_files(out, "turns"):
        rows = pl.read_parquet(part)
        mine = rows.filter(pl.col("output_path") == big).sort("ordinal")
        if mine.is_empty():
            continue
        rows.filter(pl.col("output_path") != big).write_parquet(part)
        for i in range(0, mine.height, PIECE):
            mine.slice(i, PIECE).write_parquet(part.with_name(f"{part.stem}.{i // PIECE:05d}.parquet"))
        again = out / datasets.PARTS / "turns" / "another-run" / "x.parquet"
        again.parent.mkdir(parents=True)
        mine.slice(PIECE - 3, PIECE).reverse().write_parquet(again)  # out of order, across two ranges
    return src, out, big, mine.height


def _published(out) -> dict[str, pl.DataFrame]:
    manifest = publication.Manifest.read(out / current.CURRENT)
    return {f"{t}/{b}": pl.read_parquet(out / current.CURRENT / name)
            for t, parts in manifest.tables.items() if t != "runs" for b, name in parts.items()}


def test_a_document_above_the_row_budget_is_never_collected_whole_and_publishes_the_same_tables(
        tmp_path, monkeypatch):
    _, out, big, turns = _archive(tmp_path)
    with closing(Ledger(out / "ledger.sqlite")) as ledger:
        publication.publish(out, ledger, full=True)
    read_whole = _published(out)  # the group is under the budget: read once, as before

    seen: list[int] = []
    collect = pl.LazyFrame.collect

    def spy(self, *args, **kwargs):
        frame = collect(self, *args, **kwargs)
        if "ordinal" in frame.columns and "output_path" in frame.columns:
            seen.append(frame.filter(pl.col("output_path") == big).height)
        return frame

    monkeypatch.setattr(pl.LazyFrame, "collect", spy)
    monkeypatch.setattr(publication, "ROW_BUDGET", PIECE)
    with closing(Ledger(out / "ledger.sqlite")) as ledger:
        publication.publish(out, ledger, full=True)
    monkeypatch.undo()
    assert turns == 60 and seen and max(seen) < PIECE + 3  # a piece (two overlapping ranges) at most
    streamed = _published(out)
    assert streamed.keys() == read_whole.keys()
    for name, frame in streamed.items():
        assert frame.equals(read_whole[name]), name  # the same rows in the same order
    _same_as_full_rebuild(out)
    bucket = next(f for n, f in streamed.items() if n.startswith("turns/") and big in f["output_path"])
    assert bucket.equals(bucket.sort(current.ORDER["turns"]))
    assert bucket.filter(pl.col("output_path") == big).height == 60


def test_a_large_document_among_others_in_its_bucket_is_put_in_its_place(tmp_path, monkeypatch):
    """One bucket of each table: the large document's pieces go between the rows of the documents
    before and after it, in a full publication and in a run's incremental one that changes it."""
    monkeypatch.setattr(publication, "BUCKETS", dict.fromkeys(publication.BUCKETS, 1))
    src, out, big, _ = _archive(tmp_path)
    with closing(Ledger(out / "ledger.sqlite")) as ledger:
        publication.publish(out, ledger, full=True)
        read_whole = _published(out)
        monkeypatch.setattr(publication, "ROW_BUDGET", PIECE)
        publication.publish(out, ledger, full=True)
    streamed = _published(out)
    paths = streamed["turns/0"]["output_path"].unique(maintain_order=True).to_list()
    assert 0 < paths.index(big) < len(paths) - 1  # documents before it and after it
    assert streamed.keys() == read_whole.keys()
    assert all(frame.equals(read_whole[name]) for name, frame in streamed.items())

    (src / "big.txt").write_text(_chat("c3big", 40, title="the long one"))  # changed: streamed again
    (src / "c1.txt").write_text(_chat("c1", 4, title="Topic 1"))
    reconstruct([src], out, Settings(workers=1))
    _same_as_full_rebuild(out)
    turns = _published(out)["turns/0"]
    assert turns.equals(turns.sort(current.ORDER["turns"]))
    assert turns.filter(pl.col("output_path").str.contains("c3big")).height == 80


def test_a_large_document_without_its_sessions_part_row_is_read_from_its_document(tmp_path, monkeypatch):
    """Its parts are not the truth then (a crash between its turns parts and its sessions part)."""
    _, out, big, _ = _archive(tmp_path)
    for part in datasets._part_files(out, "sessions"):
        rows = pl.read_parquet(part)
        rows.filter(pl.col("output_path") != big).write_parquet(part)
    next(p for p in datasets._part_files(out, "turns") if p.name.endswith(".00003.parquet")).unlink()  # a part lost
    monkeypatch.setattr(publication, "ROW_BUDGET", PIECE)
    with closing(Ledger(out / "ledger.sqlite")) as ledger:
        publication.publish(out, ledger, full=True)
    _same_as_full_rebuild(out)
    turns = pl.concat(f for n, f in _published(out).items() if n.startswith("turns/"))
    assert turns.filter(pl.col("output_path") == big)["ordinal"].to_list() == list(range(1, 61))
