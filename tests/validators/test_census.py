"""The census of turn-start-shaped lines (validators/accounting): a header swallowed into a turn is
found, whatever the grammar, unless the grammar declared why it is text."""

from __future__ import annotations

import importlib
from dataclasses import replace

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.records import ParsedSession, Region, RegionKind, ShapedLine, Turn
from parsers import registry
from parsers.text import decode
from tests import strategies
from tests.helpers import GOLDEN, read_one
from tests.parsers.test_golden import CASES, _grammar_dir
from tests.validators.test_accounting import _sessions
from validators import gate
from validators.accounting import Accountant, Accounting

LINE_GRAMMARS = [g.name for g in registry.all_grammars() if not g.structured]
SHAPED = [name for name in LINE_GRAMMARS if registry.get(name).turn_shape]
MD = registry.get("markdown").turn_shape


@pytest.mark.parametrize("grammar", LINE_GRAMMARS)
def test_every_line_grammar_has_a_turn_shape_or_says_why_not(grammar):
    g = registry.get(grammar)
    assert bool(g.turn_shape) != bool(g.no_turn_shape), "exactly one of turn_shape and no_turn_shape"
    if g.turn_shape:
        regex.compile(g.turn_shape)


def _accountant(text: str, shape: str | None = MD) -> Accountant:
    return Accountant([(None, text)], lines=True, shape=shape)


TEXT = "## User\nq\n\n## Assistant\nanswer\n## User\nswallowed\n"


def test_a_swallowed_header_makes_the_session_partial():
    session = ParsedSession(None, "none", [Turn("User", "user", "q", lines=(1, 2)),
                                           Turn("Assistant", "assistant", "...", lines=(4, 7))], lines=(1, 7))
    found = _accountant(TEXT).account(session, True)
    assert found.merged == 1 and not found.clean
    assert found.reason().startswith("possible_merged_turns: 1 lines") and "line 6" in found.reason()
    assert found.as_dict()["possibleMergedTurns"] == 1


def test_a_declared_or_region_header_is_accounted():
    turns = [Turn("User", "user", "q", lines=(1, 2)), Turn("Assistant", "assistant", "...", lines=(4, 7))]
    declared = ParsedSession(None, "none", turns, lines=(1, 7), shaped=[ShapedLine(6, "quoted")])
    assert _accountant(TEXT).account(declared, True).clean
    split = ParsedSession(None, "none", [turns[0], Turn("Assistant", "assistant", "a", lines=(4, 5))], lines=(1, 7),
                          regions=[Region(RegionKind.BOILERPLATE, "test", lines=(6, 7))])
    assert _accountant(TEXT).account(split, True).clean


def test_without_a_shape_nothing_is_counted():
    session = ParsedSession(None, "none", [Turn("User", "user", "q", lines=(1, 7))], lines=(1, 7))
    assert _accountant(TEXT, None).account(session, True).clean


def test_the_gate_wants_the_merged_code_in_the_reason():
    found = Accounting("lines", merged=1, merged_listed=["line 6"])
    out = gate._Collector()
    history = {"coverage": "partial", "coverageReason": "unaccounted_source: something else"}
    assert gate._check_accounting(history, found, out) is False
    assert out.failures
    out = gate._Collector()
    gate._check_accounting({"coverage": "partial", "coverageReason": found.reason()}, found, out)
    assert not out.failures


@pytest.mark.parametrize("path", [p for p in CASES if registry.get(_grammar_dir(p).name).turn_shape],
                         ids=lambda p: str(p.relative_to(GOLDEN)))
def test_every_golden_input_passes_the_census(path):
    source, sessions = _sessions(path)
    g = registry.get(_grammar_dir(path).name)
    accountant = Accountant.of(source, lines=True, shape=g.turn_shape)
    for n, session in enumerate(sessions, 1):
        found = accountant.account(session, n == len(sessions))
        assert not found.merged or session.coverage_reason, found.reason()


def _renderer(name: str):
    return importlib.import_module(f"tests.renderers.{name.replace('-', '_')}")


def _header_line(grammar: str, session, from_example: bool) -> str | None:
    """A line its shape matches, of the grammar's own rendering of the chat or of its example: a header
    written by the format."""
    g = registry.get(grammar)
    text = g.example if from_example else _renderer(grammar).render(session)[1].decode()
    shape = regex.compile(g.turn_shape)
    return next((ln for ln in text.split("\n") if shape.match(ln)), None)


NOISE = st.sampled_from(["header", "open fence", "list fence", "tilde fence"])


def _noisy(session, header: str, noises: list[str]):
    """The session with each noise put into a turn's body: a header of the format, a fence that never
    closes, a fence inside a list item (closed), ``~~~`` that never closes."""
    lines_of = {"header": [header], "open fence": ["```python", "x = 1"], "tilde fence": ["~~~"],
                "list fence": ["- Add this:", "  ```xml", "  <a/>", "  ```"]}
    turns = list(session.turns)
    for i, noise in enumerate(noises):
        k = i % len(turns)
        turns[k] = replace(turns[k], content=turns[k].content + "\n" + "\n".join(lines_of[noise]))
    return replace(session, turns=tuple(turns))


@pytest.mark.parametrize("grammar", SHAPED)
def test_no_document_claims_completeness_over_an_undeclared_header(grammar):
    """Property, every line grammar with a shape: with headers, unclosed fences and list-item fences
    put into bodies, a header-shaped line inside a turn that is neither its start nor declared always
    leaves the accounting unclean (the document partial, ``possible_merged_turns``)."""
    module, g = _renderer(grammar), registry.get(grammar)
    strategy = getattr(module, "STRATEGY", strategies.sessions())
    shape = regex.compile(g.turn_shape)

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(strategy, st.lists(NOISE, min_size=1, max_size=4), st.booleans())
    def check(session, noises, from_example):
        header = _header_line(grammar, session, from_example)
        if header is None:
            return
        name, data = module.render(_noisy(session, header, noises))
        source = decode(data, name)
        parsed = read_one(g, source)
        accountant = Accountant.of(source, lines=True, shape=g.turn_shape)
        text = source.text.split("\n")
        for n, s in enumerate(parsed, 1):
            found = accountant.account(s, n == len(parsed))
            starts = {t.lines[0] for t in s.turns if t.lines}
            declared = {x.line for x in s.shaped}
            hidden = [a for t in s.turns if t.lines for a in range(t.lines[0] + 1, t.lines[1] + 1)
                      if a not in starts and a not in declared and shape.match(text[a - 1])
                      and not any(r.lines and r.lines[0] <= a <= r.lines[1] for r in s.regions)]
            if hidden:
                assert found.merged and "possible_merged_turns" in (found.reason() or ""), hidden

    check()
