"""Session keys (normalizers/keys.py): every grammar's sessions get one; a global id is the same across
exports, anything else is scoped by its account or export, and the index prints prove a re-export."""

from __future__ import annotations

import importlib
from dataclasses import replace
from datetime import timedelta

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flows.core.process import process_text
from models.settings import Settings
from normalizers.assemble import RunContext
from normalizers.keys import (
    KEY_MESSAGES,
    PROOF_MESSAGES,
    Message,
    Scope,
    evidence,
    fingerprint,
    index_prints,
    session_key,
)
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
                sid = log.get("sessionIdRaw") or doc["sessionId"]
                assert key == f"{grammar}:{sid}" or key.startswith(f"{grammar}:{sid}@")
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


def _session_doc(module, session, grammar: str) -> dict:
    name, data = module.render(session)
    docs = _documents(data, name, grammar)
    assert len(docs) == 1
    return docs[0]


def _prints(doc: dict) -> list[str]:
    return snapshot_prints(snapshot_of(orjson.dumps(doc)))


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_a_later_export_with_more_messages_keeps_a_global_key_or_is_proved_the_same(grammar):
    module = _renderer(grammar)
    strategy = getattr(module, "STRATEGY", strategies.sessions())

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(strategy, strategy)
    def check(first, more):
        assume(len(first.turns) >= KEY_MESSAGES)
        longer = _extended(first, more)
        assume(longer.turns[-1].time.year <= 2035)
        doc, later = _session_doc(module, first, grammar), _session_doc(module, longer, grammar)
        key = _key(doc)
        if "@" not in key and ":fp-" not in key:  # a global id
            assert key == _key(later)
            return
        assert _key(later) != key  # scoped by its export: the index prints decide
        found = evidence(_prints(later), _prints(doc))
        assert found.paired == len(_prints(doc))  # every message of the first export is in the later one
        assert found.proof is (found.same_participants and found.beyond_opening >= PROOF_MESSAGES)

    check()


def _whatsapp(lines: list[str], name: str = "WhatsApp Chat with Hikers.txt") -> str:
    docs = _documents("\n".join(lines).encode() + b"\n", name, "whatsapp")
    return _key(docs[0])


HIKE = ["[03/06/2024, 18:40:12] Grace Obi: Hi all!", "[03/06/2024, 18:41:05] Tom Reyes: Hello",
        "[03/06/2024, 18:42:30] Grace Obi: Saturday's route?"]


def test_chats_that_open_alike_have_other_keys():
    """The same greeting from another person, in another chat, followed by other messages, or the same
    chat in another export: every export is its own key."""
    keys = {
        _whatsapp(HIKE),
        _whatsapp([HIKE[0].replace("Grace Obi", "Ana Lind"), *HIKE[1:]]),
        _whatsapp(HIKE, "WhatsApp Chat with Climbers.txt"),
        _whatsapp([*HIKE[:2], "[03/06/2024, 18:42:30] Grace Obi: Sunday's route?"]),
        _whatsapp(HIKE[:2]),
        _whatsapp([*HIKE, "[04/06/2024, 08:00:00] Tom Reyes: Ok"]),
    }
    assert len(keys) == 6


def test_a_key_is_the_same_for_the_same_export_and_ignores_system_lines_zone_and_typography():
    assert _whatsapp(HIKE, "WhatsApp Chat with Hikers (1).txt") == _whatsapp(HIKE)  # downloaded twice
    scope = Scope("ab" * 32)
    plain = [Message("Ana", "2024-01-01T10:00:00Z", 'say "hi"'), Message("Bo", "2024-01-01T10:01:00Z", "ok - fine")]
    fancy = [Message("System", None, "Ana created group", "system"),
             Message("Ana", "2024-01-01T15:30:00Z", "say \u201chi\u201d"),
             Message("Bo", "2024-01-01T15:31:00Z", "ok \u2013 fine")]
    assert session_key("whatsapp", None, "none", "T", plain, scope) == session_key("whatsapp", None, "none", "T",
                                                                                  fancy, scope)


MESSAGES = [Message("Ana" if i % 2 else "Bo", f"2024-01-01T10:{i:02d}:00Z", f"message {i}") for i in range(10)]


def test_evidence_proves_a_snapshot_that_lost_its_oldest_messages_or_moved_zone():
    known = index_prints(MESSAGES)
    assert evidence(index_prints(MESSAGES[4:]), known).proof
    kolkata = [Message(m.author, f"2024-01-01T14:{30 + i:02d}:00Z", m.content) for i, m in enumerate(MESSAGES)]
    found = evidence(index_prints(kolkata), known)
    assert found.proof and found.offset_seconds == 4 * 3600 + 30 * 60


def test_an_opening_greeting_is_no_proof():
    shop = [Message("Shop", f"2024-01-01T10:0{i}:00Z", g) for i, g in enumerate("abc")]
    first = index_prints([*shop, Message("Ana", "2024-01-01T10:05:00Z", "my order")])
    second = index_prints([*shop, Message("Bo", "2024-01-01T10:05:00Z", "a refund")])
    found = evidence(first, second)
    assert found.paired == 3 and found.beyond_opening == 0 and not found.proof and found.possible
    week = index_prints([Message("Shop", f"2024-01-08T10:0{i}:00Z", g) for i, g in enumerate("abc")])
    assert evidence(first, week).paired == 0  # the same words a week later pair nothing


@given(st.lists(st.sampled_from(["hi", "ok", "yes", "Hi", "hi "]), min_size=1, max_size=6),
       st.sampled_from(["Ana", "Bo"]), st.sampled_from(["A", "B", None]))
def test_the_fingerprint_is_the_export_and_its_earliest_messages(texts, author, title):
    messages = [Message(author, None, t) for t in texts]
    scope = Scope("cd" * 32)
    fp = fingerprint("transcript", title, messages, scope.export)
    grown = fingerprint("transcript", title, [*messages, Message("Zed", None, "later")], scope.export)
    assert (fp == grown) is (len(messages) >= KEY_MESSAGES)
    assert fingerprint("transcript", title, messages, Scope("ef" * 32).export) != fp
    assert session_key("transcript", None, "none", title, messages, scope)[0] == f"transcript:fp-{fp}"
    assert session_key("chatgpt", "c1", "source:id", title, messages, scope)[0] == "chatgpt:c1"
    assert session_key("jsonl", "1", "source:conversation_id", title, messages, scope)[0] == f"jsonl:1@{scope.export}"


def test_a_snapshots_prints_are_its_messages_prints():
    doc = _documents("\n".join(HIKE).encode() + b"\n", "WhatsApp Chat with Hikers.txt", "whatsapp")[0]
    items = doc["artifacts"]["Chatthistorik"]["interactions"]
    want = index_prints(Message(i["speakerName"], i.get("date"), i["content"], i["kind"]) for i in items)
    assert snapshot_prints(snapshot_of(orjson.dumps(doc))) == want


def test_a_document_from_before_keys_gets_the_key_it_would_have():
    for lines, name in ((HIKE, "WhatsApp Chat with Hikers.txt"), (HIKE[:1], "WhatsApp Chat with Hikers.txt")):
        doc = _documents("\n".join(lines).encode() + b"\n", name, "whatsapp")[0]
        log = doc["artifacts"]["ByggLogg"]
        key = log.pop("sessionKey")
        del log["sessionKeySource"]
        assert snapshot_of(orjson.dumps(doc)).key == key
