"""Source accounting over turn spans as columns agrees with the line-by-line accounting."""

from __future__ import annotations

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from parsers.columns import split_lines
from validators.accounting import BlankIndex, LineIndex, account_lines, account_spans

SPAN = st.tuples(st.integers(1, 12), st.integers(0, 3)).map(lambda t: (t[0], t[0] + t[1]))


@given(st.lists(st.sampled_from(["x", "", " ", "\u3000", "y z"]), min_size=1, max_size=14),
       st.lists(SPAN, max_size=6), st.lists(SPAN, max_size=2), st.integers(1, 3), st.integers(0, 3))
def test_spans_as_columns_count_as_lines_do(lines, turns, regions, first, short):
    text = "\n".join(lines) + "\n"
    extent = (first, max(first, len(lines) - short))
    turns = sorted(turns)
    expected = account_lines(LineIndex(text), extent, turns, regions)
    got = account_spans(BlankIndex(split_lines(text)), extent, pl.Series([a for a, _ in turns], dtype=pl.Int64),
                        pl.Series([b for _, b in turns], dtype=pl.Int64), regions)
    if expected.clean:
        assert got is not None and got.as_dict() == expected.as_dict()
    else:
        assert got is None


def test_an_index_of_a_chunk_counts_from_its_first_line():
    index = BlankIndex(split_lines("a\n\nb\n"), first=10)
    got = account_spans(index, (10, 12), pl.Series([10, 11]), pl.Series([10, 12]), [])
    assert got is not None and (got.in_turns, got.checked) == (2, 2)
