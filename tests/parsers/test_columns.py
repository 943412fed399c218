"""The columnar parse of a line grammar gives the line-engine parse's sessions, turn for turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.records import SourceText
from models.settings import Settings
from parsers import registry
from parsers.columns import nonblank, split_lines, turns_of
from parsers.grammars._whatsapp_columns import header_dates, header_lines, headers
from parsers.grammars.whatsapp import _REST
from parsers.text import decode
from tests.helpers import CONFORMANCE, GOLDEN, ROOT, columns_of, session_snapshot

COLUMNAR = [g.name for g in registry.all_grammars() if g.columnar]


def _inputs(grammar: str) -> list[Path]:
    found = [p for p in (GOLDEN / grammar).rglob("*") if p.is_file() and not p.name.endswith(".expected.json")]
    for folder in (ROOT / "sample_logs", CONFORMANCE / "fixtures"):
        for p in sorted(folder.rglob("*.txt")) + sorted(folder.rglob("*.log")):
            source = decode(p.read_bytes(), p.name)
            if registry.detect(source.text[:65536], p.name, threshold=0.5).grammar == grammar:
                found.append(p)
    return sorted(found)


def _both(grammar: str, source: SourceText):
    g = registry.get(grammar)
    lined = [session_snapshot(s, g.count_turns(s.raw)) for s in g.parse(source, Settings())]
    sessions = columns_of(g, source)
    assert sessions is not None
    columnar = []
    for s in sessions:
        s.turns = turns_of(s.frame)
        columnar.append(session_snapshot(s, g.count_turns(s.raw)))
    return lined, columnar


CASES = [(g, p) for g in COLUMNAR for p in _inputs(g)]


def test_there_are_columnar_cases():
    assert COLUMNAR and len(CASES) > 10


@pytest.mark.parametrize(("grammar", "path"), CASES, ids=lambda v: getattr(v, "name", v))
def test_columnar_parse_equals_the_line_engine(grammar, path):
    source = decode(path.read_bytes(), path.name)
    lined, columnar = _both(grammar, source)
    assert columnar == lined


@pytest.mark.parametrize("siblings", [(), ("IMG-1.jpg", "chat.txt")])
def test_attachments_are_checked_the_same(siblings):
    text = ("12/24/19, 11:23 - Ann: IMG-1.jpg (file attached)\n12/24/19, 11:24 - Ann: IMG-2.jpg (file attached)\n"
            "caption\n12/24/19, 11:25 - Bob: <Media omitted>\n")
    source = SourceText(text, "WhatsApp Chat with Ann.txt", "0" * 64, len(text), "utf-8", siblings=siblings)
    lined, columnar = _both("whatsapp", source)
    assert columnar == lined


_LINE = st.one_of(
    st.sampled_from(["12/24/19, 11:23 - Ann: hi", "[24.12.19, 11:23:05] Bob: yo", "24/12/2019, 23:59 - Ann joined",
                     "12/13/19, 0:05 - Ann: <Media omitted>", "\u200e[1/2/20, 9:01:00 AM] G: \u200eAnn added Bob",
                     "1/2/20, 25:61 - C: bad clock", "plain text", "", "  ", "31/2/21, 10:00 - D: no such day",
                     "[1/2/20, 10:00 - odd] x", "1/2/20, 10:00] Y: mismatched"]),
    st.text(alphabet="ab :[]/-\u200e\u00a0", max_size=12),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINE, max_size=14), st.booleans())
def test_any_mix_of_lines_parses_the_same(lines, final_newline):
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    lined, columnar = _both("whatsapp", SourceText(text, "chat.txt", "0" * 64, len(text), "utf-8"))
    assert columnar == lined
    lines_ = split_lines(text)
    assert header_lines(lines_).to_list() == headers(lines_, _REST).ok.to_list()
    heads = headers(lines_, _REST)
    at, dates = header_dates(lines_)
    assert at.to_list() == heads.ok.arg_true().to_list()
    assert dates.to_list() == heads.groups["date"].filter(heads.ok).to_list()


@given(st.text(alphabet="a \t\n\x1c\u3000\u00a0", max_size=30))
def test_lines_and_blank_lines_as_python_sees_them(text):
    lines = split_lines(text)
    expected = text.split("\n")[:-1] if text.endswith("\n") else (text.split("\n") if text else [])
    assert lines.to_list() == expected
    assert nonblank(lines).to_list() == [bool(x.strip()) for x in expected]


def _snapshots(grammar, sessions) -> list:
    out = []
    for s in sessions:
        s.turns = turns_of(s.frame)
        out.append(session_snapshot(s, grammar.count_turns(s.raw)))
    return out


def _one_table_reads_like_each_alone(grammar: str, sources: list[SourceText]) -> None:
    """Every source of one table of lines gets the sessions it gets read alone (a text's lines never
    run into the next text's, and what a text decides for itself stays its own)."""
    g = registry.get(grammar)
    together = g.parse_columns(sources, Settings())
    assert together is not None and len(together) == len(sources)
    for source, sessions in zip(sources, together, strict=True):
        alone = columns_of(g, source)
        assert (None if sessions is None else _snapshots(g, sessions)) == (
            None if alone is None else _snapshots(g, alone)), source.name


@pytest.mark.parametrize("grammar", COLUMNAR)
def test_every_input_of_a_grammar_in_one_table(grammar):
    paths = [p for g, p in CASES if g == grammar]
    sources = [decode(p.read_bytes(), p.name) for p in paths]
    _one_table_reads_like_each_alone(grammar, sources + sources[:1])  # the same text twice, too


_TEXT = st.lists(_LINE, max_size=8).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_TEXT, st.booleans()), min_size=1, max_size=5))
def test_any_mix_of_chats_in_one_table(chats):
    """Texts with and without headers, empty, day-first beside month-first: one table, each its own."""
    texts = [text + ("\n" if newline and text else "") for text, newline in chats]
    sources = [SourceText(t, f"WhatsApp Chat with {i}.txt", "0" * 64, len(t), "utf-8") for i, t in enumerate(texts)]
    _one_table_reads_like_each_alone("whatsapp", sources)
