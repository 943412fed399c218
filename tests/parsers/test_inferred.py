"""Inferred-header grammar: shapes, thresholds, the heuristic record, low detection scores."""

from __future__ import annotations

import hashlib
from datetime import datetime

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.records import SourceText
from parsers import registry
from parsers.grammars.inferred import GUESS, LOOSE_LINES, infer, shape
from parsers.text import decode
from tests.helpers import read_one, session_snapshot
from tests.parsers.test_markdown import streamed

INF = registry.get("inferred")


def parse(text: str, name: str = "chat.log"):
    sessions = read_one(INF, decode(text.encode(), name))
    for s in sessions:
        assert INF.count_turns(s.raw) == len(s.turns)
    return sessions


def test_shapes():
    assert shape("#42 [alice] text") == r"^\#\d+[ \t]+\[(?P<name>[^\n]{1,40}?)[ \t]*\][ \t]?"
    assert shape("<<2024/03/01 10:00>> Bob Stone | hi").startswith(r"^<<\d+/\d+/\d+[ \t]+\d+:\d+>>")
    assert shape("plain words: no prefix") is None
    assert shape("12 this is a sentence of many words, not a name") is None


def test_pattern_heuristic_and_partial_coverage():
    text = "<<2024/03/01 10:00>> alice | hi\n<<2024/03/01 10:01>> Bob | yo\nmore\n<<2024/03/01 10:02>> alice | ok\n"
    (s,) = parse(text)
    pattern = infer(text)[0]
    (h,) = s.heuristics
    assert h.id == "H-INFER-" + hashlib.sha256(pattern.encode()).hexdigest()[:8]
    assert h.evidence["pattern"] == pattern and h.evidence["linesMatched"] == 3
    assert h.evidence["sampleLines"] == [1, 2, 4]
    assert s.coverage_reason and h.id in s.coverage_reason
    assert [(t.speaker, t.content, t.time) for t in s.turns] == [
        ("alice", "hi", datetime(2024, 3, 1, 10, 0)), ("Bob", "yo\nmore", datetime(2024, 3, 1, 10, 1)),
        ("alice", "ok", datetime(2024, 3, 1, 10, 2))]


def test_clock_only_headers_keep_the_raw_time_and_warn():
    (s,) = parse("[10:00] <alice> hi\n[10:01] <bob> yo\n[10:02] <alice> ok\n")
    assert [t.time for t in s.turns] == [None, None, None]
    assert [t.time_raw for t in s.turns] == ["10:00", "10:01", "10:02"]
    assert s.warnings[0].startswith("3 turn times could not be read (a clock time without a date)")


def test_thresholds():
    assert infer("#1 [a] x\n#2 [b] y\n") is None  # fewer than 3 headers
    assert infer("#1 [a] x\nfree\ntext\nhere\n#2 [b] y\n#3 [a] z\n") is None  # 3 of 6 lines: below 60%
    assert infer("#1 [a] x\n#2 [b] y\n#3 [a] z\nfree\n") is not None
    assert infer('{"a": 1}\n{"a": 2}\n{"a": 3}\n') is None  # JSON is never claimed


_PAGE = ['<span class="msg">Alice: see you at eight</span>', '<span class="msg">Bob: fine</span>',
         '<span class="msg">Alice: bring the tickets</span>', '<span class="msg">Bob: done</span>']


@pytest.mark.parametrize("start", ["<!DOCTYPE html>", "<html><body>", "<?xml version='1.0'?>", "<!-- saved page -->",
                                   '<div class="page">'])
def test_a_markup_document_is_never_read_as_a_log(start):
    """An HTML or XML page no grammar knows is no log whose header could be learnt (its tags would be read
    as speakers, ``div class``): it scores 0 and learns nothing, so it is quarantined with no grammar."""
    page = "\n".join([start, *_PAGE]) + "\n"
    assert infer("\n".join(_PAGE)) is not None  # the same lines without the document's start: a learnt header
    assert infer(page) is None
    assert INF.detect(page, "page.html") == 0.0


