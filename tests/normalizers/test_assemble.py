"""Assembling documents: rule A2 end to end, createdAt fallbacks, settings precedence."""

from __future__ import annotations

from datetime import datetime

import pytest

from models.errors import ConfigError
from models.records import Detection, ModelRef, ParsedSession, SourceText, Turn
from models.settings import Settings
from normalizers.assemble import EPOCH, RunContext
from tests.oracle.records import assemble

SOURCE = SourceText("x", "root/chat-2024-05-06.txt", "0" * 64, 1, "utf-8")
DETECTION = Detection("transcript", 0.9, {"transcript": 0.9})
IDENTITY = "openai:gpt-4o@2024-08-06"


def _doc(turns, settings=None, **session):
    ps = ParsedSession(session.pop("sid", None), "test", turns, **session)
    ctx = RunContext.from_settings(settings or Settings())
    return assemble(ps, len(turns), source=SOURCE, detection=DETECTION, grammar_version="1", ctx=ctx)


def _speakers(doc):
    return [i["speaker"] for i in doc["artifacts"]["Chatthistorik"]["interactions"]]


def test_no_self_report_applies_to_session_defaults_not_to_explicit_models():
    gpt = ModelRef("openai", "gpt-4o", "2024-08-06")
    turns = [Turn("Assistant", "assistant", "a", model=gpt),
             Turn("Assistant", "assistant", "b", model=gpt, model_explicit=False),
             Turn("Assistant", "assistant", "c", model=ModelRef("anthropic", "claude", "3"), model_explicit=False)]
    doc = _doc(turns, Settings(runtime_identity=IDENTITY))
    assert _speakers(doc) == ["Assistant (openai:gpt-4o@2024-08-06)", "Assistant (unknown:unknown@unknown)",
                              "Assistant (anthropic:claude@3)"]
    assert _speakers(_doc(turns))[1] == "Assistant (openai:gpt-4o@2024-08-06)"


def test_created_at_fallback_order():
    timed = [Turn("A", "user", "x", time=datetime(2025, 1, 2, 3, 4, 5)), Turn("B", "user", "y",
                                                                              time=datetime(2025, 1, 1))]
    assert _doc(timed, created=datetime(2020, 1, 1))["createdAt"] == "2020-01-01T00:00:00Z"
    assert _doc(timed)["createdAt"] == "2025-01-01T00:00:00Z"
    untimed = [Turn("A", "user", "x")]
    doc = _doc(untimed)
    assert doc["createdAt"] == "2024-05-06T00:00:00Z"
    assert doc["artifacts"]["ByggLogg"]["createdAtSource"] == "date in the file name"
    other = SourceText("x", "root/notes.txt", "0" * 64, 1, "utf-8")
    ctx = RunContext.from_settings(Settings())
    bare = assemble(ParsedSession(None, "none", untimed), 1, source=other, detection=DETECTION,
                    grammar_version="1", ctx=ctx)
    assert bare["createdAt"] == EPOCH and bare["sessionId"] == "999"
    assert bare["artifacts"]["ByggLogg"]["createdAtSource"].startswith("none: epoch sentinel")


def test_an_unreadable_session_time_is_not_named_as_the_source_of_created_at():
    """A session time outside the years the contract can write (here year 10000 once in UTC) falls
    through to the next rule, and the document names the rule that gave its createdAt, down to the
    epoch sentinel."""
    other = SourceText("x", "root/notes.txt", "0" * 64, 1, "utf-8")
    ctx = RunContext.from_settings(Settings(source_tz="America/New_York"))
    beyond = ParsedSession(None, "none", [Turn("A", "user", "x")], created=datetime(9999, 12, 31, 23, 0))
    doc = assemble(beyond, 1, source=other, detection=DETECTION, grammar_version="1", ctx=ctx)
    assert doc["createdAt"] == EPOCH
    assert doc["artifacts"]["ByggLogg"]["createdAtSource"].startswith("none: epoch sentinel")


def test_source_zone_is_applied_and_recorded():
    doc = _doc([Turn("A", "user", "x", time=datetime(2025, 6, 1, 12, 0), time_raw="2025-06-01 12:00")],
               Settings(source_tz="Europe/Stockholm"))
    it = doc["artifacts"]["Chatthistorik"]["interactions"][0]
    assert it["date"] == "2025-06-01T10:00:00Z" and it["dateRaw"] == "2025-06-01 12:00"
    assert any("Europe/Stockholm" in a for a in doc["artifacts"]["ByggLogg"]["assumptions"])


def test_settings_precedence(tmp_path, monkeypatch):
    cfg = tmp_path / "reconstruct.toml"
    cfg.write_text('source_tz = "Asia/Tokyo"\nruntime_identity = "a:b@c"\nworkers = 3\n')
    monkeypatch.setenv("RECONSTRUCT_SOURCE_TZ", "Europe/Paris")
    s = Settings.load(cfg, workers=5)
    assert (s.source_tz, s.runtime_identity, s.workers) == ("Europe/Paris", "a:b@c", 5)
    assert s.identity == {"provider": "a", "name": "b", "version": "c"}
    with pytest.raises(ConfigError, match="runtime_identity"):
        Settings.load(cfg, runtime_identity="not an identity")
