"""Inferred-header grammar: shapes, thresholds, the heuristic record, low detection scores."""

from __future__ import annotations

import hashlib
from datetime import datetime

from parsers import registry
from parsers.grammars.inferred import GUESS, infer, shape
from parsers.text import decode
from tests.helpers import read_one

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


def test_detect_stays_below_real_grammars():
    assert 0 < INF.detect("#1 [a] x\n#2 [b] y\n#3 [a] z\nfree\n", "x.log") <= GUESS
    for grammar, sample in [("whatsapp", "12/24/19, 11:23 - John: hi\n12/24/19, 11:24 - Ann: yo\n"
                                         "12/24/19, 11:25 - John: ok\n"),
                            ("irc", "2012-10-18T09:30:30+0000  <a> hi\n2012-10-18T09:30:31+0000  <b> yo\n"
                                    "2012-10-18T09:30:32+0000  <a> ok\n")]:
        assert INF.detect(sample, "x.txt") < registry.get(grammar).detect(sample, "x.txt")
