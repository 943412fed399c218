"""What ChatGPT and Claude share: detection by explained share on cut-off samples, companions,
streaming that gives the same sessions as a whole read, and the sample exports in sample_logs/."""

from __future__ import annotations

import io

import orjson
import pytest

from models.errors import NotStreamable
from models.settings import Settings
from parsers import jsonsplit, registry
from parsers.base import ConversationList, Grammar
from parsers.grammars._aiexport import decode_sample, explained_share
from parsers.jsonsplit import ShapeError
from tests.helpers import GOLDEN, ROOT, load_source, parsed_sessions, streamed_sessions
from validators.accounting import LineIndex, account

OWN = ("chatgpt", "claude")
CASES = sorted(p for g in OWN for p in (GOLDEN / g).rglob("*")
               if p.is_file() and not p.name.endswith(".expected.json")
               and p.name not in registry.get(g).companion_names)
SAMPLES = sorted(p for g in OWN for p in (ROOT / "sample_logs" / g).glob("*")
                 if p.name not in registry.get(g).companion_names)


def _grammar(path):
    return next(g for g in OWN if g in path.parts)


def _snapshot(sessions):
    return [(s.session_id, s.pointer, s.turns, s.regions, s.warnings, s.assumptions, s.meta, s.coverage_reason)
            for s in sessions]


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_streaming_gives_the_same_sessions_as_a_whole_read(path):
    grammar = registry.get(_grammar(path))
    source = load_source(path)
    whole = list(grammar.parse(source, Settings()))
    for blob in (path.read_bytes(), b"\xef\xbb\xbf" + path.read_bytes()):
        if [s.pointer for s in whole] == [""]:  # one conversation object: read whole, never streamed
            with pytest.raises(NotStreamable, match="one conversation"):
                streamed_sessions(grammar, blob, source)
            continue
        assert _snapshot(streamed_sessions(grammar, blob, source)) == _snapshot(whole)


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_a_cut_off_sample_is_still_detected_with_a_margin(path):
    text = load_source(path).text
    for size in (1000, 2000, len(text) // 2):
        detection = registry.detect(text[:size], path.name, threshold=0.5)
        assert detection.grammar == _grammar(path) and detection.margin >= 0.5, (size, detection.scores)


def test_a_big_export_is_detected_from_its_first_64_kib():
    conv = orjson.loads((GOLDEN / "chatgpt" / "content-types-2025" / "conversations.json").read_bytes())
    text = orjson.dumps([{**c, "id": f"{c['id']}-{i}"} for i in range(40) for c in conv]).decode()
    assert len(text) > 65536
    detection = registry.detect(text[:65536], "conversations.json", threshold=0.5)
    assert (detection.grammar, detection.confidence, detection.margin) == ("chatgpt", 1.0, 1.0)


def test_companions_are_never_detected_as_conversations():
    for grammar in OWN:
        for name in registry.get(grammar).companion_names:
            sample = '[{"uuid": "x", "chat_messages": [], "mapping": {}}]'
            assert registry.get(grammar).detect(sample, f"export/{name}") == 0.0


def test_a_first_message_longer_than_the_sample_still_detects():
    long = "word " * 20000
    chatgpt = orjson.dumps([{"id": "c", "title": "t", "mapping": {"n": {"id": "n", "message": {
        "id": "n", "author": {"role": "user"}, "create_time": 1.0, "content": {"content_type": "text",
                                                                                 "parts": [long]}}}}}]).decode()
    claude = orjson.dumps([{"uuid": "c", "name": "t", "chat_messages": [
        {"uuid": "m", "text": long, "sender": "human", "created_at": "2025-01-01T00:00:00Z"}]}]).decode()
    for text, grammar in ((chatgpt, "chatgpt"), (claude, "claude")):
        assert registry.detect(text[:65536], "conversations.json", threshold=0.5).grammar == grammar


def test_shares_count_only_the_records_a_grammar_explains():
    mixed = orjson.dumps([
        {"id": "c", "mapping": {"n": {"id": "n", "message": {"author": {"role": "user"},
                                                              "content": {"parts": ["a"]}}}}},
        {"user": "U1", "ts": "1.0", "text": "a slack message"},
        {"user": "U2", "ts": "2.0", "text": "another"},
    ]).decode()
    assert registry.get("chatgpt").detect(mixed, "x.json") == pytest.approx(1 / 3)
    assert registry.get("claude").detect(mixed, "x.json") == 0.0


@pytest.mark.parametrize(("sample", "value"), [
    ('[{"a": 1}, {"b": "x}', [{"a": 1}]),
    ('{"m": {"k": [1, 2], "s": "esc \\" {"', {"m": {"k": [1, 2]}}),
    ('{"x": [', {}),
    ("User: hello", None),
    ("\ufeff  [1, 2]", [1, 2]),
])
def test_a_sample_cut_anywhere_decodes_to_its_complete_part(sample, value):
    assert decode_sample(sample) == value


def test_empty_conversations_are_explained_by_their_shape():
    assert explained_share('[{"uuid": "a", "chat_messages": []}]', lambda p, r: False,
                           lambda e: "chat_messages" in e) == 1.0
    assert registry.detect('[{"uuid": "a", "name": "", "chat_messages": []}]', "conversations.json",
                           threshold=0.5).grammar == "claude"


SHAPE = ConversationList(own_key="mapping")


SHAPES = sorted({g.conversations for g in registry.all_grammars() if g.conversations is not None}, key=repr)
"""The lists of every grammar that names one (DeepSeek and Open WebUI have no wrapper, Hangouts no top list)."""


def _pointers(blob: bytes, shape: ConversationList = SHAPE) -> list[tuple[str, object]]:
    fp = io.BytesIO(blob)
    at = jsonsplit.locate(fp, shape)
    return [(f"{at.pointer}/{e.index}", e.value) for e in jsonsplit.entries(fp, at=at, shape=shape)]


@pytest.mark.parametrize("doc", [
    [{"k": 1}, {"k": 2}], [], {"conversations": [{"k": 1}]}, {"conversations": []},
    {"account": {"uuid": "u", "deep": [[{"conversations": [1]}], "}],"]}, "conversations": [{"k": 1}, {"k": 2}]},
    {"conversations": [{"k": 1}], "exported_at": "2024", "meta": {"n": [1, 2]}},
    {"k": 1, "conversations": "not a list"}, {"mapping": {}, "conversations": []}, {"k": {"a": 1}}, {},
    {"events": [], "conversations": [{"events": []}]}, [{"chat": {"history": {}}}],
])
@pytest.mark.parametrize("shape", [SHAPE, *SHAPES], ids=lambda s: repr(s))
def test_a_streamed_read_takes_the_conversations_of_the_whole_read_or_refuses_up_front(doc, shape):
    """Every shape ``top_level`` reads, for every grammar's list: the same pointers and values, or
    ``NotStreamable`` before any entry is read where the whole read takes the input as one value."""
    whole = list(shape.top_level(doc))
    for blob in (orjson.dumps(doc), orjson.dumps(doc, option=orjson.OPT_INDENT_2)):
        try:
            streamed = _pointers(blob, shape)
        except NotStreamable:
            assert [p for p, _ in whole] == [""], doc
            continue
        assert streamed == whole, doc


def test_a_wrapper_whose_list_is_past_the_first_block_is_refused_up_front():
    doc = {"account": "x" * 200, "conversations": [{"k": 1}]}
    with pytest.raises(NotStreamable, match="no list under 'conversations' starts in the object's first 100 bytes"):
        jsonsplit.locate(io.BytesIO(orjson.dumps(doc)), SHAPE, block=100)
    assert jsonsplit.locate(io.BytesIO(orjson.dumps(doc)), SHAPE, block=1000).key == "conversations"


def test_a_key_after_the_list_that_changes_the_whole_read_stops_the_split():
    blob = orjson.dumps({"conversations": [{"k": 1}, {"k": 2}], "x": 1, "mapping": {}})
    got = []
    with pytest.raises(ShapeError, match="the key 'mapping' after its list"):
        got.extend(_pointers_lazy(blob))
    assert [p for p, _ in got] == ["/conversations/0", "/conversations/1"]
    assert list(SHAPE.top_level(orjson.loads(blob))) == [("", orjson.loads(blob))]


def _pointers_lazy(blob: bytes):
    fp = io.BytesIO(blob)
    at = jsonsplit.locate(fp, SHAPE)
    for e in jsonsplit.entries(fp, at=at, shape=SHAPE):
        yield f"{at.pointer}/{e.index}", e.value


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_the_sample_exports_are_detected_complete_and_accounted_for(path):
    grammar = _grammar(path)
    source, sessions = parsed_sessions(path, grammar)
    assert registry.detect(source.text[:65536], path.name, threshold=0.5).grammar == grammar
    assert sessions
    for s in sessions:
        assert registry.get(grammar).count_turns(s.raw) == len(s.turns) and s.coverage_reason is None
        assert account(s, LineIndex(source.text)).clean and not s.meta.get("formatDrift")


@pytest.mark.parametrize("grammar", registry.all_grammars(), ids=lambda g: g.name)
def test_no_grammar_has_a_streaming_flag_or_a_second_read_of_its_conversations(grammar):
    """Where a JSON export's conversations lie is data (``conversations``), and a grammar that names it
    reads each conversation with ``parse_conversation``: no flag, no other entry point for a stream."""
    for gone in ("streams", "entries", "parse_stream", "parse_entry"):
        assert not hasattr(grammar, gone), gone
    own = type(grammar).parse_conversation is not Grammar.parse_conversation
    assert own == (grammar.conversations is not None)
    assert grammar.conversations is None or isinstance(grammar.conversations, ConversationList)


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_the_whole_read_goes_through_parse_conversation(path, monkeypatch):
    grammar = registry.get(_grammar(path))
    real, seen = type(grammar).parse_conversation, []

    def recorded(self, pointer, value, source, settings):
        seen.append(pointer)
        yield from real(self, pointer, value, source, settings)

    monkeypatch.setattr(type(grammar), "parse_conversation", recorded)
    sessions = list(grammar.parse(load_source(path), Settings()))
    assert seen == [s.pointer for s in sessions] and seen
