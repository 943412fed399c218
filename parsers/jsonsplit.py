"""Splitting a large JSON array into its entries' bytes, without building the file's tree.

A large export (``conversations.json``) is a list of conversations; reading it one conversation at
a time keeps memory to one conversation, and knowing where each one lies in the file lets several
processes share the work. A general event parser (ijson) is much slower than parsing each entry
with orjson, so entries are cut by a guess that orjson then confirms:

- a guess is a ``}`` followed by ``,`` and ``{`` (whitespace allowed between): the end of one object
  and the start of the next, or the last ``}`` before the closing ``]``;
- the bytes from the entry's first byte to a guessed end are parsed with orjson. Starting at the
  entry's real start, only the entry's own closing brace gives valid JSON (any other ``}`` is inside
  a string or leaves a bracket open), so the first guess that parses is the entry, and its value
  is kept: each entry is parsed once;
- an entry that is not an object, or one with many false guesses inside (lists of objects),
  is found by parsing from its start to the end of the buffer: orjson stops at the first byte
  after the value ("unexpected content after document") and says where.

Anything that is not valid JSON stops the split with ``SplitError``, saying which entry, where it
starts and what was read before it, so a caller can report exactly what was lost (a file cut off in
the middle of a conversation).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson
import regex

from models.errors import ParseError, Reason
from parsers.jsonload import replace_lone_surrogates

BLOCK = 8 * 1024 * 1024
"""Bytes read at a time; an entry larger than this grows the buffer."""
MAX_GUESSES = 8
"""False guesses inside one entry before it is found by the exact route."""
_GUESS = regex.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")
_SPACE = b" \t\r\n"


@dataclass(slots=True)
class Entry:
    """One entry of the top-level array: its index, its bytes' offsets in the file, its value and
    its bytes (a view of the reader's buffer)."""

    index: int
    start: int
    end: int
    value: Any
    raw: memoryview | bytes
    surrogates: int = 0
    """Lone UTF-16 surrogate escapes in the entry, read as the escape of U+FFFD (``raw`` holds them so)."""


class SplitError(ParseError):
    """The file is not a valid JSON array from ``start`` on: entry ``index`` could not be read."""

    def __init__(self, message: str, index: int, start: int) -> None:
        self.index, self.start = index, start
        super().__init__(Reason.PARSE_ERROR, message)

    def _message(self) -> str:
        return self.detail  # quoted whole inside the input's quarantine detail (flows/jsonstream.lost)


class _Buffer:
    """A window of the file: ``data`` holds bytes ``base`` .. ``base + len(data)``."""

    __slots__ = ("base", "data", "eof", "fp", "size")

    def __init__(self, fp: BinaryIO, size: int, base: int) -> None:
        fp.seek(base)
        self.fp, self.size = fp, size
        self.base, self.data, self.eof = base, b"", False

    def more(self, keep_from: int) -> bool:
        """Read the next block, dropping what lies before file offset ``keep_from`` (at most the end of
        what was read); False at the end."""
        if self.eof:
            return False
        block = self.fp.read(self.size)
        if not block:
            self.eof = True
            return False
        data = self.data + block  # from file offset self.base
        self.data = data[keep_from - self.base:]
        self.base = keep_from
        return True

    def replace_surrogates(self, pos: int) -> int:
        """Replace the lone surrogate escapes from file offset ``pos`` on (same length: no offset moves);
        how many there were."""
        at = pos - self.base
        fixed, found = replace_lone_surrogates(self.data[at:])
        if found:
            self.data = self.data[:at] + fixed
        return len(found)

    def skip_space(self, pos: int) -> int:
        """The file offset of the first byte at or after ``pos`` that is not whitespace (reading on)."""
        while True:
            at = pos - self.base
            data = self.data
            while at < len(data) and data[at] in _SPACE:
                at += 1
            pos = self.base + at
            if at < len(data) or not self.more(pos):
                return pos


def array_start(fp: BinaryIO) -> int | None:
    """The file offset just after the ``[`` that opens the top-level array, or None when the file
    (after a BOM and whitespace) is not a list."""
    head = fp.read(4096)
    fp.seek(0)
    bom = 3 if head.startswith(b"\xef\xbb\xbf") else 0
    body = head[bom:].lstrip(_SPACE)
    if not body.startswith(b"["):
        return None
    return len(head) - len(body) + 1


def entries(fp: BinaryIO, block: int = BLOCK) -> Iterator[Entry]:
    """The entries of the JSON array the file holds, in order (``array_start`` must be a list)."""
    start = array_start(fp)
    if start is None:
        raise SplitError("not a JSON list", 0, 0)
    buf = _Buffer(fp, block, start)
    pos = buf.skip_space(start)
    index = 0
    if _byte(buf, pos) == b"]":
        _end(buf, pos + 1, index)
        return
    while True:
        entry = _entry(buf, pos, index)
        yield entry
        index += 1
        pos = buf.skip_space(entry.end)
        mark = _byte(buf, pos)
        if mark == b"]":
            _end(buf, pos + 1, index)
            return
        if mark != b",":
            raise SplitError(f"expected ',' or ']' after entry {index - 1} at byte {pos}", index, pos)
        pos = buf.skip_space(pos + 1)


def _byte(buf: _Buffer, pos: int) -> bytes:
    at = pos - buf.base
    return buf.data[at:at + 1]


def _end(buf: _Buffer, pos: int, index: int) -> None:
    """After the closing ``]``: only whitespace may follow."""
    rest = buf.skip_space(pos)
    if rest - buf.base < len(buf.data):
        raise SplitError(f"unexpected content after the list at byte {rest}", index, rest)


def _entry(buf: _Buffer, pos: int, index: int) -> Entry:
    """The entry that starts at file offset ``pos``."""
    if _byte(buf, pos) == b"{":
        found = _guessed(buf, pos, index)
        if found is not None:
            return found
    return _exact(buf, pos, index)


def _guessed(buf: _Buffer, pos: int, index: int) -> Entry | None:
    """The entry by its guessed ends (module docstring); None after too many false guesses."""
    tried = 0
    search = pos
    while True:
        data, base = buf.data, buf.base
        m = _GUESS.search(data, search - base)
        if m is None:
            if buf.more(pos):
                continue  # the entry goes on past this buffer: read on, search from the same place
            end = data.rstrip(_SPACE)
            if not end.endswith(b"]"):
                return None
            last = end[:-1].rstrip(_SPACE)
            if not last.endswith(b"}") or base + len(last) <= search:
                return None
            ends = base + len(last)
        else:
            ends = base + m.start() + 1
        raw = memoryview(buf.data)[pos - buf.base:ends - buf.base]
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            tried += 1
            if m is None or tried >= MAX_GUESSES:
                return None
            search = ends
            continue
        return Entry(index, pos, ends, value, raw)


def _exact(buf: _Buffer, pos: int, index: int) -> Entry:
    """The entry found by parsing on from its start: orjson says where the value ends. A lone
    surrogate escape (``\\ud800`` without its pair) is read as U+FFFD, as a whole read reads it."""
    surrogates = 0
    while True:
        window = memoryview(buf.data)[pos - buf.base:]
        try:
            value = orjson.loads(window)
        except orjson.JSONDecodeError as exc:
            if exc.msg == "unexpected content after document":
                cut = bytes(window[:_byte_offset(window, exc.pos)]).rstrip(_SPACE)
                return Entry(index, pos, pos + len(cut), orjson.loads(cut), cut, surrogates)
            if "surrogate" in exc.msg and (found := buf.replace_surrogates(pos)):
                surrogates += found
                continue
            if buf.more(pos):
                continue
            raise SplitError(f"entry {index} (from byte {pos}) is not valid JSON: {exc.msg} "
                             f"(at character {exc.pos} of the entry)", index, pos) from None
        if not buf.more(pos):  # the value ends the file (a number may go on in the next block)
            return Entry(index, pos, buf.base + len(buf.data), value, window, surrogates)


def _byte_offset(window: memoryview, chars: int) -> int:
    """The byte offset of character ``chars`` of UTF-8 bytes (orjson counts characters)."""
    return len(bytes(window).decode("utf-8", errors="replace")[:chars].encode("utf-8"))
