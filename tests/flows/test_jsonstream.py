"""A large JSON list of conversations read entry by entry gives the documents of the whole read, with
one worker or two; a broken conversation or a cut file loses only what it must, and says so."""

from __future__ import annotations

import functools
import multiprocessing
import os
import re
import shutil
from pathlib import Path

import orjson
import polars as pl
import pytest

from audit import datasets
from audit.ledger import Ledger
from flows.core import ingest, jsonstream
from flows.core.shard import run_shard
from flows.pipeline import reconstruct
from models.records import SourceText
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from tests.helpers import CONFORMANCE, GOLDEN, ROOT

STREAMED = {"stream_json_bytes": 1, "stream_chunk_bytes": 1, "workers": 1}
LISTED = [g for g in registry.all_grammars() if g.conversations is not None]
"""Every grammar that names its list of conversations: each one's inputs are streamed below."""


def _inputs(name: str) -> list[Path]:
    """A grammar's goldens, its sample folder and its conformance inputs."""
    golden = [p for p in sorted((GOLDEN / name).iterdir()) if p.is_dir() or (
        p.suffix == ".json" and not p.name.endswith(".expected.json"))] if (GOLDEN / name).is_dir() else []
    samples = [ROOT / "sample_logs" / name] if (ROOT / "sample_logs" / name).is_dir() else []
    return [*golden, *samples, *sorted(CONFORMANCE.glob(f"fixtures/{name.replace('-', '_')}_*.json"))]


INPUTS = [(g.name, p) for g in LISTED for p in _inputs(g.name)]


def _run(src, out, **values):
    settings = Settings(**values)
    return run_shard(ingest.discover([src], settings), out, settings)


