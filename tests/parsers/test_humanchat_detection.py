"""Confusion check for the human chat formats: every golden, conformance and sample input of them is
detected as its own grammar, with a margin over every rival."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers import registry
from tests.helpers import CONFORMANCE, GOLDEN, ROOT, load_source
from tests.parsers.test_golden import COMPANIONS

OWN = ("slack", "slack-api", "telegram", "telegram-html", "discord", "messenger")
SAMPLES = {"slack-export": "slack", "slack-api": "slack-api", "telegram": "telegram", "telegram_html": "telegram-html",
           "discord": "discord", "messenger": "messenger"}
CONFORMANCE_FILES = {"chatanalytics_discord_dce_GC_3A_5M.json": "discord", "chatminer_fb_messenger.json": "messenger",
                     "chatminer_telegram_single.json": "telegram"}


def _inputs() -> list[tuple[Path, str, str]]:
    out = []
    for grammar in OWN:
        folder = GOLDEN / grammar
        out += [(p, str(p.relative_to(folder)), grammar) for p in sorted(folder.rglob("*"))
                if p.is_file() and not p.name.endswith(".expected.json") and p.name not in COMPANIONS]
    for sample, grammar in SAMPLES.items():
        folder = ROOT / "sample_logs"
        out += [(p, str(p.relative_to(folder)), grammar) for p in sorted((folder / sample).rglob("*"))
                if p.is_file() and p.name not in COMPANIONS]
    if CONFORMANCE.is_dir():
        out += [(CONFORMANCE / "fixtures" / f, f, g) for f, g in CONFORMANCE_FILES.items()]
    return out


@pytest.mark.parametrize(("path", "name", "grammar"), _inputs(), ids=lambda x: str(x) if isinstance(x, str) else "")
def test_detected_as_its_own_grammar_with_a_margin(path, name, grammar):
    detection = registry.detect(load_source(path, name).text[:65536], name, threshold=0.5)
    assert detection.grammar == grammar, detection.scores
    assert detection.confidence == 1.0 and detection.margin >= registry.MARGIN, detection.scores
