"""A batch's encoded interactions (normalizers/table.py ``_encode``): each session's body joined in polars is
byte for byte the body the CSV-and-slice encoder made (tests/oracle/body.py), with the same characters
and opening messages, whatever the sessions, texts, times and source fields; no CSV is written."""

from __future__ import annotations

from unittest import mock

import orjson
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from normalizers.assemble import Summary
from normalizers.table import SessionColumns, _encode, _Speaker
from tests.oracle import body as oracle

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_SPEAKERS = {
    "a": _Speaker({}, ',"speakerName":"Ana","model":null,"modelSource":"none","speaker":"user"', "", "none", [], []),
    "b": _Speaker({}, ',"speakerName":"Bo \\"B\\"","model":null,"modelSource":"none","speaker":"assistant"',
                  ',"speakerNameRaw":"Bo"', "none", [], []),
}
_TURN = st.fixed_dictionaries({
    "key": st.sampled_from(sorted(_SPEAKERS)), "role": st.sampled_from(["user", "assistant", "system"]),
    "kind": st.sampled_from(["message", "system", "media", "code"]), "content": _TEXT,
    "date": st.one_of(st.none(), st.just("2024-01-01T10:05:00Z")), "time_raw": st.one_of(st.none(), _TEXT),
    "extra": st.one_of(st.none(), st.just('{"a":1}')), "lines": st.booleans(), "pointer": _TEXT,
    "part": st.one_of(st.none(), _TEXT),
})
_SESSIONS = st.lists(st.lists(_TURN, min_size=1, max_size=6), min_size=1, max_size=5)


def _frame(sessions: list[list[dict]]) -> pl.DataFrame:
    rows = [{**turn, "session": s, "ordinal": n, "line_start": n if turn["lines"] else None,
             "line_end": n + 1 if turn["lines"] else None}
            for s, turns in enumerate(sessions) for n, turn in enumerate(turns, 1)]
    schema = {"session": pl.Int64, "ordinal": pl.Int64, "key": pl.String, "role": pl.String, "kind": pl.String,
              "content": pl.String, "date": pl.String, "time_raw": pl.String, "extra": pl.String,
              "line_start": pl.Int64, "line_end": pl.Int64, "pointer": pl.String, "part": pl.String}
    return pl.DataFrame([{k: row[k] for k in schema} for row in rows], schema=schema)


def _parts(n: int) -> list[SessionColumns]:
    return [SessionColumns(Summary(count=1)) for _ in range(n)]


@settings(max_examples=150, deadline=None)
@given(sessions=_SESSIONS)
def test_each_sessions_body_is_the_csv_encoders(sessions):
    frame = _frame(sessions)
    want, got = _parts(len(sessions)), _parts(len(sessions))
    oracle.encode(frame, _SPEAKERS, want)
    with mock.patch.object(pl.DataFrame, "write_csv", side_effect=AssertionError("written as a CSV")):
        _encode(frame, _SPEAKERS, got)
    for w, g in zip(want, got, strict=True):
        assert (g.body, g.characters, g.summary.opening) == (w.body, w.characters, w.summary.opening)
        orjson.loads(b"[" + g.body + b"]")  # the lines of a JSON list
