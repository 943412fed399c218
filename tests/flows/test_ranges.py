"""A streamed input cut into ranges read in parallel gives the same document whatever the cuts."""

from __future__ import annotations

import hashlib
import io
import shutil

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit import datasets
from audit.ledger import Ledger
from flows.core import ingest, ranges
from flows.core.shard import run_shard
from flows.pipeline import reconstruct
from models.errors import NotStreamable, Reason
from models.settings import Settings
from parsers.grammars import _whatsapp_columns
from tests.flows.test_spool import WHATSAPP

STREAM = {"stream_text_bytes": 1, "stream_chunk_bytes": 64}


def _run(src, out, **values):
    s = Settings(**values)
    return run_shard(ingest.discover([src], s), out, s)


def _documents(out):
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted((out / "sessions").rglob("*.json"))}


def _input(tmp_path, path, name=None):
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    shutil.copy(path, src / (name or path.name))
    return src


@pytest.mark.parametrize("path", WHATSAPP, ids=lambda p: p.name)
def test_ranges_and_workers_do_not_change_the_bytes(path, tmp_path, monkeypatch):
    src = _input(tmp_path, path)
    _run(src, tmp_path / "whole")
    whole = _documents(tmp_path / "whole")
    read, seen = ranges.read_range, []
    monkeypatch.setattr(ranges, "read_range", lambda r, rng: seen.append(rng.index) or read(r, rng))
    for workers in (1, 2):
        for every in (1, 300, 10**9):
            out = tmp_path / f"w{workers}-r{every}"
            seen.clear()
            got = _run(src, out, **STREAM, workers=workers, stream_range_bytes=every)
            assert _documents(out) == whole, (workers, every)
            assert every < 10**9 or seen == [0]
            assert every > 1 or len(seen) > 1 or path.stat().st_size < 200  # cut at every block with a turn
            assert all(s.status != "quarantined" for s in got.sessions)
            assert not list((out / ".spool").glob("*"))


def _chat(lines: list[tuple[int, str, str, bool]]) -> str:
    out = []
    for i, (day, who, text, more) in enumerate(lines):
        out.append(f"{day}/{1 + i % 12}/23, 10:{i % 60:02d} - {who}: {text}")
        if more:
            out.append("a second line of it")
    return "".join(f"{line}\n" for line in out)


# speakers with a changed display field and a secret in the name, facts, non-ASCII text, attachments
_WHO = st.sampled_from(["Ann", "Bob (work)", "Çeda", "sk-ant-" + "a" * 24])
_TEXT = st.sampled_from(["hi", "```bash\nls\n```", "é" * 40, "H-Cache-Warm", "IMG-1.jpg (file attached)"])
_LINES = st.lists(st.tuples(st.integers(1, 28), _WHO, _TEXT, st.booleans()), min_size=1, max_size=40)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_LINES, every=st.integers(1, 2000), chunk=st.integers(1, 400), crlf=st.booleans(),
       workers=st.integers(1, 2))
def test_any_cut_gives_the_document_read_whole(tmp_path_factory, lines, every, chunk, crlf, workers):
    tmp = tmp_path_factory.mktemp("cut")
    src = tmp / "in"
    src.mkdir()
    text = "Messages are end-to-end encrypted.\n" + _chat(lines)
    (src / "WhatsApp Chat with Ann.txt").write_bytes(text.replace("\n", "\r\n" if crlf else "\n").encode())
    _run(src, tmp / "whole")
    _run(src, tmp / "cut", stream_text_bytes=1, stream_chunk_bytes=chunk, stream_range_bytes=every, workers=workers)
    assert _documents(tmp / "cut") == _documents(tmp / "whole")


def test_cuts_fall_on_turn_starts_with_their_line_and_turn():
    text = "preamble\r\n" + "".join(f"1/2/23, 10:0{i} - Ann: m{i}\r\nmore\r\n" for i in range(9))
    data = text.encode()
    blocks = ranges.Blocks()
    fp = io.BufferedReader(io.BytesIO(data))
    texts = list(blocks.scans(fp, 16, lambda text, line: (text, line), 1))
    starts, turns = [], 0
    for t, _ in texts:
        starts.append(turns)
        turns += int(_whatsapp_columns.header_lines(pl.Series(t.splitlines())).sum())
    got = ranges.cut(fp, blocks, starts, _whatsapp_columns.header_lines, 40)
    assert len(got) > 2 and (got[0].start, got[0].line, got[0].turn) == (0, 1, 0)
    for r in got[1:]:
        assert data[r.start:].startswith(b"1/2/23, 10:0")
        assert data[:r.start].count(b"\r\n") == r.line - 1
        assert data[:r.start].count(b" - Ann:") == r.turn
    assert [r.end for r in got[:-1]] == [r.start for r in got[1:]] and got[-1].end is None


