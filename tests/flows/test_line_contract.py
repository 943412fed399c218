"""A line grammar has one contract: no streaming-only method, and the whole read and the streamed route
call the same grammar methods (``parsers.base.LineGrammar``)."""

from __future__ import annotations

import pytest

from parsers import registry
from parsers.base import Grammar, LineGrammar
from tests.flows.test_spool import _documents, _run

REMOVED = ("streams_text", "plan", "stream_session", "stream_chunk", "stream_end", "scan_block", "is_header")
"""The second contract's flag and hooks."""
RULE = "=" * 62
CONTRACT = ("starts", "survey", "sessions", "frames", "conclude")
LINE = [g for g in registry.all_grammars() if isinstance(g, LineGrammar)]
INPUTS = {  # a file of 40 turns of each grammar, streamed in many chunks
    "whatsapp": ("WhatsApp Chat with Ann.txt", [f"12/24/19, 11:{i:02d} - {'Ann' if i % 2 else 'Bob'}: hi {i}"
                                                for i in range(40)]),
    "irc": ("#chan.log", [f"2012-10-18T09:{i:02d}:30+0000  <{'ann' if i % 2 else 'bob'}> message {i}"
                          for i in range(40)]),
    "transcript": ("chat.txt", [f"[2025-01-01 10:{i:02d}:00] {'User' if i % 2 else 'Ann Lee'}: turn {i}\nmore {i}"
                                for i in range(40)]),
    "markdown": ("chat.md", [f"## {'Assistant' if i % 2 else 'User'}\nturn {i}\n\n### Notes\n```md\n## Summary\n```"
                             "\n---" for i in range(40)]),
    "discord-text": ("paste.txt", [("↪ @Bob hi\n" if i % 5 == 1 else "") + f"{'Ann' if i % 2 else 'Bob'} — 24/12/2019"
                                   f" 11:{i:02d} PM\nhi {i}\n[12:0{i % 10} AM]\nlater {i}" for i in range(40)]),
    "inferred": ("helpdesk.log", ["ChatVault export", ""] + [f"#{i} [{'maria' if i % 2 else 'it-bot'}] turn {i}"
                                                            + ("\nstill jammed" if i % 3 == 0 else "")
                                                            for i in range(40)]),
    "discord-txt": ("G - chan [123456789012345678].txt", [f"{RULE}\nGuild: G\nChannel: C / chan\n{RULE}\n",
                    *(f"[{1 + i % 28}/3/2024 9:{i:02d} PM] {'ann' if i % 2 else 'bo (pinned)'}\nhi {i}\n\n"
                      + ("{Reactions}\n👍 (2)\n\n" if i % 3 else "") for i in range(40)),
                    f"{RULE}\nExported 40 message(s)\n{RULE}"]),
}


def test_the_streamed_hooks_are_gone_from_every_grammar():
    for grammar in [Grammar, *registry.all_grammars()]:
        assert not [h for h in REMOVED if hasattr(grammar, h)], getattr(grammar, "name", grammar)


@pytest.mark.parametrize("grammar", LINE, ids=lambda g: g.name)
def test_a_line_grammar_has_no_method_outside_the_contract(grammar):
    """Its public methods are the grammar's and the line contract's: nothing only one route calls."""
    shared = {n for n in dir(LineGrammar) if not n.startswith("_")}
    own = {n for n in dir(type(grammar)) if not n.startswith("_") and callable(getattr(grammar, n))}
    assert own <= shared, own - shared
    assert set(INPUTS) <= {g.name for g in LINE}


def _calls(monkeypatch, grammar) -> list[str]:
    """The contract methods called on ``grammar``'s class from now on, in order."""
    seen: list[str] = []
    cls = type(grammar)
    for name in CONTRACT:
        method = getattr(cls, name)

        def spy(*args, _name=name, _method=method):
            seen.append(_name)
            return _method(*args)

        monkeypatch.setattr(cls, name, spy if name != "starts" else staticmethod(spy))
    return seen


@pytest.mark.parametrize("grammar", LINE, ids=lambda g: g.name)
def test_the_whole_read_and_the_streamed_route_call_the_same_methods(grammar, tmp_path, monkeypatch):
    name, lines = INPUTS[grammar.name]
    src = tmp_path / "in"
    src.mkdir()
    (src / name).write_text("\n".join(lines) + "\n")
    seen = _calls(monkeypatch, grammar)
    _run(src, tmp_path / "whole")
    whole = list(seen)
    seen.clear()
    _run(src, tmp_path / "streamed", stream_text_bytes=1, stream_chunk_bytes=64)
    assert set(whole) == set(seen) == set(CONTRACT)
    assert seen.count("frames") > 1 and whole.count("frames") == 1  # streamed in chunks; read whole at once
    assert _documents(tmp_path / "whole") == _documents(tmp_path / "streamed")
