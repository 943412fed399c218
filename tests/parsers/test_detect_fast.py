"""Detection's fast path gives the full scoring's shares: a grammar is skipped only where its detector
would say 0 (``Grammar.detect_needs``), on every input the tests know and on random ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parsers import registry
from tests.helpers import CONFORMANCE, GOLDEN, ROOT, load_source
from tests.parsers.test_golden import CASES

SAMPLE = 65536
NEEDY = [g for g in registry.all_grammars() if g.detect_needs]
NEEDS = sorted({s for g in NEEDY for s in g.detect_needs})


def _inputs() -> list[tuple[Path, str]]:
    found = [(p, str(p.relative_to(GOLDEN))) for p in CASES]
    found += [(p, str(p.relative_to(ROOT))) for p in sorted((ROOT / "sample_logs").rglob("*")) if p.is_file()]
    if CONFORMANCE.is_dir():
        found += [(p, p.name) for p in sorted((CONFORMANCE / "fixtures").rglob("*")) if p.is_file()]
    return found


INPUTS = _inputs()
TEXTS = [(load_source(path, name).text[:SAMPLE], name) for path, name in INPUTS]


def _same(sample: str, name: str) -> None:
    assert registry._scores(sample, name) == registry._scores(sample, name, every=True)


def test_the_inputs_and_the_needs_are_there():
    assert len(INPUTS) > 150 and len(NEEDY) >= 10


@pytest.mark.parametrize(("path", "name"), INPUTS, ids=[n for _, n in INPUTS])
def test_every_known_input_scores_the_same_both_ways(path, name):
    _same(load_source(path, name).text[:SAMPLE], name)


@pytest.mark.parametrize("grammar", NEEDY, ids=lambda g: g.name)
def test_a_known_input_without_the_needed_strings_scores_0_in_full(grammar):
    """The needs are necessary: take them out of every input (its own grammar's too) and the detector
    itself says 0."""
    for sample, name in TEXTS:
        for need in grammar.detect_needs:
            sample = sample.replace(need, need[:-1] + "\u00a7" if len(need) > 1 else "\u00a7")
        assert "\\u" in sample or grammar.detect(sample, name) == 0.0, name


FRAGMENTS = [*NEEDS, "{", "}", "[", "]", '"', ":", ",", "\n", "\t", " ", '"messages": [', '"type": "user"',
             '"sender_id": "1"', '"timestamp": "2024-01-01T10:00:00Z"', '"text": "hi"', "12:01:02 ", "Ann: hi",
             "## User", "**You:**", "[10:15] <ann> hi", "Ann — 08/11/2023 1:30 PM", "12/24/19, 11:23 - Bo: x",
             '"message": {"role": "user"}', '"uuid": "a"', '"is_user": true', '"send_date": 1', "\\u0041"]


@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=60).map("".join),
       st.sampled_from(["chat.txt", "conversations.json", "session.jsonl", "messages.json", "x.traj"]))
def test_random_inputs_score_the_same_both_ways(sample, name):
    _same(sample, name)
