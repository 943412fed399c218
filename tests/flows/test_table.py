"""Sessions assembled a batch at a time as one table are byte for byte the oracle's documents (the
turn-record route in tests/oracle): every JSON golden, sample and conformance input of the grammars that
append turns to column builders under five settings, generated conversations, and whatever the batch
boundaries and worker count."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.datasets import rows
from flows.core import batches, ingest
from flows.core.process import process_bytes
from flows.core.shard import run_shard
from models.errors import Reason
from models.records import ModelRef, Turn
from models.settings import Settings
from models.status import SessionStatus
from normalizers.assemble import RunContext
from parsers import registry
from parsers.text import decode
from parsers.turncols import TurnColumns
from tests import oracle
from tests.helpers import CONFORMANCE, GOLDEN, ROOT

APPENDS = ["chatgpt", "claude"]
"""The grammars that append their turns to column builders as they read them."""


def _inputs(grammar: str) -> list[Path]:
    """The grammar's JSON golden inputs, sample logs and conformance fixtures (files)."""
    found = [p for p in (GOLDEN / grammar).rglob("*.json") if not p.name.endswith(".expected.json")]
    found += sorted((ROOT / "sample_logs" / grammar).rglob("*.json"))
    found += sorted((CONFORMANCE / "fixtures").glob(f"{grammar}_*.json"))
    return sorted(found)


CASES = [(g, p) for g in APPENDS for p in _inputs(g)]
SETTINGS = [Settings(**values) for values in (
    {}, {"source_tz": "Europe/Stockholm", "redact_pii": True}, {"secrets_policy": "report"}, {"max_turn_chars": 20},
    {"secrets_policy": "off", "runtime_identity": "openai:gpt-4o@2024-08-06"})]


def test_the_large_export_grammars_append_to_columns():
    for name in APPENDS:
        parsed = next(registry.get(name).parse(decode(_inputs(name)[0].read_bytes(), "c.json"), Settings()))
        assert isinstance(parsed.turns, TurnColumns)
    assert len(CASES) >= 12


def _routes(data: bytes, name: str, settings: Settings):
    """The product's outcome, and the oracle's documents (None where it refuses a session)."""
    product = process_bytes(data, name, RunContext.from_settings(settings))
    return product, oracle.documents(decode(data, name), settings)


def _same(product, expected) -> None:
    assert [s.encoded for s in product.sessions] == (expected or [])


@pytest.mark.parametrize("settings", SETTINGS, ids=["default", "zone-pii", "report", "truncate", "off-identity"])
@pytest.mark.parametrize(("grammar", "path"), CASES, ids=lambda v: getattr(v, "name", v))
def test_batch_documents_equal_the_oracles(grammar, path, settings):
    columns, records = _routes(path.read_bytes(), path.name, settings)
    _same(columns, records)
    assembled = [s for s in columns.sessions if s.rows is not None and isinstance(s.rows.turns, pl.DataFrame)]
    assert len(assembled) == sum(s.encoded is not None for s in columns.sessions)
    for s in assembled:  # the turns rows are the document's interactions
        _, expected = rows("x", "0", orjson.loads(s.encoded))
        got = s.rows.keyed("x", "0")[1]
        assert got.to_dicts() == pl.DataFrame(expected, schema=got.schema).to_dicts()


def test_a_small_input_assembles_a_table():
    """No second route: a small input's sessions are assembled as a table too."""
    path = GOLDEN / "chatgpt" / "conversations.json"
    outcome = process_bytes(path.read_bytes(), path.name, RunContext.from_settings(Settings()))
    assert {isinstance(s.rows.turns, pl.DataFrame) for s in outcome.sessions} == {True}


# --- generated conversations ---------------------------------------------------------------------

_TEXT = st.one_of(
    st.just(""), st.just("   "), st.text(max_size=30),
    st.sampled_from(["key sk-abcdefghijklmnopqrstuvwxyz012345 here", "mail ann@example.com or +46 70 123 45 67",
                     "```bash\nls -la\n```", "see H-17 and diff --git a/x b/x", "password: hunter2hunter2",
                     "\u2028\u2029\ud7ff \U0001f600 \"quoted\" \\ back"]),
)
_TIME = st.one_of(st.none(), st.integers(-10, 5_000_000_000), st.floats(0, 2e9, allow_nan=False),
                  st.sampled_from(["2024-03-31T02:30:00", "2024-03-31T01:30:00Z", "2023-10-29T02:30:00+02:00",
                                   "not a time", "", "1969-12-31T23:59:59Z", "2024-02-30T10:00:00Z", True]))
_ROLE = st.sampled_from(["user", "assistant", "system", "tool", "critic", None])


