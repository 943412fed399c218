"""The gate's time checks as columns and its envelope pre-filter give exactly the per-session walk's failures
(tests/validators/gate_oracle.py) on every known input, on known documents given bad times, and on
generated ones."""

from __future__ import annotations

import copy
import random
import re

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.core.process import process_bytes
from models.errors import Reason
from models.settings import Settings
from normalizers.assemble import RunContext
from tests.helpers import CONFORMANCE, known_inputs
from tests.validators import gate_oracle as oracle
from tests.validators.test_gate import _doc
from validators import gate

INPUTS = known_inputs()
_INDEX = re.compile(r"interactions\[(\d+)\]")
BAD = ["2024-02-30T00:00:00Z", "0000-01-01T00:00:00Z", "2016-12-31T23:59:60Z", "2024-01-01T24:00:00Z",
       "2024-01-01T00:00:00", "2024-01-01T00:00:00+00:00", "\u0662\u0660\u0662\u0664-01-01T00:00:00Z",
       "2024-01-01T00:00:00Z\n", "2024-01-01 00:00:00Z", "yesterday", "", "2023-02-29T12:00:00Z"]


def gate_times(doc: dict) -> list[oracle.Failure]:
    """The product gate's time failures of a whole document (its interactions as dicts)."""
    result = gate.check(doc, None, len(doc["artifacts"]["Chatthistorik"]["interactions"]))
    return [(f.path, f.message) for f in result.failures if f.reason is Reason.TIMESTAMP_FORMAT]


def column_times(sessions: list[list[dict]]) -> list[list[oracle.Failure]]:
    """The column check's time failures of a batch of sessions' interactions, each session's in
    interaction order (the column check lists dates before source fields; within an interaction the
    walk does too)."""
    rows = [(s, it.get("role"), it.get("kind"), it.get("content"), it.get("date"))
            for s, items in enumerate(sessions) for it in items]
    frame = pl.DataFrame(rows, orient="row", schema={"session": pl.Int64, "role": pl.Utf8, "kind": pl.Utf8,
                                                     "content": pl.Utf8, "date": pl.Utf8})
    checked = [[{"at": i, "sourceFields": it["sourceFields"]} for i, it in enumerate(items) if it.get("sourceFields")]
               for items in sessions]
    checks = gate.FrameCheck.batch(frame, [len(items) for items in sessions], checked)
    return [sorted(((f.path, f.message) for f in c.out.failures if f.reason is Reason.TIMESTAMP_FORMAT),
                   key=lambda f: int(_INDEX.search(f[0]).group(1))) for c in checks]


def _documents(path) -> list[dict]:
    got = process_bytes(path.read_bytes(), path.name, RunContext.from_settings(Settings()))
    docs = [orjson.loads(s.encoded) if s.encoded else s.document for s in got.sessions]
    return [d for d in docs if isinstance(d, dict)]


def _spoil(doc: dict, rnd: random.Random) -> dict:
    """The document with bad times where the gate looks (and under keys it must not look at)."""
    doc = copy.deepcopy(doc)
    log = doc["artifacts"]["ByggLogg"]
    log.setdefault("sourceMeta", {})["exportedAt"] = rnd.choice(BAD)
    log["sourceMeta"]["dateRaw"] = rnd.choice(BAD)
    doc["artifacts"]["Chatthistorik"]["lastDate"] = rnd.choice(BAD)
    for it in doc["artifacts"]["Chatthistorik"]["interactions"]:
        if rnd.random() < 0.3:
            it["date"] = rnd.choice(BAD)
        if rnd.random() < 0.3:
            it["sourceFields"] = {**(it.get("sourceFields") or {}),
                                  "thread": [{"editedAt": rnd.choice(BAD), "timestamp": rnd.choice([BAD[0], 7])}]}
    return doc


def _compare(docs: list[dict]) -> None:
    for doc in docs:
        assert gate_times(doc) == oracle.document_times(doc)
    interactions = [d["artifacts"]["Chatthistorik"]["interactions"] for d in docs]
    assert column_times(interactions) == [oracle.interaction_times(items) for items in interactions]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.relative_to(p.parents[1]).as_posix())
