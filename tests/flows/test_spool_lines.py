"""The other line grammars streamed: a large log read in chunks gives the document read whole."""

from __future__ import annotations

import io
import shutil
from functools import reduce

import pytest

from flows.core import ranges
from models.records import SourceText
from parsers import registry
from parsers.base import LineGrammar
from parsers.columns import LineTable
from parsers.grammars.irc import Irc
from tests.flows.test_spool import _documents, _run
from tests.parsers.test_columns import CASES

STREAMED = [(g, p) for g, p in CASES if g != "whatsapp" and isinstance(registry.get(g), LineGrammar)]


def _same(path, tmp_path, chunk: int) -> None:
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(path, src / path.name)
    whole, streamed = tmp_path / "whole", tmp_path / "streamed"
    a = _run(src, whole)
    b = _run(src, streamed, stream_text_bytes=1, stream_chunk_bytes=chunk)
    assert _documents(whole) == _documents(streamed)
    assert [(r.status, r.reasons, r.interactions, r.characters, r.declared) for r in a.sessions] == \
        [(r.status, r.reasons, r.interactions, r.characters, r.declared) for r in b.sessions]
    assert not list((streamed / ".spool").glob("*"))


@pytest.mark.parametrize(("grammar", "path"), STREAMED, ids=lambda v: getattr(v, "name", v))
@pytest.mark.parametrize("chunk", [64, 1000])
def test_streamed_documents_equal_whole_ones(grammar, path, chunk, tmp_path):
    _same(path, tmp_path, chunk)


def _chunks_read(monkeypatch, grammar) -> list[int]:
    """The first line of each chunk ``grammar`` streams (each table of one text it frames), from now on."""
    seen: list[int] = []
    frames = grammar.frames

    def counting(self, sources, table, surveys, sessions, first_lines):
        seen.extend(first_lines)
        return frames(self, sources, table, surveys, sessions, first_lines)

    monkeypatch.setattr(grammar, "frames", counting)
    return seen


def test_the_streamed_route_is_taken(tmp_path, monkeypatch):
    """The equality above is not the whole route twice: the streamed route reads the log in chunks."""
    seen = _chunks_read(monkeypatch, Irc)
    path = next(p for g, p in STREAMED if g == "irc" and "irssi-day" in p.name)
    _same(path, tmp_path, 64)
    assert len(seen) > 3 and seen == sorted(seen)


def test_a_log_with_another_dialects_header_is_read_whole(tmp_path):
    """A supybot log holding a weechat-shaped line (a continuation of a turn) cannot be cut there:
    the plan refuses it and the log is read whole, with the same document."""
    log = tmp_path / "mixed.log"
    lines = [f"2012-10-18T09:{i:02d}:30+0000  <ann> message {i}" for i in range(30)]
    lines[12] = "2012-10-18 09:30:30\tbob\tnot a supybot header"
    log.write_text("\n".join(lines) + "\n")
    data = log.read_bytes()
    blocks = ranges.decoded(ranges.raw_blocks(io.BytesIO(data), 64), 1)
    source = SourceText("", "mixed.log", "0" * 64, len(data), "utf-8")
    surveys = [Irc().survey([source], LineTable.of([text]), [line])[0] for text, line in blocks]
    assert "another IRC dialect" in reduce(lambda total, more: total.then(more), surveys).whole_only
    (tmp_path / "run").mkdir()
    _same(log, tmp_path / "run", 64)


def _transcript(n: int, note: bool = False) -> str:
    lines = [f"[2025-01-01 10:{i % 60:02d}:00] {'User' if i % 2 else 'Ann Lee'}: turn {i}\nmore {i}" for i in range(n)]
    if note:
        lines[5] += "\nNote: a label seen once stays in its turn"
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("note", [False, True])
def test_a_transcript_is_streamed_unless_a_header_starts_no_turn(tmp_path, monkeypatch, note):
    """A plain transcript is read in chunks; one whose ``Note:`` line looks like a header but starts no
    turn is read whole (a chunk could not start there): both give the document read whole."""
    from parsers.grammars.transcript import Transcript

    seen = _chunks_read(monkeypatch, Transcript)
    path = tmp_path / "chat.txt"
    path.write_text(_transcript(30, note))
    (tmp_path / "run").mkdir()
    _same(path, tmp_path / "run", 128)
    assert (len(seen) > 3) != note
