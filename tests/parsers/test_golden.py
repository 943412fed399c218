"""Golden files: every input under tests/golden/<grammar>/ parses to the snapshot beside it.

Inputs are detected without --format and must pick the folder's grammar. Regenerate a
snapshot after an intended change with RECONSTRUCT_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import orjson
import pytest

from parsers import registry
from tests.helpers import GOLDEN, UPDATE_GOLDEN, dump, load_source, parse_file

CASES = sorted(
    p for p in GOLDEN.glob("*/*") if p.is_file() and not p.name.endswith(".expected.json")
)


def test_every_grammar_has_golden_cases():
    names = {g.name for g in registry.all_grammars()}
    covered = {p.parent.name for p in CASES}
    assert names <= covered, f"grammars without golden cases: {sorted(names - covered)}"
    assert covered <= names, f"golden folders without a grammar: {sorted(covered - names)}"


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden(path):
    grammar = path.parent.name
    source = load_source(path)
    detection = registry.detect(source.text[:65536], path.name, threshold=0.5)
    assert detection.grammar == grammar, detection.scores
    got = parse_file(path, grammar)
    for session in got:
        if session["coverage_reason"] is None:  # a grammar that leaves something out must say so
            assert session["counted_turns"] == len(session["turns"]), "independent count disagrees"
        else:
            assert session["counted_turns"] > len(session["turns"])
    expected_path = path.with_name(path.name + ".expected.json")
    if UPDATE_GOLDEN or not expected_path.exists():
        expected_path.write_bytes(dump(got))
    assert got == orjson.loads(expected_path.read_bytes())
