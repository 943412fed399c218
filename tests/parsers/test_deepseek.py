"""DeepSeek exports: read as DeepSeek, never as an empty ChatGPT export."""

import orjson

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry


def _export(fragments):
    mapping = {"root": {"id": "root", "parent": None, "children": ["1"], "message": None},
               "1": {"id": "1", "parent": "root", "children": [], "message": {
                   "files": [], "model": "deepseek-chat", "inserted_at": "2025-01-01T00:00:00+00:00",
                   "fragments": fragments}}}
    return orjson.dumps([{"id": "c", "title": "t", "inserted_at": "2025-01-01T00:00:00+00:00", "mapping": mapping}])


def test_a_deepseek_export_is_not_a_chatgpt_export():
    data = _export([{"type": "REQUEST", "content": "hi"}])
    scores = registry.detect(data.decode(), "conversations.json", threshold=0.5).scores
    assert max(scores, key=scores.get) == "deepseek" and scores.get("chatgpt", 0) < 0.5


def test_every_fragment_is_a_turn_end_to_end():
    data = _export([{"type": "REQUEST", "content": "hi"}, {"type": "NEW_KIND", "content": "x"}])
    outcome = process_bytes(data, "conversations.json", RunContext.from_settings(Settings()))
    (session,) = outcome.sessions
    assert (session.status.value, session.interactions, session.unaccounted) == ("ok", 2, 0)
