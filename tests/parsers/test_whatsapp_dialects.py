"""Every WhatsApp header template renders the same seeded chat, and every rendering parses back to
the same turns; templates also mix in one file without a message swallowing another."""

from __future__ import annotations

import pytest

from models.settings import Settings
from parsers import registry
from parsers.grammars._whatsapp_headers import PARSED, template_regex
from parsers.text import decode
from tests.helpers import read_one
from tests.renderers import whatsapp_dialects as dialects

WA = registry.get("whatsapp")


def _turns(name: str, data: bytes):
    source = decode(data, name)
    detection = registry.detect(source.text[:65536], name, threshold=0.5)
    assert detection.grammar == "whatsapp", detection.scores
    (session,) = read_one(WA, source, Settings())
    assert WA.count_turns(session.raw) == len(session.turns)
    return session, [(t.speaker, t.kind, t.content, t.time) for t in session.turns]


def test_at_least_forty_distinct_header_dialects():
    assert len({t.text for t in PARSED}) >= 40
    assert len({t.id for t in PARSED}) == len(PARSED)


@pytest.mark.parametrize("index", range(len(PARSED)), ids=[t.id for t in PARSED])
def test_every_template_gives_the_same_turns(index):
    template = PARSED[index]
    name, data = dialects.render(template, seed=index)
    session, got = _turns(name, data)
    assert got == dialects.expected(), template.text
    assert not session.warnings, session.warnings
    exact = template_regex(template)
    for turn in session.turns:
        line = data.decode().replace("\r\n", "\n").split("\n")[turn.lines[0] - 1]
        assert exact.match(line), (template.id, line)


def test_dialects_mixed_in_one_file_never_swallow_a_message():
    chat = dialects.expected()
    lines = []
    for i, (speaker, _, text, when) in enumerate(chat):
        template = PARSED[(i * 7) % len(PARSED)]
        head = dialects.header(template, when, i)
        source_speaker = dialects.CHAT[i][0]
        lines.append(head + (f"{source_speaker}: {text}" if source_speaker else text))
        del speaker
    _, got = _turns("WhatsApp Chat with Trip.txt", ("\n".join(lines) + "\n").encode())
    assert [(s, k, c) for s, k, c, _ in got] == [(s, k, c) for s, k, c, _ in chat]
