"""One rule for every line grammar: blank lines that end a turn are separators, not its content, on the
record and the column routes alike."""

from __future__ import annotations

import pytest

from models.records import SourceText
from models.settings import Settings
from parsers import registry
from tests.helpers import columns_of, read_one

CASES = {
    "whatsapp": "12/03/2019, 09:15 - Ann: one\n\n\n12/03/2019, 09:16 - Bob: two\nmore\n  \n\n",
    "discord-text": "Ann Lee — 08/11/2023 1:30 PM\none\n\n\nBob Ray — 08/11/2023 1:31 PM\ntwo\nmore\n\n",
    "irc": "2012-10-18T09:30:30+0000  <ann> one\n\n\n2012-10-18T09:30:31+0000  <bob> two\nmore\n\n",
    "transcript": "[2025-01-02 10:00:00] Ann: one\n\n\n[2025-01-02 10:00:05] Bob: two\nmore\n \n\n",
}


@pytest.mark.parametrize("grammar", sorted(CASES))
def test_turn_text_ends_at_its_last_non_blank_line(grammar):
    text = CASES[grammar]
    g = registry.get(grammar)
    source = SourceText(text, "chat.txt", "0" * 64, len(text), "utf-8")
    (s,) = read_one(g, source, Settings())
    assert [t.content for t in s.turns] == ["one", "two\nmore"]
    (c,) = columns_of(g, source)
    assert c.frame["content"].to_list() == ["one", "two\nmore"]
