"""Incremental publication: a run rewrites the buckets of the documents it changed, and the published
tables are those a full rebuild gives, over runs that add, change and remove sessions."""

from __future__ import annotations

from contextlib import closing

import polars as pl

from audit import current, publication
from audit.ledger import Ledger
from flows.pipeline import reconstruct
from models.settings import Settings


def _chat(name: str, lines: int, title: str | None = None) -> str:
    head = f"Session: {name}\n" + (f"Title: {title}\n" if title else "")
    return head + "".join(f"User: {name} question {i}\nAssistant: answer {i} about {name}\n" for i in range(lines))


def _tables(frames: dict) -> dict[str, pl.DataFrame]:
    return {t: (f.collect() if isinstance(f, pl.LazyFrame) else f) for t, f in frames.items()}


def _same_as_full_rebuild(out) -> dict[str, str]:
    """Assert the published tables hold what a full rebuild gives; the manifest's files."""
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        files = publication.published(out, ledger)
        assert files is not None, "the run left its tables stale"
        published = _tables(publication.tables(out, ledger))
        full = current.build(out, ledger)
    finally:
        ledger.close()
    assert set(published) == set(full) == set(current.TABLES)
    for name in current.TABLES:
        a, b = published[name], full[name]
        assert a.schema == b.schema, name
        assert a.sort(pl.all()).equals(b.sort(pl.all())), name
    return publication.Manifest.read(out / current.CURRENT).tables


