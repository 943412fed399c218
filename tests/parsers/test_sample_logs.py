"""The bundled sample_logs/ folders of the text and JSON Lines grammars: each file is detected as its
folder's grammar with a clear margin, parses without loss, and is fully accounted for."""

from __future__ import annotations

import pytest

from models.settings import Settings
from parsers import registry
from tests.helpers import ROOT, load_source, read_one
from validators.accounting import LineIndex, account

FOLDERS = {"transcripts": "transcript", "markdown": "markdown", "jsonl": "jsonl"}
FILES = sorted(p for folder in FOLDERS for p in (ROOT / "sample_logs" / folder).iterdir() if p.is_file())


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_log_is_detected_with_a_margin_and_fully_read(path):
    grammar = FOLDERS[path.parent.name]
    source = load_source(path)
    detection = registry.detect(source.text[:65536], path.name, threshold=0.5)
    assert detection.grammar == grammar, detection.scores
    assert detection.margin >= registry.MARGIN, detection.scores
    g = registry.get(grammar)
    index = LineIndex(source.text)
    for session in read_one(g, source, Settings()):
        assert session.coverage_reason is None
        assert g.count_turns(session.raw) == len(session.turns) > 0
        assert account(session, index).clean, account(session, index).reason()
