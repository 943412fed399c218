"""The benchmark's generated data, at a tiny size, is what it claims to be (it parses, with the grammars
meant), and the floors' code runs. No timing is asserted here."""

from __future__ import annotations

import sqlite3

import orjson

from bench import floors, generate
from bench.run import measure
from flows.pipeline import reconstruct
from models.settings import Settings


def _files(summary: dict) -> list[tuple[str, str, str, int]]:
    with sqlite3.connect(summary.ledger) as db:
        return db.execute("SELECT source_key, grammar, status, sessions FROM files WHERE run_id=? "
                          "AND status != 'companion' ORDER BY source_key", (summary.run_id,)).fetchall()


def _interactions(summary: dict) -> int:
    with sqlite3.connect(summary.ledger) as db:
        return db.execute("SELECT SUM(interactions) FROM sessions WHERE run_id=?", (summary.run_id,)).fetchone()[0]


def test_whatsapp_is_deterministic_and_parses(tmp_path):
    wa, again = tmp_path / "whatsapp.txt", tmp_path / "again.txt"
    generate.whatsapp(wa, 200)
    generate.whatsapp(again, 200)
    assert wa.read_bytes() == again.read_bytes()
    text = wa.read_text(encoding="utf-8")
    assert text.startswith("1/1/19, 08:") and any(ord(ch) > 127 for ch in text)

    run = reconstruct([wa], tmp_path / "out", Settings(), runner=None)
    assert [row[1:] for row in _files(run)] == [("whatsapp", "ok", 1)]
    # every generated line is a message or a system line; system lines may or may not count as turns
    assert 190 <= _interactions(run) <= 200


def test_mixed_files_parse_with_the_grammar_of_their_format(tmp_path):
    data = tmp_path / "mixed"
    generate.mixed(data, 2 * len(generate.MIXED))
    run = reconstruct([data], tmp_path / "out", Settings(), runner=None)
    rows = _files(run)
    assert len(rows) == 2 * len(generate.MIXED)
    # the folder names the format; partial (e.g. a region the grammar does not account for) still counts
    assert {(key.split("/")[1], grammar) for key, grammar, _, _ in rows} == {(f, f) for f in generate.MIXED}
    assert {(status, n) for _, _, status, n in rows} <= {("ok", 1), ("partial", 1)}
    assert run.counts.sessions_quarantined == 0 and run.counts.files_quarantined == 0


def test_conversations_parse(tmp_path):
    (tmp_path / "chatgpt").mkdir()
    generate.conversations(tmp_path / "chatgpt" / "conversations.json", 4, mean_bytes=2000)
    run = reconstruct([tmp_path / "chatgpt"], tmp_path / "out", Settings(), runner=None)
    assert [row[1:] for row in _files(run)] == [("chatgpt", "ok", 4)]
    assert run.counts.sessions_ok == 4 and run.counts.sessions_quarantined == 0


def test_floors_run_and_do_the_whole_job(tmp_path):
    paths = generate.generate(tmp_path / "data", 0.0001)  # every set at its minimum size
    text = paths["whatsapp"].read_text(encoding="utf-8")
    assert floors.lines(str(paths["whatsapp"]), "")["lines"] == text.count("\n")
    conversations = len(orjson.loads(paths["chatgpt"].read_bytes()))
    assert floors.orjson_loads(str(paths["chatgpt"]), "")["items"] == conversations == 10
    n = sum(1 for p in paths["mixed"].rglob("*") if p.is_file())
    assert floors.file_io(str(paths["mixed"]), str(tmp_path / "io"))["files"] == n
    assert not list((tmp_path / "io").rglob(".*.tmp"))
    assert floors.file_hash(str(paths["mixed"]), "")["files"] == n
    # a floor measured the way the runner measures it: in a child, with the tree's peak RSS
    (tmp_path / "m").mkdir()
    r = measure("floor:lines", paths["whatsapp"], tmp_path / "m" / "out", max_rss_mb=4000)
    assert r["lines"] == text.count("\n") and r["seconds"] > 0 and r["peak_rss_mb"] > 0


