"""The line engine finds exactly the header matches a plain MULTILINE search finds, in one pass of
line ends, and its block spans cover every line once."""

from __future__ import annotations

import re

import regex
from hypothesis import given
from hypothesis import strategies as st

from parsers.engine import header_matches, line_patterns, scan, split_blocks

LINES = st.lists(st.sampled_from(["Ann: hi", "Bo: yo", "plain text", "", "  Ann: indented", "x Ann: no",
                                  "Ann:", "```", "Cy: a: b"]), max_size=30)
HEADERS = [regex.compile(r"^(?P<name>[A-Z]\w*):(?:[ \t]+|$)", regex.MULTILINE),
           re.compile(r"^(?P<name>[A-Z]\w*):[ \t]*", re.MULTILINE)]


@given(LINES, st.sampled_from(HEADERS))
def test_header_matches_equal_a_plain_search(lines, header):
    text = "\n".join(lines) + "\n"
    assert [m.span() for m in header_matches(text, header)] == [m.span() for m in header.finditer(text)]


@given(LINES)
def test_blocks_cover_every_line_once(lines):
    text = "\n".join(lines) + "\n"
    spans = [(b.line_start, b.line_end) for b in split_blocks(text, HEADERS[0])]
    covered = [n for a, b in spans for n in range(a, b + 1)]
    assert covered == sorted(set(covered))
    non_blank = {i for i, ln in enumerate(lines, 1) if ln.strip()}
    assert non_blank <= set(covered)


def test_scan_starts_later_matches_at_the_line_end_before_them():
    first, rest = line_patterns(r"(?P<name>[A-Z]\w*): ")
    found = list(scan("Ann: a\nmore\nBo: b\n", first, rest))
    assert [(m.start(), m["name"]) for m in found] == [(0, "Ann"), (11, "Bo")]