@pytest.mark.parametrize(("raw", "k", "at"), [(b"a\nb\nc", 2, 4), (b"a\r\nb\rc\n", 2, 5), (b"a\r\r\nb", 2, 4),
                                               (b"abc", 0, 0)])
def test_line_offsets_in_raw_bytes(raw, k, at):
    assert ranges.line_offset(raw, k) == at


def test_a_broken_range_never_leaves_a_gap(tmp_path, monkeypatch):
    """A range that fails makes the whole input go the way of an input read whole: the same
    document, nothing left out, nothing left in the spool."""
    src = _input(tmp_path, WHATSAPP[0])
    expected = _run(src, tmp_path / "whole")
    read = ranges.read_range

    def broken(reading, rng):
        if rng.index == 1:
            raise NotStreamable(Reason.NOT_STREAMABLE, "some lines are in no turn and no declared region")
        return read(reading, rng)

    monkeypatch.setattr(ranges, "read_range", broken)
    got = _run(src, tmp_path / "cut", **STREAM, stream_range_bytes=100, workers=1)
    assert [(s.status, s.interactions) for s in got.sessions] == [(s.status, s.interactions) for s in expected.sessions]
    assert _documents(tmp_path / "cut") == _documents(tmp_path / "whole")
    assert not list((tmp_path / "cut" / ".spool").glob("*"))


def test_ranges_that_do_not_meet_are_refused():
    from normalizers.assemble import RunContext
    from normalizers.table import ColumnAssembler

    ctx = RunContext.from_settings(Settings())
    total = ColumnAssembler(ctx)
    with pytest.raises(ValueError, match="starts at turn 3"):
        total.absorb(ColumnAssembler.starting_at(ctx, 3))


def test_streamed_dataset_rows_equal_the_documents_rows(tmp_path, monkeypatch):
    """The turns a streamed document's ranges wrote as they read are the rows its bytes give."""
    src = _input(tmp_path, WHATSAPP[0])
    out = tmp_path / "out"
    s = Settings(**STREAM, stream_range_bytes=200)
    reconstruct([src], out, s)
    (doc,) = (out / "sessions").rglob("*.json")
    rel = doc.relative_to(out).as_posix()

    raw = doc.read_bytes()
    session, turns = datasets.rows(rel, hashlib.sha256(raw).hexdigest(), orjson.loads(raw))
    assert list((out / datasets.PARTS / "turns").rglob("*.parquet"))
    assert not (out / datasets.STAGED).exists() or not list((out / datasets.STAGED).iterdir())

    def never(*args, **kwargs):
        raise AssertionError("a streamed document was read back")

    monkeypatch.setattr(datasets, "_read_documents", never)
    got_sessions, got_turns = datasets.tables(out)
    expected = pl.DataFrame(turns, schema=datasets.PART_COLUMNS["turns"]).select(list(datasets.TURN_COLUMNS))
    assert got_turns.select(list(datasets.TURN_COLUMNS)).equals(expected)
    assert got_sessions.drop("run_id", "flag").row(0, named=True) == {
        k: v for k, v in session.items() if k in got_sessions.columns}


def test_streamed_rows_that_cannot_be_written_are_a_warning_naming_the_document(tmp_path, monkeypatch):
    """The document is written and the tables read it; the session's ledger row says why."""
    src = _input(tmp_path, WHATSAPP[0])
    out = tmp_path / "out"

    def full(*args, **kwargs):
        raise OSError(28, "No space left for the rows")

    monkeypatch.setattr(datasets, "_range_part", full)
    summary = reconstruct([src], out, Settings(**STREAM, stream_range_bytes=200))
    (doc,) = (out / "sessions").rglob("*.json")
    rel = doc.relative_to(out).as_posix()
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    (row,) = ledger.sessions.of_run(summary.run_id)
    ledger.close()
    assert row.status == "ok"
    assert f"{rel}: its dataset rows were not written (OSError: [Errno 28] No space left for the rows)" in row.detail
    assert not [p for p in (out / datasets.PARTS / "turns").rglob("*") if p.is_file()]
    raw = doc.read_bytes()
    _, turns = datasets.rows(rel, hashlib.sha256(raw).hexdigest(), orjson.loads(raw))
    assert datasets.tables(out)[1].height == len(turns)  # read from the document instead
