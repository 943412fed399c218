"""Property tests over every grammar and the gate: no exception escapes, every input ends accounted for."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from validators import gate

CTX = {}


def _ctx(fmt: str | None) -> RunContext:
    if fmt not in CTX:
        CTX[fmt] = RunContext.from_settings(Settings(format=fmt))
    return CTX[fmt]


# Text that looks a little like chat logs, so the grammars get past their first checks.
fragments = st.sampled_from([
    "User: ", "Assistant: ", "[2025-08-24 10:00:00] ", "12/24/19, 11:23 - ", "[8/15/23, 9:12:33 AM] ",
    "<nick> ", "*** x has joined #c", "## User", "**User:** ", "Session: ", "---\n", "```\n", "\n", "\r\n",
    '{"role": "user", "content": "hi"}\n', '{"messages": [', '{"mapping": {', '"author": {"role": "user"}',
    '[{"id": "c", "mapping": {}}]', '"type": "message"', "\u200e", "\x00", "😀", "(a:b@c)", ":", "@", "(", ")",
])
documents = st.lists(fragments | st.text(max_size=20), max_size=40).map("".join)


def _check_outcome(outcome):
    assert outcome.status in ("ok", "partial", "quarantined")
    if outcome.status == "quarantined" and not outcome.sessions:
        assert outcome.reasons and all(outcome.reasons)
    for s in outcome.sessions:
        assert s.status in ("ok", "partial", "quarantined")
        assert (s.encoded is not None) == (s.status != "quarantined")
        if s.status == "quarantined":
            assert s.reasons


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.sampled_from(["utf-8", "utf-16", "latin-1"]))
def test_detected_pipeline_never_raises(text, encoding):
    data = text.encode(encoding, errors="replace")
    _check_outcome(process_bytes(data, "fuzz.txt", _ctx(None)))


@pytest.mark.parametrize("grammar", [g.name for g in registry.all_grammars()])
def test_every_grammar_forced_never_raises(grammar):
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(documents | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
    def check(text):
        _check_outcome(process_bytes(text.encode(), f"fuzz-{grammar}.json", _ctx(grammar)))

    check()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.integers(0, 5))
def test_gate_never_raises_on_any_json(doc, counted):
    import orjson

    doc = doc if isinstance(doc, dict) else {"value": doc}
    result = gate.check(doc, orjson.dumps(doc), counted)
    assert not result.passed  # nothing random is a valid session document
    assert all(f.reason and f.message for f in result.failures)