@st.composite
def _message(draw, i: int) -> dict:
    role = draw(_ROLE)
    metadata: dict = {}
    if draw(st.booleans()):
        metadata["model_slug"] = draw(st.sampled_from(["gpt-4o", "o1-mini", "", "gpt sk-abcdefghijklmnopqrstuvwx"]))
    if draw(st.integers(0, 5)) == 0:
        metadata["citations"] = [{"title": draw(st.text(max_size=8)), "pub_date": draw(st.sampled_from(
            ["2024-01-01T00:00:00Z", "yesterday", None])), "url": "https://user:pass123@example.com/x"}]
    content = ({"content_type": "text", "parts": [draw(_TEXT)]} if draw(st.integers(0, 6)) else
               {"content_type": draw(st.sampled_from(["code", "execution_output", "thoughts", "mystery"])),
                "text": draw(_TEXT), "language": "python"})
    message = {"id": f"m{i}", "author": {"role": role} if role else {}, "content": content,
               "create_time": draw(_TIME), "metadata": metadata}
    if draw(st.integers(0, 6)) == 0:
        message["recipient"] = "python"
    if draw(st.integers(0, 8)) == 0:
        message["author"]["name"] = draw(st.sampled_from(["browser", "A (b)", "sk-abcdefghijklmnopqrstuvwxyz0"]))
    return message


@st.composite
def _conversation(draw, n: int) -> dict:
    count = draw(st.integers(0, 7))
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ["n0"] if count else []}}
    for i in range(count):
        mapping[f"n{i}"] = {"id": f"n{i}", "message": draw(_message(i)), "parent": "root" if i == 0 else f"n{i - 1}",
                            "children": [f"n{i + 1}"] if i + 1 < count else []}
    conv = {"id": f"c{n}", "title": draw(st.sampled_from(["t", None, "sk-abcdefghijklmnopqrstuvwxyz0123"])),
            "create_time": draw(_TIME), "mapping": mapping, "current_node": f"n{count - 1}" if count else "root"}
    if draw(st.booleans()):
        conv["default_model_slug"] = "gpt-4"
    return conv


@st.composite
def _claude(draw, n: int) -> dict:
    """A Claude conversation: senders, blocks, times and attachments drawn."""
    messages = []
    for i in range(draw(st.integers(0, 6))):
        blocks = draw(st.lists(st.one_of(
            st.builds(lambda t: {"type": "text", "text": t}, _TEXT),
            st.just({"type": "tool_use", "name": "web_search", "input": {"q": "x", "createdAt": "soon"}}),
            st.builds(lambda t: {"type": "thinking", "thinking": t, "start_timestamp": "2024-05-01T10:00:00Z"}, _TEXT)),
            max_size=2))
        message = {"uuid": f"u{n}-{i}", "sender": draw(st.sampled_from(["human", "assistant", "system", "bot", None])),
                   "text": draw(_TEXT), "content": blocks, "created_at": draw(_TIME)}
        if draw(st.integers(0, 4)) == 0:
            message["attachments"] = [{"file_name": "a.txt", "extracted_content": draw(_TEXT)}]
        if draw(st.integers(0, 4)) == 0:
            message["model"] = draw(st.sampled_from(["claude-3-opus", "sk-abcdefghijklmnopqrstuvwxyz0"]))
        messages.append(message)
    return {"uuid": f"c{n}", "name": draw(st.sampled_from(["t", ""])), "created_at": draw(_TIME),
            "chat_messages": messages}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([_conversation, _claude]).flatmap(lambda make: st.lists(st.integers(0, 3), min_size=1,
       max_size=8).flatmap(lambda ns: st.tuples(*(make(i) for i in range(len(ns)))))),
       st.sampled_from(SETTINGS[:4]), st.integers(1, 20))
def test_generated_conversations_give_the_oracles_bytes(conversations, settings, batch):
    data = orjson.dumps(list(conversations))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batches, "BATCH_TURNS", batch)  # batch boundaries anywhere
        columns, records = _routes(data, "conversations.json", settings)
    _same(columns, records)
    assert columns.grammar == ("claude" if "chat_messages" in conversations[0] else "chatgpt")


def test_batches_of_one_session_or_all_give_the_same_documents(monkeypatch):
    data = (GOLDEN / "chatgpt" / "conversations.json").read_bytes()
    got = []
    for size in (1, 3, 10_000):
        monkeypatch.setattr(batches, "BATCH_TURNS", size)
        got.append([s.encoded for s in process_bytes(data, "c.json", RunContext.from_settings(SETTINGS[0])).sessions])
    assert got[0] == got[1] == got[2] and all(got[0])


@pytest.mark.parametrize("where", ["assemble_batch", "envelope"])
def test_a_batch_the_column_route_fails_on_is_quarantined_not_retried(where, monkeypatch):
    """No silent fallback: the batch's sessions are quarantined with the failure named, and no other
    route makes their documents; the sessions of other batches are written as always."""
    data = (GOLDEN / "chatgpt" / "conversations.json").read_bytes()
    expected = _routes(data, "c.json", SETTINGS[0])[1]
    real, calls = getattr(batches, where), []

    def fails_second(*args, **kwargs):  # after one session's envelope was made, or at once
        calls.append(1)
        if len(calls) == 2 or where == "assemble_batch":
            raise RuntimeError("a column route shortcoming")
        return real(*args, **kwargs)

    monkeypatch.setattr(batches, where, fails_second)
    got = process_bytes(data, "c.json", RunContext.from_settings(SETTINGS[0]))
    assert len(calls) >= (1 if where == "assemble_batch" else 2)
    failed = [s for s in got.sessions if s.status is SessionStatus.QUARANTINED]
    assert failed and len(got.sessions) == len(expected)
    for s in failed:
        assert s.encoded is None and s.reasons == [Reason.INTERNAL.value]
        assert "the column route failed on its batch: RuntimeError: a column route shortcoming" in s.detail
    assert [s.encoded for s in got.sessions if s not in failed] == [
        e for s, e in zip(got.sessions, expected, strict=True) if s not in failed]


