"""Decoding structured exports: one place that turns bad JSON into a ParseError with a reason."""

from __future__ import annotations

import re
from typing import Any, AnyStr

import orjson

from models.errors import ParseError, Reason

from .memory import paused_gc

# An escape \uD800-\uDFFF: a high surrogate with the low one that must follow it (a pair: one character),
# or alone. The backslashes before it are counted in pairs, so an escaped backslash followed by "ud800"
# (the text \ud800 itself) is left alone.
_SURROGATE_PATTERN = (r"(?<!\\)((?:\\\\)*)\\u([dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
                      r"|[dD][c-fC-F][0-9a-fA-F]{2})")
_SURROGATE = {str: re.compile(_SURROGATE_PATTERN), bytes: re.compile(_SURROGATE_PATTERN.encode())}
REPLACEMENT_ESCAPE = "\\ufffd"


def replace_lone_surrogates(text: AnyStr) -> tuple[AnyStr, list[int]]:
    """JSON text (or its UTF-8 bytes) with every lone UTF-16 surrogate escape (``\\ud800`` without its
    pair, which no JSON parser here accepts) replaced by the escape of U+FFFD, and the offsets of those
    escapes. Both escapes are six ASCII characters, so every other offset stays where it was. Text that
    is not JSON is never passed here (the escape is then text, not a code unit)."""
    is_text = isinstance(text, str)
    high, low = ("\\ud", "\\uD") if is_text else (b"\\ud", b"\\uD")
    if high not in text and low not in text:
        return text, []
    found: list[int] = []
    replacement = REPLACEMENT_ESCAPE if is_text else REPLACEMENT_ESCAPE.encode()

    def one(match: re.Match) -> AnyStr:
        if len(match.group(2)) == 10:  # a high and a low surrogate: one character, kept
            return match.group(0)
        found.append(match.start(2) - 2)
        return match.group(1) + replacement

    return _SURROGATE[type(text)].sub(one, text), found


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
