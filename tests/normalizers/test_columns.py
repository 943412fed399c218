"""Column-wise encoding: polars' JSON string escaping is orjson's, for any text."""

from __future__ import annotations

import orjson
import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from normalizers.columns import json_string


@given(st.lists(st.text() | st.none(), max_size=8))
def test_json_strings_are_orjson_strings(texts):
    got = pl.DataFrame({"t": texts}, schema={"t": pl.Utf8}).select(json_string(pl.col("t"))).to_series().to_list()
    assert got == [orjson.dumps(t).decode() if t is not None else None for t in texts]


def test_every_control_character_and_quote():
    texts = [chr(i) for i in range(0x80)] + ["\u2028\u2029\ufeff\U0001f600", '"\\']
    got = pl.DataFrame({"t": texts}).select(json_string(pl.col("t"))).to_series().to_list()
    assert got == [orjson.dumps(t).decode() for t in texts]