def test_incremental_publication_equals_a_full_rebuild(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for i in range(12):
        (src / f"c{i}.txt").write_text(_chat(f"c{i}", 2, title=f"Topic {i}" if i % 2 else None))
    reconstruct([src], out, Settings(workers=1))
    first = _same_as_full_rebuild(out)
    assert len(first["turns"]) > 1 and "empty" not in first["sessions"]

    (src / "c3.txt").write_text(_chat("c3", 3, title="Topic 3"))  # changed
    (src / "new.txt").write_text(_chat("new", 1, title="zanzibar plans"))  # added
    reconstruct([src], out, Settings(workers=1))
    second = _same_as_full_rebuild(out)
    kept = {b for b, f in second["turns"].items() if first["turns"].get(b) == f}
    assert kept and len(kept) < len(second["turns"])  # some buckets rewritten, the others left as they were

    with closing(Ledger(out / "ledger.sqlite", read_only=True)) as ledger:
        sessions = publication.tables(out, ledger)["sessions"].collect()
    c5 = sessions.filter(pl.col("session_id") == "c5")["output_path"].item()
    (out / c5).unlink()  # a document removed from the archive: no longer current
    (src / "c7.txt").unlink()
    reconstruct([src], out, Settings(workers=1))
    third = _same_as_full_rebuild(out)
    with closing(Ledger(out / "ledger.sqlite", read_only=True)) as ledger:
        sessions = publication.tables(out, ledger)["sessions"].collect()
    assert c5 not in sessions["output_path"].to_list() and "zanzibar plans" in sessions["title"].to_list()
    assert third["sessions"] != second["sessions"]


def test_a_revert_between_runs_is_published_by_the_next_publication(tmp_path):
    from audit import revisions

    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for i in range(6):
        (src / f"c{i}.txt").write_text(_chat(f"c{i}", 1))
    grown = "7d0c9a4e-2f6d-4d8a-9c1e-7a3b6f2d0c11"  # a global id: the chat that grows stays one document
    (src / "g.txt").write_text(_chat(grown, 1))
    reconstruct([src], out, Settings(workers=1))
    (src / "g.txt").write_text(_chat(grown, 3))
    reconstruct([src], out, Settings(workers=1))
    with closing(Ledger(out / "ledger.sqlite")) as ledger:
        rel = next(p for p in ledger.revisions.latest() if grown in p)
        revisions.revert(ledger, out, rel, "v0")  # a new revision, no run
        assert publication.published(out, ledger) is None
        publication.publish(out, ledger)
        turns = publication.tables(out, ledger)["turns"].collect()
    _same_as_full_rebuild(out)
    assert turns.filter(pl.col("output_path") == rel).height == 2  # the one question and answer of v0


def test_a_publication_without_a_manifest_rebuilds_every_bucket(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    (src / "a.txt").write_text(_chat("a", 1))
    reconstruct([src], out, Settings(workers=1))
    (out / current.CURRENT / publication.MANIFEST).unlink()
    (out / current.CURRENT / "sessions.parquet").write_bytes(b"a file of the layout before buckets")
    with closing(Ledger(out / "ledger.sqlite")) as ledger:
        publication.publish(out, ledger)
    _same_as_full_rebuild(out)
    assert not (out / current.CURRENT / "sessions.parquet").exists()


def test_an_archive_without_documents_publishes_empty_tables_with_their_columns(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    (src / "broken.json").write_bytes(b"\x00\x01garbage")
    reconstruct([src], out, Settings(workers=1))
    tables = _same_as_full_rebuild(out)
    assert list(tables["sessions"]) == [publication.EMPTY]


def test_a_publication_builds_the_turns_of_one_group_of_documents_at_a_time(tmp_path, monkeypatch):
    """The run's memory is one group's turns, not the archive's: each build holds the documents of one
    terms bucket (four turns buckets), the first publication and an incremental one alike."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for i in range(40):
        (src / f"c{i}.txt").write_text(_chat(f"c{i}", 1 + i % 3, title=f"Topic {i}" if i % 2 else None))
    built: list[list[str]] = []
    real = current.sessions_and_turn_scan

    def spy(out_root, ledger, only, known):
        sessions, turns = real(out_root, ledger, only, known)
        built.append(sessions["output_path"].to_list())
        return sessions, turns

    monkeypatch.setattr(current, "sessions_and_turn_scan", spy)
    monkeypatch.setattr(publication, "GROUP_DOCUMENTS", 3)  # 40 documents: as many groups as can be
    reconstruct([src], out, Settings(workers=1))
    groups = [set(publication.bucket_of(pl.Series(paths, dtype=pl.Utf8), publication.GROUPS[-1]).to_list())
              for paths in built]
    assert sum(map(len, built)) == 40 and len(built) > 4
    assert all(len(g) <= 1 for g in groups), groups
    monkeypatch.undo()
    _same_as_full_rebuild(out)

    monkeypatch.setattr(current, "sessions_and_turn_scan", spy)
    monkeypatch.setattr(publication, "GROUP_DOCUMENTS", 3)
    built.clear()
    (src / "c3.txt").write_text(_chat("c3", 5, title="Topic 3"))
    reconstruct([src], out, Settings(workers=1))
    changed = [p for paths in built for p in paths]  # the changed chat only (an empty group: its old bucket)
    assert changed and all("/c3" in p for p in changed) and len(built) <= 2
    monkeypatch.undo()
    _same_as_full_rebuild(out)


def test_a_small_publication_is_one_group(tmp_path, monkeypatch):
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for i in range(40):
        (src / f"c{i}.txt").write_text(_chat(f"c{i}", 1))
    built = []
    real = current.sessions_and_turn_scan
    monkeypatch.setattr(current, "sessions_and_turn_scan", lambda *a: built.append(a) or real(*a))
    monkeypatch.setattr(publication, "GROUP_DOCUMENTS", 10)  # 40 documents: four groups of ten or so
    reconstruct([src], out, Settings(workers=1))
    assert len(built) == 4
    built.clear()
    monkeypatch.setattr(publication, "GROUP_DOCUMENTS", 40)
    with closing(Ledger(out / "ledger.sqlite")) as ledger:
        publication.publish(out, ledger, full=True)
    assert len(built) == 1
    monkeypatch.undo()
    _same_as_full_rebuild(out)


def test_a_run_that_changes_nothing_rewrites_only_the_runs_table(tmp_path):
    """An unchanged rerun (every input skipped) keeps every published file but the runs table's, says so
    in its summary, and the tables still equal a full rebuild; a document removed by hand, a changed
    input and an input gone each bring the whole publication back."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for i in range(6):
        (src / f"c{i}.txt").write_text(_chat(f"c{i}", 2, title=f"Topic {i}"))
    first = reconstruct([src], out, Settings(workers=1))
    assert first.published is publication.Published.REWRITTEN
    before = _same_as_full_rebuild(out)
    again = reconstruct([src], out, Settings(workers=1))
    assert again.published is publication.Published.RUN_ONLY and again.counts.files_skipped == 6
    after = _same_as_full_rebuild(out)
    assert {t: f for t, f in after.items() if t != "runs"} == {t: f for t, f in before.items() if t != "runs"}
    assert after["runs"] != before["runs"]
    with closing(Ledger(out / "ledger.sqlite", read_only=True)) as ledger:
        runs = publication.tables(out, ledger)["runs"].collect()
        doc = publication.tables(out, ledger)["sessions"].collect()["output_path"][0]
    assert set(runs["run_id"]) == {first.run_id, again.run_id}

    (out / doc).unlink()
    removed = reconstruct([src], out, Settings(workers=1))
    assert removed.published is publication.Published.REWRITTEN and removed.counts.files_skipped == 6
    _same_as_full_rebuild(out)
    (src / "c1.txt").write_text(_chat("c1", 3, title="Topic 1"))
    assert reconstruct([src], out, Settings(workers=1)).published is publication.Published.REWRITTEN
    _same_as_full_rebuild(out)
    (src / "c2.txt").unlink()
    assert reconstruct([src], out, Settings(workers=1)).published is publication.Published.REWRITTEN
    _same_as_full_rebuild(out)
    assert reconstruct([src], out, Settings(workers=1)).published is publication.Published.RUN_ONLY
    _same_as_full_rebuild(out)