def test_detect_stays_below_real_grammars():
    assert 0 < INF.detect("#1 [a] x\n#2 [b] y\n#3 [a] z\nfree\n", "x.log") <= GUESS
    for grammar, sample in [("whatsapp", "12/24/19, 11:23 - John: hi\n12/24/19, 11:24 - Ann: yo\n"
                                         "12/24/19, 11:25 - John: ok\n"),
                            ("irc", "2012-10-18T09:30:30+0000  <a> hi\n2012-10-18T09:30:31+0000  <b> yo\n"
                                    "2012-10-18T09:30:32+0000  <a> ok\n")]:
        assert INF.detect(sample, "x.txt") < registry.get(grammar).detect(sample, "x.txt")


_STAMPS = [("2024/03/01 10:00", "2024/02/30 10:00", "2024/03/01 23:59"), ("7 10:00", "12 23:59"), ("12", "7")]


def _header(stamps: tuple[str, ...]):
    return st.builds(lambda stamp, name, text: f"<<{stamp}>> {name} | {text}", st.sampled_from(stamps),
                     st.sampled_from(["alice", "Assistant", "bob smith", "Bartholomew Maximilian Fitzgerald",
                                      "a b c d e"]), st.text(alphabet="ab |:", max_size=6))


_OTHER = st.sampled_from([
    "#41 [maria] a", "", "  ", "continued", "more text: here", "- a note, then", "1. First, do x", "12 34 | x",
    "<<not a header", "<<12>> bob | other stamp", "> quoted", "{", '{"a": 1}', "[",
    "Title of the export", "(a) aside", "  indented text"])
WHOLE_ONLY = ("its first block is blank or does not settle whether it starts like JSON",
              "no header pattern is learnt from its first 2,000 lines", "line ",
              f"more than {LOOSE_LINES} lines without a header-like line")


@settings(max_examples=300, deadline=None)
@example(["<<2024/03/01 10:00>> alice | a", "<<2024/03/01 10:01>> bob smith | b", "more", "12 34 | x",
          "<<2024/03/01 10:02>> a b c d e | c", "Title of the export", "<<2024/03/01 10:03>> alice | d"], 5)
@example(["Title of the export", "", "<<7 10:00>> alice | a", "<<12>> Assistant | b", "continued",
          "<<7 10:00>> alice | c"], 1)
@given(st.sampled_from(_STAMPS).flatmap(lambda stamps: st.lists(st.one_of(*[_header(stamps)] * 4, _OTHER),
                                                                  min_size=3, max_size=30)), st.integers(1, 48))
def test_a_stream_reads_what_the_whole_read_reads_or_says_why_not(lines, size):
    """Headers (names of five words, a date that is no date, a clock alone, no time), continuation lines that
    look like headers or could start one, a preamble, a JSON-like start, cut into blocks of any size: the
    streamed read gives the whole read's session, or says why it reads the log whole."""
    text = "\n".join(lines) + "\n"
    got = streamed(text, size, INF, "x.log")
    if isinstance(got, str):
        assert got.startswith(WHOLE_ONLY), got
        return
    (whole,) = read_one(INF, SourceText(text, "x.log", "0" * 64, len(text), "utf-8"))
    whole.raw = (whole.raw[0], "")
    assert got == session_snapshot(whole, INF.count_turns((whole.raw[0], text)))


@pytest.mark.parametrize("size", [1, 7, 64, 4096])
def test_a_log_whose_header_like_lines_all_start_turns_is_streamed(size):
    """A log with a preamble, continuation lines and a header whose name is too long for its shape is streamed
    in blocks of any size, never read whole."""
    lines = ["ChatVault export", ""]
    for i in range(40):
        name = "Bartholomew Maximilian Fitzgerald" if i % 7 == 3 else ["alice", "bob"][i % 2]
        lines += [f"<<2024/03/01 10:{i:02d}>> {name} | turn {i}"] + (["more of it", ""] if i % 3 == 0 else [])
    text = "\n".join(lines) + "\n"
    got = streamed(text, size, INF, "x.log")
    assert not isinstance(got, str), got
    assert len(got["turns"]) == 40 and got["regions"][0]["lines"] == [1, 2]
