"""The one document layout: one JSON object, interactions one compact line each, any size the same."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from normalizers.encode import encode_document, encode_interaction, head_and_tail, join_lines

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


def _doc(interactions, **extra):
    history = {"title": extra.pop("title", None), "interactions": interactions, **extra}
    return {"sessionId": "s", "createdAt": "2024-01-01T00:00:00Z",
            "artifacts": {"ByggLogg": {"warnings": ["a\nb"], "x": {}}, "Chatthistorik": history,
                          "ai_protocol_performance": {"n": len(interactions)}}}


@given(st.lists(st.dictionaries(st.text(), JSON, max_size=4), max_size=5), JSON, st.text())
def test_the_document_reads_back_as_itself(interactions, meta, reason):
    doc = _doc(interactions, coverage="partial", coverageReason=reason, meta=meta)
    encoded = encode_document(doc)
    assert orjson.loads(encoded) == doc
    assert encoded.endswith(b"}\n") and b"\r" not in encoded


@given(st.lists(st.dictionaries(st.text(max_size=3), st.text(), max_size=3), min_size=1, max_size=9),
       st.integers(1, 8))
def test_chunked_lines_give_the_same_bytes(interactions, size):
    """Head, lines encoded in chunks of any size, tail: the bytes of the document encoded whole."""
    doc = _doc(interactions)
    head, tail = head_and_tail(doc, len(interactions))
    chunks = [interactions[i:i + size] for i in range(0, len(interactions), size)]
    body = b"".join(join_lines(map(encode_interaction, c), i == 0) for i, c in enumerate(chunks))
    assert head + body + tail == encode_document(doc)


def test_one_interaction_per_line_and_an_indented_envelope():
    lines = encode_document(_doc([{"ordinal": 1}, {"ordinal": 2}], coverage="partial")).split(b"\n")
    at = lines.index(b'      "interactions": [')
    assert lines[at + 1:at + 4] == [b'{"ordinal":1},', b'{"ordinal":2}', b"      ],"]
    assert lines[0] == b"{" and lines[1] == b'  "sessionId": "s",'
    empty = encode_document(_doc([]))
    assert b'"interactions": []\n' in empty and orjson.loads(empty)["artifacts"]["Chatthistorik"]["interactions"] == []
