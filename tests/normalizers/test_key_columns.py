"""The column forms of the identity prints (normalizers/keys.py): a column of messages gives the values the
per-message functions give and the values the prints had before they were polars columns
(tests/oracle/prints.py), byte for byte, whatever the text (empty, non-ASCII, composing marks across
messages, surrogates, typography, separators, the join character itself) and whatever the time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from unittest import mock

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normalizers import keys
from normalizers.keys import Message, column_index_prints, content_hash, content_hashes, index_prints
from tests.oracle import prints as oracle

# The characters the per-message function treats specially, beside any other code point (surrogates included).
_SPECIAL = ["\r", "\n", "\r\n", " ", "  ", "\t", "\x00", "\x1c", "\x1f", "\x85", "\u00a0", "\u202f", "\u2007",
            "\u200b", "\u200e", "\u2060", "\ufeff", "\u2018", "\u201c", "\u2014", "\u2026", "\u0301", "\u0327",
            "e", "E\u0301", "\u1100", "\u1161", "\u11a8", "\u3000", "\u2028", "\u1680", "\ud800", "\udfff",
            "\U0001f600", "<media>", ":"]
_TEXT = st.lists(st.one_of(st.sampled_from(_SPECIAL), st.characters(), st.text(max_size=4)), max_size=12).map("".join)
_UTF8 = _TEXT.map(lambda t: t.encode("utf-8", "replace").decode("utf-8"))  # no lone surrogate
_KINDS = st.sampled_from(["message", "media", "system", "code", "", "System"])
_TURNS = st.lists(st.tuples(_TEXT, _KINDS), max_size=20)
_UTF8_TURNS = st.lists(st.tuples(_UTF8, _KINDS), max_size=20)
_AUTHORS = st.one_of(st.sampled_from(["Ana", "Bo", "", "Zoë", "Zoe\u0308", "a\x1fb", "\ud800x", " Ana "]), _TEXT)
_MOMENTS = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC))
_CANONICAL = _MOMENTS.map(lambda t: t.replace(tzinfo=None).isoformat(timespec="seconds") + "Z")
_ZONES = st.builds(lambda m: timezone(timedelta(minutes=m)), st.integers(-14 * 60, 14 * 60))
_OTHER = st.one_of(  # forms the pipeline does not write but Python's reading takes: read per distinct value
    st.builds(lambda t, z: t.astimezone(z).isoformat(), _MOMENTS, _ZONES),
    _MOMENTS.map(lambda t: t.isoformat(timespec="microseconds").replace("+00:00", "Z")),
    _MOMENTS.map(lambda t: t.isoformat(sep=" ", timespec="seconds")),
    _MOMENTS.map(lambda t: t.date().isoformat()))
_DATES = st.one_of(st.none(), st.just(""), _CANONICAL, _OTHER)


def _columns(messages: list[Message]) -> tuple[list, list, list, list]:
    return ([m.author for m in messages], [m.date for m in messages], [m.content for m in messages],
            [m.kind for m in messages])


@settings(max_examples=400, deadline=None)
@given(turns=_TURNS)
def test_a_column_of_contents_hashes_as_each_content_alone(turns):
    contents, kinds = [c for c, _ in turns], [k for _, k in turns]
    assert content_hashes(contents, kinds) == [content_hash(c, k) for c, k in turns]
    assert content_hashes(contents, kinds) == oracle.content_hashes(contents, kinds)


@settings(max_examples=400, deadline=None)
@given(turns=_TURNS, authors=st.lists(_AUTHORS, min_size=20, max_size=20),
       dates=st.lists(_DATES, min_size=20, max_size=20))
def test_the_index_prints_of_columns_are_the_oracles_and_each_messages(turns, authors, dates):
    messages = [Message(a, d, c, k) for (c, k), a, d in zip(turns, authors, dates, strict=False)]
    columns = _columns(messages)
    assert column_index_prints(*columns) == oracle.column_index_prints(*columns) == index_prints(messages)


@settings(max_examples=300, deadline=None)
@given(turns=_UTF8_TURNS, authors=st.lists(_AUTHORS.map(lambda t: t.encode("utf-8", "replace").decode()),
                                           min_size=20, max_size=20),
       dates=st.lists(_DATES, min_size=20, max_size=20))
def test_a_column_polars_can_hold_is_printed_as_columns_never_message_by_message(turns, authors, dates):
    messages = [Message(a, d, c, k) for (c, k), a, d in zip(turns, authors, dates, strict=False)]
    columns = _columns(messages)
    want = oracle.column_index_prints(*columns)
    refuse = mock.Mock(side_effect=AssertionError("printed message by message"))
    with mock.patch.multiple(keys, identity_content=refuse, content_hash=refuse, index_print=refuse,
                             identity_print=refuse, _h16=refuse):
        assert column_index_prints(*columns) == want
        assert content_hashes(columns[2], columns[3]) == oracle.content_hashes(columns[2], columns[3])


@settings(max_examples=300, deadline=None)
@given(dates=st.lists(_CANONICAL, max_size=30))
def test_the_pipelines_utc_dates_are_read_as_one_column(dates):
    want = [keys._epoch(d) for d in dates]
    with mock.patch.object(keys, "_epoch", side_effect=AssertionError("read one by one")):
        assert keys._epochs(pl.Series(dates, dtype=pl.String)).to_list() == want


def test_a_date_neither_reading_takes_still_raises():
    for bad in ("2024-02-30T10:00:00Z", "2024-01-01T23:59:60Z", "0000-01-01T00:00:00Z", "yesterday"):
        with pytest.raises(ValueError):
            keys._epoch(bad)
        with pytest.raises(ValueError):
            column_index_prints(["Ana"], [bad], ["hola"], ["message"])


def test_the_whitespace_the_columns_collapse_and_strip_is_pythons():
    """Every code point: what Rust's regex collapses is what ``_SPACE`` does, what is stripped is what
    ``str.strip`` strips."""
    white = {chr(n) for n in keys._WHITE}
    stripped = set(keys._STRIPPED)
    for n in range(0x110000):
        if 0xD800 <= n < 0xE000:
            continue
        ch = chr(n)
        assert (keys._SPACE.fullmatch(ch) is not None) == (ch in white), hex(n)
        assert (ch.strip() == "") == (ch in stripped), hex(n)
    runs = pl.Series(["".join(sorted(white)), "a b", "a\tb", "a  b"]).str.replace_all(keys._SPACE_RUN, " ")
    assert runs.to_list() == [" ", "a b", "a b", "a b"]


def test_edge_columns():
    assert content_hashes([], []) == [] and column_index_prints([], [], [], []) == []
    assert content_hashes([""], ["message"]) == [content_hash("")]
    # composing marks at a message's start stay with their message, not with the one before
    assert content_hashes(["e", "\u0301a", "A"], ["message"] * 3) == [content_hash(c) for c in ("e", "\u0301a", "A")]
    # a content that holds the join character is still its own value
    assert content_hashes(["a\x00 b\u0301 ", " c"], ["message", "media"]) == [content_hash("a\x00 b\u0301"),
                                                                             content_hash("", "media")]
    # only system lines, or dates all absent
    assert column_index_prints(["Ana"], [None], ["You created group"], ["system"]) == []
    assert column_index_prints(["Ana", "Bo"], [None, ""], ["x", "y"], ["message"] * 2) == index_prints(
        [Message("Ana", None, "x"), Message("Bo", "", "y")])
