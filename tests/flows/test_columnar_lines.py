"""IRC, transcripts and inferred logs read as tables of lines give the documents of their turn-by-turn
parse (the oracle's, tests/oracle), with what only those grammars give the frame: times with their own UTC
offset, and models."""

from __future__ import annotations

import pytest

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.base import Grammar
from parsers.text import decode
from tests import oracle

IRC = ("2012-10-18T09:30:30+0200  <ann> morning\n2012-10-18T09:31:00-0530  *** bob has joined #ceph\n"
       "2012-10-18T23:59:59Z  <bob> late\n2012-10-19T00:00:00+1400  * ann waves\n1969-12-31T23:00:00-0200  <x> old\n")
TRANSCRIPT = ("---\ntimezone: Europe/Stockholm\nmodel: openai:gpt-4o@2024-08-06\n---\n"
              "[2025-03-30 02:30:00] User: in the DST gap\n[2025-03-30 03:30:00] Assistant: after it\n"
              "Assistant (anthropic:claude-3-opus): another model\n[2025-10-26 02:30:00] User: twice\n")


SETTINGS = [Settings(), Settings(source_tz="America/New_York")]


@pytest.mark.parametrize("settings", SETTINGS, ids=["utc", "zone"])
@pytest.mark.parametrize(("name", "text"), [("chan.log", IRC), ("chat.txt", TRANSCRIPT)], ids=["irc", "transcript"])
def test_offsets_zones_and_models_give_the_oracles_bytes(name, text, settings):
    data = text.encode()
    got = process_bytes(data, name, RunContext.from_settings(settings))
    assert [s.encoded for s in got.sessions] == oracle.documents(decode(data, name), settings)
    assert got.sessions[0].encoded is not None


DISCORD = "Maya Chen — 08/11/2023 1:30 PM\nthe build is green\n[1:31 PM]\nshipping it (edited)\n"


@pytest.mark.parametrize("grammar", sorted(oracle.LINE_PARSES))
def test_a_line_grammar_has_no_turn_by_turn_parse(grammar):
    """One route: a line grammar reads every input, however small, in its batch's table of lines; its
    turn-by-turn parse lives in the tests, as the oracle."""
    g = registry.get(grammar)
    assert type(g).parse is Grammar.parse and type(g).read is not Grammar.read
    with pytest.raises(NotImplementedError):
        next(iter(g.parse(decode(DISCORD.encode(), "paste.txt"), Settings())))


def test_a_shard_reads_its_small_chats_in_one_table_per_grammar(tmp_path, monkeypatch):
    """The shard's inputs wait in its batch until it is full or the shard ends: many small chats of a
    line grammar are read in one table, not one table per input (the point of the table)."""
    from flows.core import ingest
    from flows.core.shard import run_shard

    src = tmp_path / "in"
    src.mkdir()
    for i in range(12):
        (src / f"WhatsApp Chat with P{i}.txt").write_text(f"1/2/24, 10:0{i % 10} - P{i}: hi\n1/2/24, 11:00 - Ann: yo\n")
        (src / f"irc-{i}.log").write_text(f"[10:00] <p{i}> hi\n[10:01] <ann> yo\n")
    tables: list[tuple[str, int]] = []
    for grammar in ("whatsapp", "irc"):
        g = registry.get(grammar)
        real = type(g).read
        monkeypatch.setattr(type(g), "read",
                            lambda self, sources, *a, real=real: tables.append((self.name, len(sources)))
                            or real(self, sources, *a))
    settings = Settings(workers=1)
    result = run_shard(ingest.discover([src], settings), tmp_path / "out", settings)
    assert sorted(tables) == [("irc", 12), ("whatsapp", 12)]
    assert len(result.files) == 24 and all(f.status.value == "ok" for f in result.files)
