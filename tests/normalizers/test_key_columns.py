"""The column forms of the identity prints (normalizers/keys.py): a column of turns gives the values the
per-turn functions give, byte for byte, whatever the text (empty, non-ASCII, composing marks across
turns, surrogates, typography, the join character itself)."""

from __future__ import annotations

from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from normalizers import keys
from normalizers.keys import (
    Message,
    column_index_prints,
    content_hash,
    content_hashes,
    identity_content,
    identity_contents,
    index_prints,
)

# The characters the per-turn function treats specially, beside any other code point (surrogates included).
_SPECIAL = ["\r", "\n", "\r\n", " ", "\t", "\x00", "\x1c", "\x1f", "\x85", "\u00a0", "\u202f", "\u2007",
            "\u200b", "\u200e", "\u2060", "\ufeff", "\u2018", "\u201c", "\u2014", "\u2026", "\u0301", "\u0327",
            "e", "E\u0301", "\u1100", "\u1161", "\u11a8", "\u3000", "\ud800", "\udfff", "\U0001f600", "<media>"]
_TEXT = st.lists(st.one_of(st.sampled_from(_SPECIAL), st.characters(), st.text(max_size=4)), max_size=12).map("".join)
_KINDS = st.sampled_from(["message", "media", "system", "code"])
_TURNS = st.lists(st.tuples(_TEXT, _KINDS), max_size=20)
# Without the join character and the ASCII separators: the column is read as one text, never turn by turn.
_JOINABLE = st.lists(st.tuples(_TEXT.map(lambda t: t.translate(dict.fromkeys(map(ord, "\x00\x1c\x1d\x1e\x1f")))),
                               _KINDS), max_size=20)


@settings(max_examples=400, deadline=None)
@given(turns=_TURNS)
def test_a_column_of_contents_reads_as_each_content_alone(turns):
    contents, kinds = [c for c, _ in turns], [k for _, k in turns]
    assert identity_contents(contents, kinds) == [identity_content(c, k) for c, k in turns]
    assert content_hashes(contents, kinds) == [content_hash(c, k) for c, k in turns]


@settings(max_examples=400, deadline=None)
@given(turns=_JOINABLE)
def test_a_joinable_column_is_normalised_as_one_text(turns):
    contents, kinds = [c for c, _ in turns], [k for _, k in turns]
    want = [identity_content(c, k) for c, k in turns]
    with mock.patch.object(keys, "identity_content", side_effect=AssertionError("read turn by turn")):
        assert identity_contents(contents, kinds) == want


@settings(max_examples=200, deadline=None)
@given(turns=_TURNS, authors=st.lists(st.sampled_from(["Ana", "Bo", "", "Zoë", "\ud800x"]), min_size=20, max_size=20),
       dates=st.lists(st.sampled_from([None, "", "2024-01-01T10:05:00Z", "2023-06-30T23:59:59+05:30"]),
                      min_size=20, max_size=20))
def test_the_index_prints_of_columns_are_the_prints_of_each_message(turns, authors, dates):
    messages = [Message(a, d, c, k) for (c, k), a, d in zip(turns, authors, dates, strict=False)]
    columns = ([m.author for m in messages], [m.date for m in messages], [m.content for m in messages],
               [m.kind for m in messages])
    assert column_index_prints(*columns) == index_prints(messages)


def test_edge_columns():
    assert identity_contents([], []) == [] and content_hashes([], []) == []
    assert identity_contents([""], ["message"]) == [""]
    # composing marks at a turn's start stay with their turn, not with the turn before
    assert identity_contents(["e", "\u0301a", "A"], ["message"] * 3) == ["e", "\u0301a", "A"]
    # a content that holds the join character is still its own value
    assert identity_contents(["a\x00 b ", " c"], ["message", "media"]) == ["a\x00 b", "<media>"]
