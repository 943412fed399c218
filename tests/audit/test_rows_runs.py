"""A shard's column turns are keyed as runs of one schema: the same part frame as keyed one document at a
time, in a few polars calls whatever the number of documents."""

from __future__ import annotations

import polars as pl

from audit.datasets import _CONSTANTS, PART_COLUMNS, DocumentRows, Rows

OWN = [k for k in PART_COLUMNS["turns"] if k not in _CONSTANTS]


def _table(n: int) -> pl.DataFrame:
    return pl.DataFrame({k: [f"{k}{i}" for i in range(n)] if t == pl.Utf8 else list(range(n))
                         for k, t in PART_COLUMNS["turns"].items() if k not in _CONSTANTS})


def _session(i: int) -> dict:
    return {"session_id": f"s{i}", "source_path": f"in/{i % 3}.txt", "grammar": "irc"}


def _documents(sizes: list[int], pointerless: set[int]) -> list[DocumentRows]:
    """Slices of one table (a batch's documents); those in ``pointerless`` are line turns without a pointer."""
    table, docs, start = _table(sum(sizes)), [], 0
    for i, n in enumerate(sizes):
        turns = table.slice(start, n)
        if i in pointerless:  # line turns, and a document without times (a column of nulls)
            turns = turns.drop("source_pointer").with_columns(date=pl.lit(None))
        docs.append(DocumentRows(_session(i), turns))
        start += n
    return docs


def _one_at_a_time(docs: list[DocumentRows]) -> pl.DataFrame:
    """The oracle: each document keyed alone (``DocumentRows.keyed``), then concatenated."""
    return pl.concat([d.keyed(f"out/{i}.json", f"{i:064x}")[1] for i, d in enumerate(docs)], how="vertical")


def test_runs_of_documents_key_as_each_document_alone():
    sizes = [3, 0, 5, 1, 4, 2, 0, 6, 2]
    for pointerless in (set(), {2, 3, 7}, set(range(len(sizes)))):
        docs, rows = _documents(sizes, pointerless), Rows()
        for i, d in enumerate(docs):
            rows.add(f"out/{i}.json", f"{i:064x}", d)
        assert rows.frames()["turns"].equals(_one_at_a_time(docs))


def test_keying_a_shards_documents_takes_a_few_polars_calls(monkeypatch):
    calls = []
    select = pl.DataFrame.select
    monkeypatch.setattr(pl.DataFrame, "select", lambda self, *a, **k: calls.append(1) or select(self, *a, **k))
    rows = Rows()
    for i, d in enumerate(_documents([4] * 300, {5, 6})):
        rows.add(f"out/{i}.json", f"{i:064x}", d)
    assert rows.frames()["turns"].height == 1200
    assert len(calls) < 10
