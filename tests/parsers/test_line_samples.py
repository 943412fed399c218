"""The bundled examples of the line chat formats are detected as their own grammar with a margin and
parse with every line accounted for and the independent count agreeing."""

from __future__ import annotations

import pytest

from models.settings import Settings
from parsers import registry
from tests.helpers import ROOT, load_source, read_one
from validators.accounting import LineIndex, account

FOLDERS = {"whatsapp": "whatsapp", "irc": "irc", "discord-text": "discord-text"}
SAMPLES = sorted(p for folder in FOLDERS for p in (ROOT / "sample_logs" / folder).glob("*") if p.is_file())


def test_every_line_format_has_a_sample():
    assert {p.parent.name for p in SAMPLES} == set(FOLDERS)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_detected_and_fully_accounted(path):
    grammar = FOLDERS[path.parent.name]
    source = load_source(path)
    detection = registry.detect(source.text[:65536], path.name, threshold=0.5)
    assert detection.grammar == grammar and detection.margin >= registry.MARGIN, detection
    g = registry.get(grammar)
    for session in read_one(g, source, Settings()):
        assert g.count_turns(session.raw) == len(session.turns)
        assert session.coverage_reason is None
        assert account(session, LineIndex(source.text)).clean