def _written(out) -> dict[str, bytes]:
    """Every document and quarantine record, by path."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for sub in ("sessions", "quarantine")
            for p in sorted((out / sub).rglob("*.json"))}


def _rows(result):
    return ([(r.ordinal, r.session_id, r.session_id_raw, r.status, r.reasons, r.detail, r.output_path,
              r.output_sha256, r.interactions, r.source_turns, r.characters, r.unaccounted, r.declared, r.drift)
             for r in result.sessions],
            [(f.source_key, f.status, f.reasons, f.detail, f.sessions, f.grammar) for f in result.files])


@pytest.fixture
def spy(monkeypatch):
    calls = []
    real = jsonstream.stream_entries

    def counted(*args, **kwargs):
        calls.append(args[1].name)
        return real(*args, **kwargs)

    monkeypatch.setattr(jsonstream, "stream_entries", counted)
    return calls


def _copy(path, tmp_path):
    src = tmp_path / "in"
    if path.is_dir():
        shutil.copytree(path, src, ignore=shutil.ignore_patterns("*.expected.json"))
    else:
        src.mkdir()
        shutil.copy(path, src / path.name)
    return src


def test_every_conversation_list_grammar_has_inputs_to_stream():
    """The grammars converted to ``conversations`` (the JSON exports that are a list of conversations)
    each have inputs below, so none is on the contract untested."""
    assert {g.name for g in LISTED} == {"chatgpt", "claude", "deepseek", "grok", "hangouts", "open-webui"}
    assert {name for name, _ in INPUTS} == {g.name for g in LISTED}


@pytest.mark.parametrize("name, path", INPUTS, ids=lambda p: p.relative_to(p.parents[1]).as_posix()
                         if isinstance(p, Path) else p)
@pytest.mark.parametrize("workers", [1, 2])
def test_streamed_entries_give_the_documents_of_the_whole_read(name, path, workers, tmp_path, spy):
    shape = registry.get(name).conversations
    src = _copy(path, tmp_path)
    whole, streamed = tmp_path / "whole", tmp_path / "streamed"
    a = _run(src, whole)
    assert not spy
    b = _run(src, streamed, **{**STREAMED, "workers": workers})
    lists = [p for p in src.rglob("*.json") if _is_list(p, shape)]
    assert len(spy) >= bool(lists)
    assert _written(whole) == _written(streamed)
    rows, noted = _unnoted(_rows(b))
    assert _rows(a) == rows
    assert all(_is_one_conversation(src, key, shape) for key in noted)  # read whole, and the row says why
    assert not list((streamed / ".spool").glob("*"))


def _is_list(path: Path, shape) -> bool:
    """A list of conversations as the grammar's ``shape`` locates it: at the top or in a wrapper object."""
    try:
        data = orjson.loads(path.read_bytes().lstrip(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError:
        return False
    return (isinstance(data, list) and shape.top_list) or (
        isinstance(data, dict) and shape.own_key not in data and shape.wrapper_of(data) is not None)


def _is_one_conversation(src: Path, key: str, shape) -> bool:
    (path,) = [p for p in src.rglob("*.json") if key.endswith(p.relative_to(src).as_posix())]
    return isinstance(orjson.loads(path.read_bytes().lstrip(b"\xef\xbb\xbf")), dict) and not _is_list(path, shape)


NOTE = "read whole, not streamed: "


def _unnoted(rows):
    """The rows without the note of a file read whole instead of streamed (``jsonstream.ReadWhole``), and
    the files that carry it."""
    sessions, files = rows
    noted = [f[0] for f in files if any(part.startswith(NOTE) for part in f[3].split("; "))]
    files = [(*f[:3], "; ".join(x for x in f[3].split("; ") if not x.startswith(NOTE)), *f[4:]) for f in files]
    return (sessions, files), noted


def _export(n: int) -> list[dict]:
    """``n`` conversations of the golden export, ids made distinct, and one id used twice far apart."""
    data = orjson.loads((GOLDEN / "chatgpt" / "conversations.json").read_bytes())
    many = [{**c, "id": f"{c['id']}-{i}"} for i in range(n) for c in data]
    many[-1] = {**many[-1], "id": many[0]["id"]}
    return many


@pytest.fixture
def sent(monkeypatch):
    """For each batch, True when it went to the spawned worker (which is waited for, so it takes batches
    too), False when it was done in the shard's process."""
    out = []
    real = jsonstream._dispatch

    def after_start(job, workers, inflight, ctx):
        if workers.started_up is not None:
            workers.started_up.result()
        done = real(job, workers, inflight, ctx)
        out.append(not isinstance(done, jsonstream.Done))
        return done

    monkeypatch.setattr(jsonstream, "_dispatch", after_start)
    return out


def _whole_one_two(src, tmp_path):
    """(result, documents) of the whole read, the streamed read with one worker and with two."""
    return [(_run(src, tmp_path / name, **values), _written(tmp_path / name)) for name, values in (
        ("whole", {}), ("one", {**STREAMED, "stream_chunk_bytes": 3000}),
        ("two", {**STREAMED, "stream_chunk_bytes": 3000, "workers": 2}))]


def test_one_worker_or_two_give_the_same_documents_and_ledger_rows(tmp_path, sent):
    src = tmp_path / "in"
    src.mkdir()
    (src / "conversations.json").write_bytes(orjson.dumps(_export(12), option=orjson.OPT_INDENT_2))
    (whole, whole_docs), (one, one_docs), (two, two_docs) = _whole_one_two(src, tmp_path)
    assert whole_docs == one_docs == two_docs
    assert _rows(whole) == _rows(one) == _rows(two)
    assert whole.sessions[-1].reasons == ["duplicate_session_id"]
    assert any(sent) and not all(sent)  # with two workers, batches went to the spawned one and were done here


def test_a_malformed_conversation_is_quarantined_and_the_others_are_written(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    export = _export(2)
    export[1] = {"id": "broken", "title": "no tree", "mapping": "not an object"}
    (src / "conversations.json").write_bytes(orjson.dumps(export))
    result = _run(src, tmp_path / "out", **STREAMED)
    statuses = [(r.ordinal, r.status.value, r.reasons) for r in result.sessions]
    assert statuses[1] == (2, "quarantined", ["parse_error"])
    assert "conversation /1 could not be read" in result.sessions[1].detail
    assert all(s == "ok" for _, s, _ in statuses[:1] + statuses[2:-1])
    assert (result.files[0].status.value, result.files[0].reasons) == ("partial", [])
    record = orjson.loads((tmp_path / "out" / result.sessions[1].output_path).read_bytes())
    assert record["reasons"] == ["parse_error"]
    whole = _run(src, tmp_path / "whole")
    assert whole.files[0].reasons == ["parse_error"] and len(whole.sessions) == 1  # the whole read stops there


def test_a_cut_file_keeps_the_conversations_before_the_cut_and_names_what_was_lost(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    export = _export(2)
    raw = orjson.dumps(export)
    starts = [raw.index(orjson.dumps(c)) for c in export]
    cut = starts[3] + 40
    (src / "conversations.json").write_bytes(raw[:cut])
    result = _run(src, tmp_path / "out", **STREAMED)
    assert [r.status.value for r in result.sessions] == ["ok", "ok", "ok"] or len(result.sessions) == 3
    row = result.files[0]
    assert (row.status.value, row.reasons) == ("partial", ["parse_error"])
    assert f"conversation #4 (/3, from byte {starts[3]})" in row.detail
    assert f"({cut - starts[3]} of {cut} bytes) were not read, the 3 before it were" in row.detail



HANGOUTS = GOLDEN / "hangouts" / "Takeout" / "Hangouts" / "Hangouts.json"


def hangouts_export(n: int, repeat: int = 1) -> dict:
    """A Takeout ``Hangouts.json`` of ``n`` copies of the golden conversations, ids made distinct, each
    one's events ``repeat`` times over (each copy a day later)."""
    golden = orjson.loads(HANGOUTS.read_bytes())["conversations"]
    out = []
    for i in range(n):
        for c in golden:
            cid = {"id": f"{c['conversation']['conversation_id']['id']}-{i}"}
            events = [_later(e, k) for k in range(repeat) for e in c["events"]]
            out.append({**c, "conversation": {**c["conversation"], "conversation_id": cid}, "events": events})
    return {"conversations": out}


def _later(event, days: int):
    """A copy of a Hangouts event ``days`` later, its id made distinct (an event or a time that is not one of
    the format's, kept as it is)."""
    if not isinstance(event, dict):
        return event
    stamp = event.get("timestamp")
    later = str(int(stamp) + days * 86_400_000_000) if isinstance(stamp, str) and stamp.isdigit() else stamp
    return {**event, "event_id": f"{event.get('event_id')}-{days}", "timestamp": later}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_large_hangouts_export_streams_with_the_bytes_of_the_whole_read(tmp_path, spy, workers):
    """A Hangouts export over ``stream_json_bytes`` is read conversation by conversation: its row no longer
    says it is read whole for want of a streamed read, and its documents and rows are the whole read's."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "Hangouts.json").write_bytes(orjson.dumps(hangouts_export(12, 3), option=orjson.OPT_INDENT_2))
    whole = _run(src, tmp_path / "whole")
    streamed = _run(src, tmp_path / "streamed", **{**STREAMED, "stream_chunk_bytes": 3000, "workers": workers})
    assert len(spy) == 1
    assert _written(tmp_path / "whole") == _written(tmp_path / "streamed")
    assert _rows(whole) == _rows(streamed)
    (row,) = streamed.files
    assert (row.status.value, row.detail, row.grammar) == ("ok", "", "hangouts")
    assert len(streamed.sessions) == 24 and all(s.status.value == "ok" for s in streamed.sessions)


def test_a_hangouts_list_without_its_wrapper_is_refused_by_both_reads(tmp_path, spy):
    """Hangouts keeps its conversations under ``conversations`` only: a bare list is not read as one by
    either read (the streamed read is refused up front, ``parsers/test_jsonsplit.py``: the whole read's error)."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "Hangouts.json").write_bytes(orjson.dumps(hangouts_export(1)["conversations"]))
    whole = _run(src, tmp_path / "whole", format="hangouts")
    streamed = _run(src, tmp_path / "streamed", **STREAMED, format="hangouts")
    assert not spy
    assert [(f.status.value, f.reasons) for f in whole.files] == [("quarantined", ["parse_error"])]
    assert [(f.status.value, f.reasons) for f in streamed.files] == [("quarantined", ["parse_error"])]
    assert "expected an object with a conversations list" in streamed.files[0].detail



@pytest.mark.parametrize("grammar, name", [("telegram", "full-export.json"), ("telegram", "single-chat.json"),
                                           ("skype", "messages.json")])
def test_a_list_the_split_cannot_take_is_read_whole_and_its_row_says_why(tmp_path, spy, grammar, name):
    """Telegram (two lists, nested, and the account's id from outside them; a single chat is one conversation)
    and Skype (names learnt from the whole export) name no list (docs/json-stream.md): a large export is
    read whole, and its row says so."""
    src = _copy(GOLDEN / grammar / name, tmp_path)
    whole = _run(src, tmp_path / "whole")
    large = _run(src, tmp_path / "large", **STREAMED)
    assert registry.get(grammar).conversations is None and not spy
    assert _written(tmp_path / "whole") == _written(tmp_path / "large")
    (row,) = large.files
    assert row.grammar == grammar
    assert row.detail == f"read whole, not streamed: the {grammar} grammar has no streamed read"
    assert _rows(whole)[0] == _rows(large)[0]


def _tables(out, monkeypatch=None):
    """The datasets of a run's output; with ``monkeypatch``, reading a document back fails."""
    if monkeypatch is not None:
        def never(*args, **kwargs):
            raise AssertionError("a streamed document was read back")

        monkeypatch.setattr(datasets, "_read_documents", never)
    sessions, turns = datasets.tables(out)
    return sessions.drop("run_id"), turns


def _mixed_export() -> list[dict]:
    """Conversations over several batches: one without an id, a duplicate id."""
    export = _export(6)
    export[4] = {k: v for k, v in export[4].items() if k not in ("id", "conversation_id")}
    return export


@pytest.mark.parametrize("workers", [1, 2])
def test_streamed_conversations_stage_the_rows_of_the_whole_read(tmp_path, monkeypatch, workers):
    src = tmp_path / "in"
    src.mkdir()
    (src / "conversations.json").write_bytes(orjson.dumps(_mixed_export(), option=orjson.OPT_INDENT_2))
    whole, streamed = tmp_path / "whole", tmp_path / "streamed"
    reconstruct([src], whole, Settings())
    summary = reconstruct([src], streamed, Settings(**{**STREAMED, "stream_chunk_bytes": 3000, "workers": workers}))
    assert summary.counts.sessions_quarantined == 1  # the duplicate
    expected = _tables(whole)
    staged = [p for t in datasets.TABLES for p in (streamed / datasets.PARTS / t).rglob("*.parquet")]
    assert len(staged) > 4  # the batches' parts, adopted by the run
    assert not [p for d in (datasets.STAGED, datasets.STAGED_SESSIONS) for p in (streamed / d).iterdir()]
    got = _tables(streamed, monkeypatch)
    assert got[0].equals(expected[0]) and got[1].equals(expected[1])
    assert got[0]["output_path"].str.contains("/fp-").any()  # the id-less one, at its fingerprint key


def test_documents_the_mass_latch_refuses_leave_no_rows(tmp_path, monkeypatch):
    """A changed export is a new snapshot and is merged (#15); what the latch refuses is the same
    export's reparse that shrinks: here every conversation, its turns cut to two characters."""
    src = tmp_path / "in"
    src.mkdir()
    export = _export(4)
    (src / "conversations.json").write_bytes(orjson.dumps(export))
    out = tmp_path / "out"
    settings = Settings(**{**STREAMED, "stream_chunk_bytes": 3000})
    reconstruct([src], out, settings)
    before = _tables(out)
    summary = reconstruct([src], out, settings.model_copy(update={"max_turn_chars": 2}))
    assert summary.counts.sessions_quarantined == len(export)  # each one latched, and the duplicate
    run = summary.run_id
    assert not [p for t in datasets.TABLES for p in (out / datasets.PARTS / t / run).glob("*.parquet")
                if pl.read_parquet(p).height]  # refused: no row of them
    after = _tables(out, monkeypatch)
    assert after[0].drop("flag").equals(before[0].drop("flag")) and after[1].equals(before[1])  # the accepted stand


def test_a_batch_that_fails_leaves_no_rows(tmp_path, monkeypatch):
    src = tmp_path / "in"
    src.mkdir()
    (src / "conversations.json").write_bytes(orjson.dumps(_export(4)))
    real, calls = jsonstream.run_job, []

    def failing(job, ctx=None):
        calls.append(job.entries[0][0])
        if len(calls) == 3:
            raise OSError("the spool's disk failed")
        return real(job, ctx)

    monkeypatch.setattr(jsonstream, "run_job", failing)
    settings = Settings(**{**STREAMED, "stream_chunk_bytes": 3000})
    ref = ingest.discover([src], settings)[0]
    ctx = RunContext.from_settings(settings)
    source = SourceText("", ref.name, "0" * 64, ref.size, "utf-8")
    emitted = []
    with pytest.raises(OSError, match="disk failed"):
        jsonstream.stream_json_input(functools.partial(Path(ref.path).open, "rb"), source,
                                     registry.detect('[{"mapping": {}}]', ref.name, threshold=0.5), ctx, tmp_path,
                                     lambda s: emitted.append(s) or ("x", "y"), ref.key)
    assert len(calls) == 3 and emitted
    assert not [p for t in datasets.TABLES for p in (tmp_path / datasets.PARTS / t).rglob("*") if p.is_file()]


def test_a_conversation_quarantined_leaves_no_rows(tmp_path, monkeypatch):
    src = tmp_path / "in"
    src.mkdir()
    export = _export(3)
    export[4] = {"id": "broken", "title": "no tree", "mapping": "not an object"}
    (src / "conversations.json").write_bytes(orjson.dumps(export))
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings(**{**STREAMED, "stream_chunk_bytes": 3000}))
    assert summary.counts.sessions_quarantined == 2  # the unreadable one and the duplicate
    sessions, turns = _tables(out, monkeypatch)
    assert sessions.height == len(export) - 2 and "broken" not in sessions["session_id"].to_list()
    parts = [pl.read_parquet(p) for t in datasets.TABLES for p in (out / datasets.PARTS / t).rglob("*.parquet")]
    assert not any("broken" in part["session_id"].to_list() for part in parts)
    assert turns.select("output_path").unique().height == sessions.height


DIES_AT = 5  # the conversation whose batch kills the spawned worker reading it
_RUN_JOB = jsonstream.run_job


def _dying_job(job, ctx=None):
    """``run_job``, except that a spawned worker given conversation ``DIES_AT`` dies at once: a real
    death (no exception, no result), as the kernel's OOM killer deals one."""
    if multiprocessing.parent_process() is not None and any(i == DIES_AT for i, *_ in job.entries):
        os._exit(137)
    return _RUN_JOB(job, ctx)


def test_a_worker_that_dies_loses_its_batch_and_the_run_completes(tmp_path, monkeypatch):
    real = jsonstream._dispatch

    def to_the_worker(job, workers, inflight, ctx):
        if workers.started_up is not None:
            workers.started_up.result()
        return real(job, workers, inflight, ctx)

    monkeypatch.setattr(jsonstream, "_dispatch", to_the_worker)
    monkeypatch.setattr(jsonstream, "INFLIGHT_PER_WORKER", 100)  # every batch to the spawned worker
    monkeypatch.setattr(jsonstream, "run_job", _dying_job)
    src = tmp_path / "in"
    src.mkdir()
    export = _export(4)
    (src / "conversations.json").write_bytes(orjson.dumps(export))
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings(**{**STREAMED, "stream_chunk_bytes": 3000, "workers": 2}))
    assert summary.status == "completed"
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    rows = ledger.sessions.of_run(summary.run_id)
    ledger.close()
    died = [r for r in rows if r.reasons == ("worker_died",)]
    assert DIES_AT + 1 in [r.ordinal for r in died]
    assert all("died twice" in r.detail and f"conversation /{r.ordinal - 1} " in r.detail for r in died)
    assert {r.status for r in rows if r not in died} <= {"ok", "quarantined"}
    assert sum(r.status == "ok" for r in rows) == len(export) - len(died) - 1  # and the duplicate id
    assert len(died) < len(export) // 2  # only its batch
    sessions, _ = _tables(out, monkeypatch)  # the batches that landed brought their rows
    assert sessions.height == len(export) - len(died) - 1
    assert not list((out / ".spool").glob("*")) and not list((out / datasets.STAGED).iterdir())


# --- wrapper objects: the list of conversations under a key, read by the same stream ---------------------

def _wrapped(conversations: list, **after) -> dict:
    return {"exported_at": "2024-07-01T12:00:00Z", "account": {"id": "u-1", "note": "}, {"},
            "conversations": conversations, **after}


def test_a_wrapper_object_streams_with_one_worker_or_two_and_gives_the_bytes_of_the_whole_read(
        tmp_path, sent, spy):
    src = tmp_path / "in"
    src.mkdir()
    doc = _wrapped(_export(12), source="chat.openai.com", tail={"conversations_seen": 24})
    (src / "export.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    (whole, whole_docs), (one, one_docs), (two, two_docs) = _whole_one_two(src, tmp_path)
    assert len(spy) == 2  # streamed twice, never read whole
    assert whole_docs == one_docs == two_docs and len(whole_docs) == 24
    assert _rows(whole) == _rows(one) == _rows(two)
    assert whole.files[0].detail == "" and whole.sessions[-1].reasons == ["duplicate_session_id"]
    pointers = {p for d in whole_docs.values() for p in re.findall(rb'"pointer": ?"([^"]*)"', d)}
    assert pointers and all(p.startswith(b"/conversations/") for p in pointers)
    assert any(sent) and not all(sent)


def test_a_cut_wrapper_keeps_the_conversations_before_the_cut_and_names_what_was_lost(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    export = _export(2)
    raw = orjson.dumps(_wrapped(export))
    starts = [raw.index(orjson.dumps(c)) for c in export]
    cut = starts[3] + 40
    (src / "export.json").write_bytes(raw[:cut])
    result = _run(src, tmp_path / "out", **STREAMED)
    assert [r.status.value for r in result.sessions] == ["ok", "ok", "ok"]
    assert [r.session_id for r in result.sessions] == [c["id"] for c in export[:3]]
    row = result.files[0]
    assert (row.status.value, row.reasons) == ("partial", ["parse_error"])
    assert f"conversation #4 (/conversations/3, from byte {starts[3]})" in row.detail
    assert f"({cut - starts[3]} of {cut} bytes) were not read, the 3 before it were" in row.detail


def test_an_object_whose_list_is_not_located_cheaply_is_read_whole_and_its_row_says_why(tmp_path, spy):
    src = tmp_path / "in"
    src.mkdir()
    conv = _export(1)[0]
    (src / "one.json").write_bytes(orjson.dumps(conv))  # one conversation: its own key, no wrapper
    (src / "first.json").write_bytes(orjson.dumps({"mapping": {}, "conversations": _export(1)}))
    whole = _run(src, tmp_path / "whole")
    got = _run(src, tmp_path / "streamed", **STREAMED)
    assert not spy and _written(tmp_path / "whole") == _written(tmp_path / "streamed")
    details = {f.source_key.rsplit("/", 1)[-1]: f.detail for f in got.files}
    assert details["one.json"] == ("read whole, not streamed: its list of conversations is not located cheaply: "
                                   "the object has the key 'mapping': it is one conversation")
    assert details["first.json"].endswith("read whole, not streamed: its list of conversations is not located "
                                          "cheaply: the object has the key 'mapping': it is one conversation")
    assert [f.status for f in got.files] == [f.status for f in whole.files]
    tight = _run(src, tmp_path / "tight", **STREAMED, memory_budget_bytes=1000)
    for row in tight.files:
        assert (row.status.value, row.reasons) == ("quarantined", ["too_large"])
        assert "more than the budget of 1000" in row.detail and "read whole, not streamed: " in row.detail


def test_a_key_after_the_list_that_the_whole_read_would_follow_is_named_in_the_row(tmp_path, spy):
    src = tmp_path / "in"
    src.mkdir()
    (src / "export.json").write_bytes(orjson.dumps(_wrapped(_export(1), mapping={})))
    result = _run(src, tmp_path / "out", **STREAMED)
    assert len(spy) == 1 and len(result.sessions) == 2
    row = result.files[0]
    assert (row.status.value, row.reasons) == ("partial", ["not_streamable"])
    assert "the wrapper object has the key 'mapping' after its list" in row.detail
    assert "the 2 conversations of the list were read" in row.detail
