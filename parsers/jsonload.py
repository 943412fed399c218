"""Decoding structured exports: one place that turns bad JSON into a ParseError with a reason."""

from __future__ import annotations

from typing import Any

import orjson

from models.errors import ParseError, Reason

from .memory import paused_gc


def load_json(text: str, name: str, grammar: str) -> Any:
    """The decoded JSON document, or ParseError naming where it broke.

    The cyclic garbage collector is paused while orjson builds the objects (3-4x faster on a
    60 MB export; see parsers.memory)."""
    try:
        with paused_gc():
            return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ParseError(Reason.PARSE_ERROR, f"not valid JSON: {exc}", path=name, grammar=grammar) from None


def load_json_lines(text: str) -> list[tuple[int, Any | None, str | None]]:
    """(line number, value or None, error or None) for each non-blank line of a JSON Lines text."""
    out = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            out.append((number, orjson.loads(line), None))
        except orjson.JSONDecodeError as exc:
            out.append((number, None, str(exc)))
    return out


def pointer_part(key: Any) -> str:
    """One JSON pointer reference token (RFC 6901 escaping)."""
    return str(key).replace("~", "~0").replace("/", "~1")


def expect(value: Any, kind: type, what: str, name: str, grammar: str) -> Any:
    """``value`` when it is a ``kind``, else a ParseError saying what was expected."""
    if not isinstance(value, kind):
        raise ParseError(Reason.PARSE_ERROR, f"{what} is {type(value).__name__}, expected {kind.__name__}",
                         path=name, grammar=grammar)
    return value