def test_known_documents_give_the_walks_time_failures(path):
    docs = _documents(path)
    _compare(docs)
    _compare([_spoil(d, random.Random(f"{path.name}:{n}")) for n, d in enumerate(docs)])


def test_the_conformance_set_is_compared_when_present():
    if not CONFORMANCE.is_dir():
        pytest.skip(f"{CONFORMANCE} is absent: the conformance exports are not compared")
    assert any(CONFORMANCE in p.parents for p in INPUTS)


def test_an_envelope_without_a_key_named_like_a_time_is_not_walked(monkeypatch):
    walked = []
    monkeypatch.setattr(gate, "_walk_times", lambda node, path, out: walked.append(path))
    doc = _doc()
    doc["artifacts"]["Chatthistorik"]["interactions"] = []
    gate.check(doc, None, 0, schema=False)
    assert walked == []
    doc["artifacts"]["ByggLogg"]["sourceMeta"] = {"sentAt": "now"}
    gate.check(doc, None, 0, schema=False)
    assert walked == ["$"]


def test_the_column_check_refuses_what_is_no_calendar_instant():
    items = [{"role": "user", "kind": "message", "content": "x", "date": d} for d in BAD[:4]]
    assert [p for p, _ in column_times([items])[0]] == [
        f"$.artifacts.Chatthistorik.interactions[{i}].date" for i in range(4)]


_KEYS = st.sampled_from(["date", "Date", "DATE", "timestamp", "TimeStamp", "sentAt", "sentat", "updatedDate",
                         "lastTimestamp", "dateRaw", "rawTimestamp", "interactions", "at", "At", "name"]
                        ) | st.text(max_size=6)
_STAMP = st.builds(lambda y, mo, d, h, mi, s: f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}Z",
                   st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25),
                   st.integers(0, 61), st.integers(0, 61))
_ISO = st.datetimes().map(lambda t: t.strftime("%Y-%m-%dT%H:%M:%S") + "Z")
TIMES = st.sampled_from(BAD) | _STAMP | st.text(max_size=22) | _ISO
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | TIMES
TREES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
                     max_leaves=8)


@st.composite
def documents(draw) -> dict:
    doc = _doc(draw(st.integers(0, 4)))
    for it in doc["artifacts"]["Chatthistorik"]["interactions"]:
        it["date"] = draw(st.none() | TIMES)
        it["sourceFields"] = draw(st.dictionaries(_KEYS, TREES, max_size=3))
    doc["artifacts"]["ByggLogg"]["sourceMeta"] = draw(st.dictionaries(_KEYS, TREES, max_size=3))
    doc["artifacts"]["Chatthistorik"].update(draw(st.dictionaries(_KEYS.filter(lambda k: k != "interactions"),
                                                                  TREES, max_size=2)))
    doc["createdAt"] = draw(TIMES)
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(documents(), min_size=1, max_size=3))
def test_generated_bad_times_give_the_walks_failures(docs):
    _compare(docs)


_NAMES = st.sampled_from(["Alice", "Bob", "", " ", None, 0.0, -0.0, 1, True, ["x"]])
_MODELS = st.fixed_dictionaries({"provider": st.sampled_from(["unknown", "openai", "", None, 0]),
                                 "name": st.sampled_from(["unknown", "gpt-4o"]),
                                 "version": st.sampled_from(["unknown", "2024"])}) | st.sampled_from([None, "x", 0])
_SPEAKER_ITEMS = st.builds(lambda name, model, speaker: {"speakerName": name, "model": model, "speaker": speaker},
                           _NAMES, _MODELS, st.sampled_from(["Alice (unknown:unknown@unknown)", "Bob (work)", "",
                                                             None, 0.0, -0.0, "Alice (openai:gpt-4o@2024)"]))