def test_the_builder_gives_back_the_turns_it_was_given():
    turns = [
        Turn("Ann", "user", "hi", datetime(2024, 1, 1, tzinfo=UTC), "1704067200", None, "message", None, "/0"),
        Turn("GPT", "assistant", "yo", datetime(2024, 1, 1, 3), "2024-01-01T03:00:00", ModelRef("openai", "x", None),
             "message", None, "/1", {"a": [1, {"b": None}]}, False),
        Turn("T", "tool", "", datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=-5))), "x", None, "tool_result",
             (3, 4), None, {"k": ""}, True, "the file before", "messages2.html"),
        Turn("S", "system", "{}", None, "bad", None, "notice", None, None, {"big": 2**70}),
    ]
    columns = TurnColumns.of(turns)
    assert columns.records() == turns and TurnColumns.of(columns) is columns
    assert not columns.appended and "turn 4" in columns.why
    assert len(columns) == 4 and columns.has_role("tool") and not columns.has_role("other")


def test_a_session_whose_fields_are_not_json_is_quarantined_alone():
    """A source field orjson cannot encode: the session is quarantined ``json_syntax``, its neighbours written."""
    data = orjson.loads((GOLDEN / "chatgpt" / "conversations.json").read_bytes())
    original = process_bytes(orjson.dumps(data), "c.json", RunContext.from_settings(Settings()))
    real = TurnColumns.add

    def odd(self, *args, **kwargs):
        real(self, *args, **kwargs)
        if kwargs.get("pointer", args[7] if len(args) > 7 else None) == odd.pointer:
            self.appended, self.why = False, "turn 1: Integer exceeds 64-bit range"

    first = original.sessions[0]
    odd.pointer = orjson.loads(first.encoded)["artifacts"]["Chatthistorik"]["interactions"][0]["source"]["pointer"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TurnColumns, "add", odd)
        got = process_bytes(orjson.dumps(data), "c.json", RunContext.from_settings(Settings()))
    assert got.sessions[0].status is SessionStatus.QUARANTINED
    assert got.sessions[0].reasons == [Reason.JSON_SYNTAX.value] and "64-bit" in got.sessions[0].detail
    assert [s.encoded for s in got.sessions[1:]] == [s.encoded for s in original.sessions[1:]]


# --- streamed exports: batch boundaries and workers ---------------------------------------------------

STREAMED = {"stream_json_bytes": 1}


def _export(n: int) -> list[dict]:
    """``n`` copies of the golden export's conversations, ids made distinct, and one id used twice."""
    data = orjson.loads((GOLDEN / "chatgpt" / "conversations.json").read_bytes())
    many = [{**c, "id": f"{c['id']}-{i}"} for i in range(n) for c in data]
    many[-1] = {**many[-1], "id": many[0]["id"]}
    return many


def _written(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for sub in ("sessions", "quarantine")
            for p in sorted((out / sub).rglob("*.json"))}


def _run(src: Path, out: Path, **values):
    settings = Settings(**values)
    result = run_shard(ingest.discover([src], settings), out, settings)
    return [(r.ordinal, r.session_id, r.status, r.reasons, r.detail, r.output_sha256, r.interactions, r.characters,
             r.unaccounted, r.declared) for r in result.sessions], _written(out)


def test_streamed_batches_and_workers_give_the_whole_reads_documents(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "conversations.json").write_bytes(orjson.dumps(_export(8), option=orjson.OPT_INDENT_2))
    runs = {name: _run(src, tmp_path / name, **values) for name, values in (
        ("whole", {}),
        ("one-each", {**STREAMED, "stream_chunk_bytes": 1, "workers": 1}),
        ("many", {**STREAMED, "stream_chunk_bytes": 4000, "workers": 1}),
        ("two-workers", {**STREAMED, "stream_chunk_bytes": 4000, "workers": 2}))}
    first = runs.pop("whole")
    assert all(run == first for run in runs.values())
    assert first[0][-1][3] == ["duplicate_session_id"]


@pytest.mark.parametrize("grammar", APPENDS)
def test_streamed_golden_folders_give_the_whole_reads_documents(grammar, tmp_path):
    src = tmp_path / "in"
    shutil.copytree(GOLDEN / grammar, src, ignore=shutil.ignore_patterns("*.expected.json"))
    whole = _run(src, tmp_path / "whole")
    streamed = _run(src, tmp_path / "streamed", **STREAMED, stream_chunk_bytes=2000, workers=1)
    assert streamed[1] == whole[1]
    # a streamed input's sessions are recorded as they are done, before the whole reads held for their batch
    assert sorted(streamed[0], key=repr) == sorted(whole[0], key=repr)