def test_the_irc_and_transcript_sets_parse_whole_and_streamed(tmp_path):
    """The ``irc`` and ``transcript`` sets (asked for with ``--only``) are their grammar's, every line
    a turn or a turn's line, and the streamed route gives the documents of the whole one."""
    for name, writer, grammar, count in (("irc.log", generate.irc, "irc", 300),
                                          ("transcript.txt", generate.transcript, "transcript", 200)):
        path = tmp_path / name
        writer(path, count)
        again = tmp_path / f"again-{name}"
        writer(again, count)
        assert path.read_bytes() == again.read_bytes()
        docs = []
        for label, settings in (("whole", Settings()),
                                ("streamed", Settings(stream_text_bytes=1, stream_chunk_bytes=4096))):
            out = tmp_path / f"out-{grammar}-{label}"
            run = reconstruct([path], out, settings, runner=None)
            assert [row[1:] for row in _files(run)] == [(grammar, "ok", 1)]
            assert _interactions(run) == count
            docs.append([p.read_bytes() for p in sorted((out / "sessions").rglob("*.json"))])
        assert docs[0] == docs[1] and docs[0]


def test_browse_bench_builds_and_measures_every_page(tmp_path):
    from bench import browse

    size = browse.build(tmp_path / "browse", sessions=30, turns=4, big=40)
    assert size["sessions"] == 31 and size["turns"] == 30 * 4 + 40
    figures = browse.measure(tmp_path / "browse" / "out", repeat=1)
    assert any(name.startswith("full-text search") for name in figures)
    assert "session page of 40 interactions, page 1" in figures and all(f for f in figures.values())


def test_publish_bench_times_the_runs_incremental_publication(tmp_path):
    from bench import publish

    runs = publish.build(tmp_path / "publish", sessions=12, turns=20, workers=1)
    assert runs["incremental_publication_ms"] > 0
    assert 0 < runs["buckets_rewritten"]["turns"] < runs["buckets"]["turns"]  # two documents changed of 13
    figures = publish.measure(tmp_path / "publish" / "out", repeat=1)
    assert any(name.startswith("before:") for name in figures) and all(f for f in figures.values())


def test_the_shard_measure_runs_a_shard_and_leaves_no_output(tmp_path, monkeypatch):
    from bench import shard_cpu
    from flows.core import ingest
    from tests.helpers import ROOT

    monkeypatch.setattr(shard_cpu.tempfile, "tempdir", str(tmp_path))
    settings = Settings()
    refs = ingest.discover([ROOT / "sample_logs" / "whatsapp"], settings)
    seconds, result = shard_cpu.one_shard(refs, settings)
    assert seconds >= 0 and result.written == len(result.sessions) >= 2
    assert list(tmp_path.iterdir()) == []  # the shard's output folder is removed


def test_a_run_of_one_set_keeps_the_other_sets_in_the_results_and_their_page(tmp_path):
    from bench.run import save
    from tests.helpers import ROOT

    landed = orjson.loads((ROOT / "bench" / "results.json").read_bytes())
    earlier = landed | {"commit": "old", "sets": {"chatgpt": landed["sets"]["chatgpt"]}}
    (tmp_path / "results.json").write_bytes(orjson.dumps(earlier))
    save(landed | {"commit": "new", "sets": {"mixed": landed["sets"]["mixed"]}}, tmp_path, quick=False)
    kept = orjson.loads((tmp_path / "results.json").read_bytes())
    assert list(kept["sets"]) == ["chatgpt", "mixed"]
    page = (tmp_path / "RESULTS.md").read_text()
    assert "\nchatgpt (" in page and "\nmixed (" in page
    assert f"MB, measured at commit {landed['sets']['chatgpt']['commit']})" in page  # an older set says so
