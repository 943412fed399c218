"""Round trip for every registered grammar: generate a chat, render it, parse it back, compare.

Each grammar has a renderer module tests/renderers/<grammar with - as _>.py with
``render(session) -> (file name, bytes)`` and, optionally, ``expected(session)`` (what survives
the format, for example minutes instead of seconds) and ``STRATEGY`` (names the format allows).
"""

from __future__ import annotations

import importlib

import pytest
from hypothesis import HealthCheck, given, settings

from models.settings import Settings
from parsers import registry
from parsers.text import decode
from tests import strategies
from tests.helpers import read_one

GRAMMARS = [g.name for g in registry.all_grammars()]


def _renderer(name: str):
    return importlib.import_module(f"tests.renderers.{name.replace('-', '_')}")


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_every_grammar_has_a_renderer(grammar):
    assert hasattr(_renderer(grammar), "render")


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_roundtrip(grammar):
    module = _renderer(grammar)
    strategy = getattr(module, "STRATEGY", strategies.sessions())
    expected_of = getattr(module, "expected", None)
    g = registry.get(grammar)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(strategy)
    def check(session):
        name, data = module.render(session)
        source = decode(data, name)
        detected = registry.detect(source.text[:65536], name, threshold=0.5)
        assert detected.grammar == grammar, detected.scores
        parsed = list(read_one(g, source, Settings()))
        assert len(parsed) == 1
        turns = parsed[0].turns
        want = expected_of(session) if expected_of else [(t.speaker, t.content, t.time) for t in session.turns]
        got = [(t.speaker, t.content, t.time.replace(tzinfo=None) if t.time else None) for t in turns]
        assert got == want
        assert g.count_turns(parsed[0].raw) == len(turns)

    check()
