"""The core applies the source accounting to every session: a grammar that loses a turn, and whose
own count agrees with its loss, still produces a partial document naming what was lost."""

from __future__ import annotations

import orjson

from flows.core.process import process_bytes, process_group
from models.records import Region, RegionKind
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.columns import turns_of
from tests.helpers import ROOT

CLEAN = b"User: Is the report ready?\nAssistant: Almost.\nTwo sections left.\n\nUser: Ping me.\nAssistant: Will do.\n"


def _run(data: bytes, name: str = "chat.txt"):
    outcome = process_bytes(data, name, RunContext.from_settings(Settings(format="transcript")))
    session = outcome.sessions[0]
    return session, orjson.loads(session.encoded) if session.encoded else session.document


def _alter_turns(monkeypatch, grammar, alter) -> None:
    """Have ``grammar`` hand each session over with its turns as records, changed by ``alter`` (a grammar that
    loses, merges or declares a turn: what the accounting must catch)."""
    read = type(grammar).read

    def altered(self, sources, settings):
        out = []
        for sessions in read(self, sources, settings):
            out.append(list(sessions))
            for session in out[-1]:
                session.turns, session.frame = turns_of(session.frame), None
                alter(session)
        return out

    monkeypatch.setattr(type(grammar), "read", altered)


def test_a_clean_source_is_ok_with_every_line_in_an_interaction():
    session, doc = _run(CLEAN)
    figures = doc["artifacts"]["ai_protocol_performance"]["sourceAccounting"]
    assert session.status == "ok"
    assert figures["unaccounted"] == 0 and figures["inInteractions"] == figures["checked"] > 0
    assert doc["artifacts"]["ai_protocol_performance"]["gate"]["sourceAccounting"] == "pass"


def test_a_turn_lost_by_the_grammar_is_found_by_the_accounting(monkeypatch):
    grammar = registry.get("transcript")
    count = type(grammar).count_turns
    _alter_turns(monkeypatch, grammar, lambda session: session.turns.pop(1))
    monkeypatch.setattr(type(grammar), "count_turns", lambda self, raw: count(self, raw) - 1)
    session, doc = _run(CLEAN)
    history = doc["artifacts"]["Chatthistorik"]
    assert session.status == "partial" and session.unaccounted == 2  # the two lines of the lost turn
    assert history["coverage"] == "partial" and history["coverageReason"].startswith("unaccounted_source")
    assert doc["artifacts"]["ai_protocol_performance"]["sourceAccounting"]["unaccounted"] >= 1
    assert doc["artifacts"]["ai_protocol_performance"]["gate"]["sourceAccounting"] == "partial"


def test_declared_regions_are_listed_in_the_build_log(monkeypatch):
    grammar = registry.get("transcript")

    def declare_first(session):
        first = session.turns.pop(0)
        session.regions.append(Region(RegionKind.BOILERPLATE, "test: declared instead of a turn",
                                      lines=first.lines, content=first.content))

    _alter_turns(monkeypatch, grammar, declare_first)
    monkeypatch.setattr(type(grammar), "count_turns", lambda self, raw: 3)
    session, doc = _run(CLEAN)
    regions = doc["artifacts"]["ByggLogg"]["declaredRegions"]
    assert session.status == "ok", session.detail
    assert regions[0]["kind"] == "boilerplate" and regions[0]["lines"] and regions[0]["content"]


def test_the_ledger_counts_unaccounted_sources_and_format_drift(monkeypatch, tmp_path):
    from audit.ledger import DriftItem, Ledger
    from flows.pipeline import reconstruct

    grammar = registry.get("transcript")

    def drift(session):
        session.turns.pop(1)
        session.meta["formatDrift"] = {"key:reactions": {"count": 2, "first": "/3"}}

    _alter_turns(monkeypatch, grammar, drift)
    monkeypatch.setattr(type(grammar), "count_turns", lambda self, raw: 3)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "chat.txt").write_bytes(CLEAN)
    summary = reconstruct([tmp_path / "in"], tmp_path / "out", Settings(format="transcript"), runner=None)
    counts = summary.counts
    assert counts.sessions_partial == 1 and counts.sessions_unaccounted == 1
    assert counts.unaccounted_source == 2 and counts.drift_items == 1
    assert counts.files_failed == 0, "a partial session is written, not failed"
    ledger = Ledger(tmp_path / "out" / "ledger.sqlite")
    try:
        assert ledger.sessions.drift(summary.run_id) == [DriftItem("key:reactions", 2, "in/chat.txt /3")]
    finally:
        ledger.close()


def test_a_turn_lost_on_page_two_of_a_telegram_chat_makes_it_partial_naming_page_two(monkeypatch):
    grammar = registry.get("telegram-html")
    parse, count = type(grammar).parse, type(grammar).count_turns

    def losing_parse(self, source, settings):
        for session in parse(self, source, settings):
            session.turns.pop(max(i for i, t in enumerate(session.turns) if t.part == "messages2.html"))
            yield session

    monkeypatch.setattr(type(grammar), "parse", losing_parse)
    # the pages' count, one less: the grammar's own count agrees with its loss
    monkeypatch.setattr(type(grammar), "count_turns", lambda self, raw: count(self, raw) - isinstance(raw, list))
    folder = ROOT / "sample_logs" / "telegram_html" / "ChatExport_2021-03-14"
    parts = [((folder / n).read_bytes(), f"chat/{n}") for n in ("messages.html", "messages2.html")]
    outcome = process_group(parts, "chat/messages.html", RunContext.from_settings(Settings()))
    (session,) = outcome.sessions
    reason = orjson.loads(session.encoded)["artifacts"]["Chatthistorik"]["coverageReason"]
    assert session.status == "partial" and session.unaccounted > 0
    assert reason.startswith("unaccounted_source") and "messages2.html line" in reason
    assert "messages.html line" not in reason.replace("messages2.html", "")


def test_a_grammar_that_merges_turns_and_counts_its_merge_gives_a_partial_document(monkeypatch):
    """The census: a grammar that swallows a turn into the one before (and whose own count agrees)
    leaves a header-shaped line inside a turn: the document says possible_merged_turns."""
    grammar = registry.get("transcript")
    count = type(grammar).count_turns

    def merge(session):
        gone = session.turns.pop(2)
        session.turns[1].content += "\n" + gone.content
        session.turns[1].lines = (session.turns[1].lines[0], gone.lines[1])

    _alter_turns(monkeypatch, grammar, merge)
    monkeypatch.setattr(type(grammar), "count_turns", lambda self, raw: count(self, raw) - 1)
    session, doc = _run(CLEAN)
    history = doc["artifacts"]["Chatthistorik"]
    assert session.status == "partial"
    reason = history["coverageReason"]
    assert reason.startswith("possible_merged_turns: 1 lines") and "line 5" in reason
    assert doc["artifacts"]["ai_protocol_performance"]["sourceAccounting"]["possibleMergedTurns"] == 1
    assert doc["artifacts"]["ai_protocol_performance"]["gate"]["sourceAccounting"] == "partial"


def test_header_shaped_text_is_listed_in_the_build_log():
    data = CLEAN.replace(b"Two sections left.", b"Note: two sections left.")
    session, doc = _run(data)
    assert session.status == "ok"
    (entry,) = doc["artifacts"]["ByggLogg"]["shapedText"]
    assert entry["lines"] == [3] and entry["count"] == 1 and "seen once" in entry["reason"]
