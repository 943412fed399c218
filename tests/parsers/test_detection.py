"""Detection compares like with like: every golden, conformance and sample input is detected as its
own grammar, by its explained share and with a margin over every rival that could have won."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.settings import Settings
from parsers import registry
from tests.helpers import CONFORMANCE, GOLDEN, ROOT, load_source
from tests.parsers.test_golden import CASES, _grammar_dir

SAMPLES = ROOT / "sample_logs"
COMPANIONS = {n for g in registry.all_grammars() for n in g.companion_names}
# The first word of a conformance fixture's "format" names its platform.
PLATFORM = {"whatsapp": "whatsapp", "telegram": "telegram", "facebook": "messenger", "discordchatexporter": "discord",
            "chatgpt": "chatgpt", "irc": "irc"}
MIN_MARGIN = 0.05
CLEAR_MARGIN = {"slack-api/windows/C07DAILY01.jsonl": 0.3}
"""Cases where a generic reading once came close (JSON Lines on Slack Web API pages one per line,
most of them empty): the specific grammar must win them clearly."""


def _detect(path: Path, name: str):
    source = load_source(path, name)
    return registry.detect(source.text[:65536], name, threshold=Settings().detect_threshold)


def _conformance_cases() -> list[tuple[str, str]]:
    if not CONFORMANCE.is_dir():
        return []
    expected = orjson.loads((CONFORMANCE / "expected.json").read_bytes())
    return [(c["file"], PLATFORM[c["format"].split("-")[0].split(" ")[0]]) for c in expected]


def _sample_files() -> list[Path]:
    return sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.name not in COMPANIONS
                  and not p.name.startswith("."))


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_golden_inputs_are_detected_as_their_grammar_with_a_margin(path):
    name = str(path.relative_to(GOLDEN))
    detection = _detect(path, str(path.relative_to(_grammar_dir(path))))
    assert detection.grammar == _grammar_dir(path).name, detection.scores
    assert detection.margin >= CLEAR_MARGIN.get(name, MIN_MARGIN), (detection.margin, detection.scores)


def test_the_clear_margin_cases_exist():
    assert all((GOLDEN / name).is_file() for name in CLEAR_MARGIN)


_SLACK_MESSAGE = st.fixed_dictionaries({"type": st.just("message"), "user": st.sampled_from(["U01ANN", "U02BO"]),
                                        "text": st.text(max_size=20),
                                        "ts": st.integers(1_700_000_000, 1_800_000_000).map(lambda t: f"{t}.000100")})


@given(st.lists(st.lists(_SLACK_MESSAGE, max_size=4), min_size=1, max_size=30).filter(lambda ps: any(ps)))
def test_slack_api_pages_one_per_line_are_slack_api_clearly_however_many_are_empty(pages):
    text = "\n".join(orjson.dumps({"ok": True, "messages": m, "has_more": False}).decode() for m in pages) + "\n"
    detection = registry.detect(text, "C07DAILY01.jsonl", threshold=Settings().detect_threshold)
    assert detection.grammar == "slack-api" and detection.margin >= 0.3, detection.scores


@pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="../shared/conformance is absent")
@pytest.mark.parametrize(("name", "grammar"), _conformance_cases(), ids=lambda v: str(v))
def test_conformance_inputs_are_detected_as_their_platform_with_a_margin(name, grammar):
    detection = _detect(CONFORMANCE / "fixtures" / name, name)
    assert detection.grammar == grammar, detection.scores
    assert detection.margin >= MIN_MARGIN, (detection.margin, detection.scores)


def test_every_registered_grammar_is_shown_in_sample_logs():
    seen = {}
    for path in _sample_files():
        detection = _detect(path, str(path.relative_to(SAMPLES)))
        assert detection.margin >= MIN_MARGIN, (path, detection.margin, detection.scores)
        seen.setdefault(detection.grammar, path)
    missing = sorted({g.name for g in registry.all_grammars()} - set(seen))
    assert not missing, f"grammars with no example in sample_logs/: {missing}"


def test_a_more_specific_grammar_wins_within_the_margin(monkeypatch):
    scores = {g.name: 0.0 for g in registry.all_grammars()}
    scores.update(transcript=1.0, whatsapp=0.95)
    monkeypatch.setattr(registry, "_scores", lambda sample, name: dict(scores))
    detection = registry.detect("x", "x.txt", threshold=0.5)
    assert detection.grammar == "whatsapp" and detection.margin == 0.95  # no rival as specific
    scores.update(irc=0.9)
    assert registry.detect("x", "x.txt", threshold=0.5).margin == 0.05
    scores.update(irc=0.95)
    with pytest.raises(Exception, match="tie at the top"):
        registry.detect("x", "x.txt", threshold=0.5)
