"""The one byte layout of a session document, the same for every session whatever its size.

The document is one JSON object. Its envelope (everything but the interactions) is indented by two
spaces, as orjson's ``OPT_INDENT_2`` writes it; the interactions are written one compact object per
line, each line ending ``,`` but the last, with no indentation:

    {
      "sessionId": "s1",
      ...
      "artifacts": {
        "ByggLogg": {...},
        "Chatthistorik": {
          "title": null,
          "interactions": [
    {"ordinal":1,"role":"user",...},
    {"ordinal":2,"role":"user",...}
          ],
          "coverage": "partial", ...
        },
        "ai_protocol_performance": {...}
      }
    }

Why this layout: the interactions are nearly all of a large document, and written compact they cost
a seventh of the indented bytes; one interaction per line keeps the file readable with line tools
(``grep``, ``sed -n``, ``diff``); and the document splits into a *head* (up to ``"interactions": [``),
the *interaction lines* and a *tail*, so a session of millions of turns is encoded chunk by chunk
into a spool and wrapped at the end, and its bytes are exactly those of the same session encoded
in one piece. Nothing here depends on how many chunks there were.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

_PATH = ("artifacts", "Chatthistorik", "interactions")
_INDENT = b"  "


def encode_interaction(item: dict[str, Any]) -> bytes:
    """One interaction as its compact line (no separator)."""
    return orjson.dumps(item)


def join_lines(lines: Iterable[bytes], first: bool) -> bytes:
    """Interaction lines as they follow the head: each on its own line, separated by commas.
    ``first``: whether these are the session's first lines (no comma before them)."""
    body = b",\n".join(lines)
    if not body:
        return b""
    return (b"\n" if first else b",\n") + body


def _value(value: Any, depth: int) -> bytes:
    """A value at ``depth`` (nesting level) of the indented envelope. JSON strings hold no raw
    line end, so re-indenting orjson's output is a plain replacement."""
    encoded = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    return encoded.replace(b"\n", b"\n" + _INDENT * depth) if depth else encoded


def _key(key: str, depth: int) -> bytes:
    return _INDENT * (depth + 1) + orjson.dumps(key) + b": "


def _object(node: dict[str, Any], depth: int, level: int, count: int) -> tuple[bytes, bytes]:
    """(head, tail) of the object on the way to the interactions (``level``: its place on that way)."""
    head: list[bytes] = [b"{\n"]
    tail: list[bytes] = []
    target = _PATH[level]
    seen = False
    for key, value in node.items():
        part = tail if seen else head
        if part is tail or len(head) > 1:
            part.append(b",\n")
        part.append(_key(key, depth))
        if key != target:
            part.append(_value(value, depth + 1))
        elif level + 1 < len(_PATH):
            inner_head, inner_tail = _object(value, depth + 1, level + 1, count)
            head.append(inner_head)
            tail.append(inner_tail)
            seen = True
        else:
            head.append(b"[")
            tail.append(b"\n" + _INDENT * (depth + 1) + b"]" if count else b"]")
            seen = True
    if not seen:
        raise ValueError(f"the document has no {'.'.join(_PATH[:level + 1])}")
    tail.append(b"\n" + _INDENT * depth + b"}")
    return b"".join(head), b"".join(tail)


def head_and_tail(doc: dict[str, Any], count: int) -> tuple[bytes, bytes]:
    """The bytes before and after the interaction lines of a document with ``count`` interactions
    (the value under ``interactions`` in ``doc`` is not read)."""
    head, tail = _object(doc, 0, 0, count)
    return head, tail + b"\n"


def encode_document(doc: dict[str, Any]) -> bytes:
    """The whole document in its one layout (its interactions as dicts, in the document)."""
    interactions = doc["artifacts"]["Chatthistorik"]["interactions"]
    head, tail = head_and_tail(doc, len(interactions))
    return b"".join((head, join_lines(map(encode_interaction, interactions), True), tail))
