"""Session keys (normalizers/keys.py): every grammar's sessions get one, the same across re-exports of a
conversation, different for different conversations."""

from __future__ import annotations

import importlib
from dataclasses import replace
from datetime import timedelta

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flows.process import process_text
from models.settings import Settings
from normalizers.assemble import RunContext
from normalizers.keys import KEY_MESSAGES, Message, continues, fingerprint, message_prints, session_key
from normalizers.snapshots import _key_of, snapshot_of, snapshot_prints
from parsers import registry
from parsers.text import decode
from tests import strategies
from tests.helpers import GOLDEN
from tests.parsers.test_golden import CASES, _companions

GRAMMARS = [g.name for g in registry.all_grammars()]


def _documents(data: bytes, name: str, grammar: str, companions: dict[str, str] | None = None) -> list[dict]:
    ctx = RunContext.from_settings(Settings(format=grammar))
    source = replace(decode(data, name), companions=companions or {})
    return [orjson.loads(s.encoded) for s in process_text(source, ctx).sessions if s.encoded]


def _key(doc: dict) -> str:
    return doc["artifacts"]["ByggLogg"]["sessionKey"]




@pytest.mark.parametrize("grammar", GRAMMARS)
def test_every_golden_session_has_its_key(grammar):
    """Every session of every golden input gets a key of its grammar: its id when the platform's,
    else a fingerprint, and the document's key is what its own fields give."""
    seen = 0
    for path in (p for p in CASES if p.relative_to(GOLDEN).parts[0] == grammar):
        name = str(path.relative_to(GOLDEN / grammar))
        for doc in _documents(path.read_bytes(), name, grammar, _companions(path)):
            key, log = _key(doc), doc["artifacts"]["ByggLogg"]
            assert key.startswith(f"{grammar}:") and log["sessionKeySource"]
            assert key == _key_of(doc, doc["artifacts"]["Chatthistorik"]["interactions"])
            if log["sessionIdSource"].startswith("source:"):
                assert key == f"{grammar}:{log.get('sessionIdRaw') or doc['sessionId']}"
            seen += 1
    assert seen


def _renderer(grammar: str):
    return importlib.import_module(f"tests.renderers.{grammar.replace('-', '_')}")


def _extended(first, more):
    """``first`` with ``more``'s turns said after it six times (a later export of the same chat; six
    times so that the renderers, which pick a dialect by turn count or text length modulo 2 or 3,
    write it in the same dialect)."""
    tail, last = [], first.turns[-1].time
    for _ in range(6):
        start = more.turns[0].time
        tail.extend(strategies.GenTurn(t.speaker, t.content, last + timedelta(hours=1) + (t.time - start))
                    for t in more.turns)
        last = tail[-1].time
    return strategies.GenSession(first.turns + tuple(tail))


def _session_key(module, session, grammar: str) -> str:
    name, data = module.render(session)
    docs = _documents(data, name, grammar)
    assert len(docs) == 1
    return _key(docs[0])


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_a_later_export_with_more_messages_keeps_the_key(grammar):
    module = _renderer(grammar)
    strategy = getattr(module, "STRATEGY", strategies.sessions())

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(strategy, strategy)
    def check(first, more):
        assume(len(first.turns) >= KEY_MESSAGES)
        longer = _extended(first, more)
        assume(longer.turns[-1].time.year <= 2035)
        key = _session_key(module, first, grammar)
        assert key == _session_key(module, longer, grammar)
        opening = [(t.speaker, t.content.split()) for t in more.turns[:KEY_MESSAGES]]
        if ":fp-" in key and opening != [(t.speaker, t.content.split()) for t in first.turns[:KEY_MESSAGES]]:
            assert _session_key(module, more, grammar) != key  # another conversation

    check()


def _whatsapp(lines: list[str], name: str = "WhatsApp Chat with Hikers.txt") -> str:
    docs = _documents("\n".join(lines).encode() + b"\n", name, "whatsapp")
    return _key(docs[0])


HIKE = ["[03/06/2024, 18:40:12] Grace Obi: Hi all!", "[03/06/2024, 18:41:05] Tom Reyes: Hello",
        "[03/06/2024, 18:42:30] Grace Obi: Saturday's route?"]


def test_chats_that_open_alike_have_other_keys():
    """The same greeting from another person, in another chat, or followed by other messages."""
    keys = {
        _whatsapp(HIKE),
        _whatsapp([HIKE[0].replace("Grace Obi", "Ana Lind"), *HIKE[1:]]),
        _whatsapp(HIKE, "WhatsApp Chat with Climbers.txt"),
        _whatsapp([*HIKE[:2], "[03/06/2024, 18:42:30] Grace Obi: Sunday's route?"]),
        _whatsapp(HIKE[:2]),
    }
    assert len(keys) == 5


def test_a_key_survives_a_zone_shift_and_reencoding():
    shifted = [line.replace("18:4", "21:4") for line in HIKE]
    shifted[2] = shifted[2].replace("route?", "route?  ")
    assert _whatsapp(HIKE) == _whatsapp(shifted) == _whatsapp([*HIKE, "[04/06/2024, 08:00:00] Tom Reyes: Ok"])
    assert _whatsapp(HIKE, "WhatsApp Chat with Hikers (1).txt") == _whatsapp(HIKE)  # downloaded twice


MESSAGES = [Message("Ana", f"2024-01-01T10:{i:02d}:00Z", f"message {i}") for i in range(10)]


def test_continues_finds_a_snapshot_that_lost_its_oldest_messages():
    known = message_prints(MESSAGES)
    assert continues(message_prints(MESSAGES[4:]), known)
    assert not continues(message_prints(MESSAGES[4:5] + MESSAGES[6:]), known)
    assert continues(message_prints(MESSAGES), message_prints(MESSAGES[:2]))  # a short chat that grew
    assert not continues(message_prints(MESSAGES[1:]), message_prints(MESSAGES[:2]))
    assert not continues([], known) and not continues(message_prints(MESSAGES), [])


@given(st.lists(st.sampled_from(["hi", "ok", "yes", "Hi", "hi "]), min_size=1, max_size=6),
       st.sampled_from(["Ana", "Bo"]), st.sampled_from(["A", "B", None]))
def test_the_fingerprint_is_the_earliest_messages(texts, author, title):
    messages = [Message(author, None, t) for t in texts]
    fp = fingerprint("transcript", title, messages)
    grown = fingerprint("transcript", title, [*messages, Message("Zed", None, "later")])
    assert (fp == grown) is (len(messages) >= KEY_MESSAGES)
    assert session_key("transcript", None, "none", title, messages)[0] == f"transcript:fp-{fp}"
    assert session_key("chatgpt", "c1", "source:id", title, messages)[0] == "chatgpt:c1"


def test_a_snapshots_prints_are_its_messages_prints():
    doc = _documents("\n".join(HIKE).encode() + b"\n", "WhatsApp Chat with Hikers.txt", "whatsapp")[0]
    items = doc["artifacts"]["Chatthistorik"]["interactions"]
    want = message_prints(Message(i["speakerName"], i.get("date"), i["content"], i["kind"]) for i in items)
    assert snapshot_prints(snapshot_of(orjson.dumps(doc))) == want
