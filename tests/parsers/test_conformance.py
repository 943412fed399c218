"""Every public conformance fixture (../shared/conformance) parses exactly as expected.json says.

Detected without --format; the number of sessions and turns, the system turns and the authors
must match, and each grammar's independent turn count must agree with its parse.
The end-to-end version (normalise, gate, write) is in tests/flows/test_conformance_e2e.py.
"""

from __future__ import annotations

import orjson
import pytest

from models.settings import Settings
from parsers import registry
from tests.helpers import CONFORMANCE, load_source, read_one

EXPECTED = orjson.loads((CONFORMANCE / "expected.json").read_bytes()) if CONFORMANCE.is_dir() else []
pytestmark = pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="../shared/conformance is absent")


@pytest.mark.parametrize("case", EXPECTED, ids=lambda c: c["file"])
def test_conformance_parse(case):
    source = load_source(CONFORMANCE / "fixtures" / case["file"])
    detection = registry.detect(source.text[:65536], source.name, threshold=Settings().detect_threshold)
    grammar = registry.get(detection.grammar)
    sessions = list(read_one(grammar, source, Settings()))
    assert len(sessions) == case["sessions"]
    turns = [t for s in sessions for t in s.turns]
    assert len(turns) == case["turns"]
    assert sum(1 for t in turns if t.role == "system") == case["system_turns"]
    authors = {t.speaker for t in turns if t.role != "system"}
    assert authors == set(case["authors"])
    for s in sessions:
        assert grammar.count_turns(s.raw) == len(s.turns)
        assert s.coverage_reason is None