def _with_speakers(sessions: list[list[dict]]) -> tuple[pl.DataFrame, list[int], list[list[dict]]]:
    rows = [(s, it.get("role", "user"), it.get("kind", "message"), it.get("content", "x"), it.get("date"))
            for s, items in enumerate(sessions) for it in items]
    frame = pl.DataFrame(rows, orient="row", schema={"session": pl.Int64, "role": pl.Utf8, "kind": pl.Utf8,
                                                     "content": pl.Utf8, "date": pl.Utf8})
    return frame, [len(items) for items in sessions], [[{"at": i, **it} for i, it in enumerate(items)]
                                                        for items in sessions]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_SPEAKER_ITEMS, max_size=4), min_size=1, max_size=4))
def test_speakers_checked_once_per_batch_give_each_sessions_own_failures(sessions):
    frame, sizes, checked = _with_speakers(sessions)
    got = [c.out.failures for c in gate.FrameCheck.batch(frame, sizes, checked)]
    expected = []
    for items in checked:
        out = gate._Collector()
        for it in items:
            gate._check_speaker(f"$.artifacts.Chatthistorik.interactions[{it['at']}]", it["speakerName"], it["model"],
                                it["speaker"], out)
        expected.append(out.failures)
    assert got == expected


def test_a_batch_checks_each_distinct_speaker_once(monkeypatch):
    calls = []
    check = gate._check_speaker
    monkeypatch.setattr(gate, "_check_speaker", lambda *a: calls.append(a[1]) or check(*a))
    alice = {"speakerName": "Alice", "model": {"provider": "unknown", "name": "unknown", "version": "unknown"},
             "speaker": "Alice (unknown:unknown@unknown)"}
    gate.FrameCheck.batch(*_with_speakers([[alice, {**alice, "speaker": "Alice (x)"}]] * 50))
    assert len(calls) == 2


_ROWS = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool", "bot", "", None]),
                               "kind": st.sampled_from(["message", None]), "content": st.sampled_from(["x", "", None]),
                               "date": st.none() | TIMES})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_ROWS, max_size=6) | st.lists(_ROWS, min_size=52, max_size=60), min_size=1, max_size=4))
def test_column_checks_over_a_batch_give_each_sessions_own_checks(sessions):
    frame = pl.DataFrame([(s, *(row[k] for k in ("role", "kind", "content", "date")))
                          for s, rows in enumerate(sessions) for row in rows], orient="row",
                         schema={"session": pl.Int64, "role": pl.Utf8, "kind": pl.Utf8, "content": pl.Utf8,
                                 "date": pl.Utf8})
    got = [c.out.failures for c in gate.FrameCheck.batch(frame, [len(r) for r in sessions], [[] for _ in sessions])]
    expected = []
    for rows in sessions:
        out = gate._Collector()
        oracle.column_failures(rows, 0, out)
        expected.append(out.failures)
    assert got == expected


def test_a_range_of_a_session_is_checked_from_its_first_interaction():
    check = gate.FrameCheck(start=40)
    check.feed(pl.DataFrame({"role": ["user", "bot"], "kind": ["message", None], "content": ["x", "y"],
                             "date": ["2024-02-30T00:00:00Z", None]}), [])
    assert [(f.reason, f.path) for f in check.out.failures] == [
        (Reason.SCHEMA, "$.artifacts.Chatthistorik.interactions[41].role"),
        (Reason.SCHEMA, "$.artifacts.Chatthistorik.interactions[41]"),
        (Reason.TIMESTAMP_FORMAT, "$.artifacts.Chatthistorik.interactions[40].date")]
    assert check.count == 42


def test_a_batch_of_refused_sessions_is_checked_without_a_table_per_session(monkeypatch):
    fed = []
    monkeypatch.setattr(gate.FrameCheck, "feed", lambda self, *a, **k: fed.append(a))
    items = [{"role": "bot", "kind": "message", "content": "x", "date": BAD[0]}] * 3
    checks = gate.FrameCheck.batch(*_with_speakers([items] * 20)[:2], [[] for _ in range(20)])
    assert fed == [] and all(len(c.out.failures) == 6 for c in checks)
