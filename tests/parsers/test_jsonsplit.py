"""The JSON list splitter: every entry's value and bytes, whatever the layout, and no wrong entry
before a break."""

from __future__ import annotations

import io
from unittest.mock import patch

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.errors import NotStreamable
from parsers import jsonsplit, registry
from parsers.base import ConversationList
from parsers.jsonsplit import SplitError, entries, locate

# Strings that look like the splitter's guesses, and values that are lists of objects (false guesses).
TEXT = st.sampled_from(["", "},{", "} , {", "\"}", "\\", "å", "]", "x" * 40, "},{\"id\":1}"]) | st.text(max_size=8)
LEAF = st.none() | st.booleans() | st.integers(-10**6, 10**6) | TEXT
VALUE = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                     max_leaves=12)
ENTRY = st.dictionaries(TEXT, VALUE, max_size=5) | VALUE


def _layouts(items: list) -> list[bytes]:
    compact = orjson.dumps(items)
    return [compact, orjson.dumps(items, option=orjson.OPT_INDENT_2).replace(b"\n", b"\r\n"),
            b"\xef\xbb\xbf \n" + orjson.dumps(items, option=orjson.OPT_INDENT_2) + b"\n"]


@settings(max_examples=150, deadline=None)
@given(st.lists(ENTRY, max_size=6), st.sampled_from([1, 5, 64, 1 << 20]))
def test_entries_are_the_list_s_values_with_their_bytes(items, block):
    for data in _layouts(items):
        got = list(entries(io.BytesIO(data), block))
        assert [e.value for e in got] == items
        assert [orjson.loads(data[e.start:e.end]) for e in got] == items
        assert [orjson.loads(bytes(e.raw)) for e in got] == items
        assert [e.index for e in got] == list(range(len(items)))


@settings(max_examples=150, deadline=None)
@given(st.lists(ENTRY | st.lists(st.dictionaries(TEXT, VALUE, max_size=3), max_size=12), max_size=6),
       st.sampled_from([5, 64, 1 << 20]), st.sampled_from([1, 2, 7, 64]))
def test_the_exact_route_parses_a_growing_window_and_finds_the_same_entries(items, block, window):
    """An entry the guesses cannot cut (not an object, or a list of objects) is parsed in a window doubled
    until it holds the entry, cut back to a whole UTF-8 character: the same entries, values and bytes."""
    with patch.object(jsonsplit, "WINDOW", window):
        for data in _layouts(items):
            got = list(entries(io.BytesIO(data), block))
            assert [e.value for e in got] == items
            assert [orjson.loads(data[e.start:e.end]) for e in got] == items
            assert [orjson.loads(bytes(e.raw)) for e in got] == items


def test_an_entry_is_not_parsed_over_the_whole_buffer():
    """Each entry's exact parse reads a window about its own size, not the rest of the buffer."""
    events = [{"t": "x" * 50, "n": i} for i in range(40)]  # a list of objects: every guess inside is false
    data = orjson.dumps([{"events": events, "id": i} for i in range(400)])
    sizes = []
    real = orjson.loads

    def measured(window):
        sizes.append(len(window))
        return real(window)

    with patch.object(jsonsplit.orjson, "loads", measured):
        got = list(entries(io.BytesIO(data), 1 << 20))
    assert len(got) == 400 and max(sizes) <= 2 * jsonsplit.WINDOW < len(data)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(TEXT, VALUE, max_size=5), min_size=1, max_size=5), st.data())
def test_a_cut_file_gives_the_entries_before_the_break_then_says_where(items, data):
    """Entries are objects, as conversations are (a number cut short is still a number)."""
    raw = orjson.dumps(items)
    cut = data.draw(st.integers(1, len(raw) - 1))
    got = []
    with pytest.raises(SplitError) as err:
        for e in entries(io.BytesIO(raw[:cut]), 7):
            got.append(e)
    assert [e.value for e in got] == items[: len(got)]
    assert err.value.index == len(got)
    assert all(e.end <= cut for e in got)
    if got:
        assert err.value.start > got[-1].start


@pytest.mark.parametrize("data", [b'{"a": []}', b"", b"  ", b'"x"', b'{"conversations": 1}'])
def test_only_lists_and_wrappers_of_lists_are_split(data):
    with pytest.raises(NotStreamable):
        locate(io.BytesIO(data), ConversationList("mapping"))
    with pytest.raises(SplitError, match="not a JSON list"):
        list(entries(io.BytesIO(data)))


@pytest.mark.parametrize("name, data, why", [
    ("hangouts", b'[{"events": []}]', "the file is a list, and the format keeps its conversations in a wrapper"),
    ("deepseek", b'{"conversations": [{"mapping": {}}]}', "the format has no wrapper object, so it is one conv"),
    ("open-webui", b'{"id": "c", "chat": {"history": {"messages": {}}}}', "the format has no wrapper object"),
])
def test_a_shape_the_whole_read_takes_as_one_value_is_not_streamed(name, data, why):
    """What the whole read takes as one value (``top_level`` gives ``""``) is refused up front, saying why."""
    shape = registry.get(name).conversations
    assert [p for p, _ in shape.top_level(orjson.loads(data))] == [""]
    with pytest.raises(NotStreamable, match=why):
        locate(io.BytesIO(data), shape)


def test_a_wrapper_s_list_is_located_for_the_grammars_that_have_one():
    data = b'{"conversations": [{"events": []}, {"events": []}]}'
    for name in ("hangouts", "grok", "chatgpt"):
        shape = registry.get(name).conversations
        at = locate(io.BytesIO(data), shape)
        assert at.pointer == "/conversations"
        assert [e.value for e in entries(io.BytesIO(data), at=at, shape=shape)] == [{"events": []}] * 2


@pytest.mark.parametrize("data", [b'[{"a":1} {"b":2}]', b'[{"a":1},]', b'[{"a":1}] x', b'[{"a":tru}]'])
def test_invalid_json_is_a_split_error(data):
    with pytest.raises(SplitError):
        list(entries(io.BytesIO(data), 3))


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_a_lone_surrogate_escape_is_read_as_a_replacement_character_and_counted(block):
    data = (b'[{"id": 1, "t": "a"}, {"id": 2, "t": "x \\ud800 y", "u": "\\udc00"}, '
            b'{"id": 3, "t": "\\ud83d\\ude00 \\\\ud800"}]')
    found = list(entries(io.BytesIO(data), block))
    assert [e.value for e in found] == [{"id": 1, "t": "a"}, {"id": 2, "t": "x \ufffd y", "u": "\ufffd"},
                                        {"id": 3, "t": "\U0001f600 \\ud800"}]
    assert [e.surrogates for e in found] == [0, 2, 0]
    assert orjson.loads(bytes(found[1].raw)) == found[1].value  # the bytes a worker parses again
