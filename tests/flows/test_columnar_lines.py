"""IRC, transcripts and inferred logs read as frames of lines give the documents of their turn-by-turn
parse, with what only those grammars give the frame: times with their own UTC offset, and models."""

from __future__ import annotations

import pytest

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.text import decode
from tests.helpers import columns_of

IRC = ("2012-10-18T09:30:30+0200  <ann> morning\n2012-10-18T09:31:00-0530  *** bob has joined #ceph\n"
       "2012-10-18T23:59:59Z  <bob> late\n2012-10-19T00:00:00+1400  * ann waves\n1969-12-31T23:00:00-0200  <x> old\n")
TRANSCRIPT = ("---\ntimezone: Europe/Stockholm\nmodel: openai:gpt-4o@2024-08-06\n---\n"
              "[2025-03-30 02:30:00] User: in the DST gap\n[2025-03-30 03:30:00] Assistant: after it\n"
              "Assistant (anthropic:claude-3-opus): another model\n[2025-10-26 02:30:00] User: twice\n")


# columnar_min_bytes=0: these short logs read as frames too (a run parses short chats turn by turn)
SETTINGS = [Settings(columnar_min_bytes=0), Settings(source_tz="America/New_York", columnar_min_bytes=0)]


@pytest.mark.parametrize("settings", SETTINGS, ids=["utc", "zone"])
@pytest.mark.parametrize(("name", "text"), [("chan.log", IRC), ("chat.txt", TRANSCRIPT)], ids=["irc", "transcript"])
def test_offsets_zones_and_models_give_the_record_paths_bytes(name, text, settings):
    data = text.encode()
    columnar = process_bytes(data, name, RunContext.from_settings(settings))
    records = process_bytes(data, name, RunContext.from_settings(settings.model_copy(update={"columnar": False})))
    assert [s.encoded for s in columnar.sessions] == [s.encoded for s in records.sessions]
    assert columnar.sessions[0].encoded is not None
    grammar = registry.get(columnar.grammar)  # the frame was read, not refused for the turn-by-turn parse
    assert columns_of(grammar, decode(data, name), settings) is not None
