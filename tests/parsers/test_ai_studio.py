"""The Google AI Studio grammar: thoughts, attachments, the system instruction and unsent drafts."""

import orjson

from models.records import RegionKind
from models.settings import Settings
from parsers import registry
from parsers.grammars.ai_studio import AIStudio
from parsers.text import decode

GRAMMAR = AIStudio()


def _parse(doc, name="My prompt"):
    return next(GRAMMAR.parse(decode(orjson.dumps(doc), name), Settings()))


def test_chunks_become_turns_with_the_run_model_not_explicit():
    doc = {"runSettings": {"model": "models/gemini-2.5-pro"},
           "systemInstruction": {"parts": [{"text": "Be brief."}]},
           "chunkedPrompt": {"chunks": [{"text": "hi", "role": "user"},
                                        {"text": "thinking...", "role": "model", "isThought": True},
                                        {"role": "user", "youtubeVideo": {"videoId": "abc123"}},
                                        {"text": "hello", "role": "model"}],
                             "pendingInputs": [{"text": "draft", "role": "user"}]}}
    s = _parse(doc)
    assert [(t.role, t.kind, t.content) for t in s.turns] == [
        ("user", "message", "hi"), ("assistant", "thinking", "thinking..."),
        ("user", "message", "[video: abc123]"), ("assistant", "message", "hello")]
    model = s.turns[-1].model
    assert (model.provider, model.name, s.turns[-1].model_explicit) == ("google", "gemini-2.5-pro", False)
    assert [(r.kind, r.pointer, r.content) for r in s.regions] == [
        (RegionKind.METADATA, "/systemInstruction", "Be brief."),
        (RegionKind.METADATA, "/chunkedPrompt/pendingInputs/0", None)]
    assert GRAMMAR.count_turns(s.raw) == len(s.turns)
    assert all(t.time is None for t in s.turns)  # AI Studio keeps no times: none is invented


def test_detected_without_an_extension_and_not_confused_with_chat_exports():
    doc = {"runSettings": {"model": "models/x"}, "chunkedPrompt": {"chunks": [{"text": "hi", "role": "user"}]}}
    assert registry.detect(orjson.dumps(doc).decode(), "Untitled prompt", threshold=0.5).grammar == "ai-studio"
