"""Splitting a large JSON array into its entries' bytes, without building the file's tree.

A large export (``conversations.json``) is a list of conversations; reading it one conversation at
a time keeps memory to one conversation, and knowing where each one lies in the file lets several
processes share the work. A general event parser (ijson) was several times slower than parsing each
entry with orjson, so entries are cut by a guess that orjson then confirms:

- a guess is a ``}`` followed by ``,`` and ``{`` (whitespace allowed between): the end of one object
  and the start of the next, or the last ``}`` before the closing ``]``;
- the bytes from the entry's first byte to a guessed end are parsed with orjson. Starting at the
  entry's real start, only the entry's own closing brace gives valid JSON (any other ``}`` is inside
  a string or leaves a bracket open), so the first guess that parses is the entry, and its value
  is kept: each entry is parsed once;
- an entry that is not an object, or one with many false guesses inside (lists of objects: a
  Hangouts conversation's events), is found by parsing from its start: orjson stops at the first
  byte after the value ("unexpected content after document") and says where. It parses a window
  of the buffer from the entry's start, doubled until the value ends inside it, never the whole
  buffer: orjson checks all of its input before it parses, so a buffer of 8 MiB read for each
  entry cost 2-3 ms an entry (8.5 of 12 CPU seconds of a 100 MB Hangouts export).

The list is the file itself or, in a wrapper object (``{"conversations": [...]}``), the value of its
wrapper key (``locate``): the object's members before the list must lie in the first block and are
read and set aside, as the whole read sets them aside; the members after it are read one by one once
the list ends. An object whose list cannot be located so (the format's own key comes first, the
list is not in the first block, no wrapper key holds a list) is ``NotStreamable``, said before any
entry is read. A member after the list that would change what the whole read takes as the
conversations (the format's own key, a wrapper key again) stops the split with ``ShapeError``.

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

from models.errors import NotStreamable, ParseError, Reason
from parsers.base import ConversationList
from parsers.jsonload import pointer_part, replace_lone_surrogates

BLOCK = 8 * 1024 * 1024
"""Bytes read at a time; an entry larger than this grows the buffer."""
MAX_GUESSES = 8
"""False guesses inside one entry before it is found by the exact route."""
WINDOW = 256 * 1024
"""The first window the exact route parses an entry in (module docstring); doubled until it holds the entry."""
_GUESS = regex.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")
_SPACE = b" \t\r\n"
_KEY = regex.compile(rb'("(?:[^"\\]|\\.)*")[ \t\r\n]*:')


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
        return self.detail  # quoted whole inside the input's quarantine detail (``loss``)

    def loss(self, size: int, pointer: str = "") -> str:
        """What the break cost: the conversation it is in and every byte from its start (``pointer``: the
        list's)."""
        return (f"the file stops being valid JSON in conversation #{self.index + 1} ({pointer}/{self.index}, from byte "
                f"{self.start}): {self}; that conversation and everything after it ({size - self.start} of "
                f"{size} bytes) were not read, the {self.index} before it were")


class ShapeError(SplitError):
    """A wrapper object's member after its list makes the whole read take other conversations than the
    list's (module docstring): the list's entries were read, the member's meaning was not followed."""

    def __init__(self, message: str, index: int, start: int) -> None:
        super().__init__(message, index, start)
        self.reason = Reason.NOT_STREAMABLE

    def loss(self, size: int, pointer: str = "") -> str:
        return (f"{self} (byte {self.start}): the {self.index} conversations of the list were read, "
                "as they are written; read whole the export would not be taken as that list")


@dataclass(frozen=True, slots=True)
class ListAt:
    """Where the list of conversations lies: the file offset just after its ``[``, and, in a wrapper object,
    the wrapper key it is the value of (None for a top-level list)."""

    start: int
    key: str | None = None

    @property
    def pointer(self) -> str:
        """The list's JSON pointer: an entry's is this followed by ``/<index>``."""
        return "" if self.key is None else f"/{pointer_part(self.key)}"


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


def locate(fp: BinaryIO, shape: ConversationList, block: int = BLOCK) -> ListAt:
    """Where the list of conversations lies in the file, decided from its first ``block`` bytes (module
    docstring); ``NotStreamable`` saying why when it cannot be located so."""
    head = fp.read(min(4096, block))
    pos = _skip(head, 3 if head.startswith(b"\xef\xbb\xbf") else 0)
    first = head[pos:pos + 1]
    if first == b"[" and shape.top_list:
        fp.seek(0)
        return ListAt(pos + 1)
    if first == b"[":
        raise NotStreamable(Reason.NOT_STREAMABLE, "the file is a list, and the format keeps its conversations "
                            "in a wrapper object only")
    if first != b"{":
        raise NotStreamable(Reason.NOT_STREAMABLE, "the file is not a JSON list or object")
    if not shape.wrappers:
        raise NotStreamable(Reason.NOT_STREAMABLE, "the file is an object: the format has no wrapper object, "
                            "so it is one conversation")
    head = _whole_characters(head + fp.read(block - len(head)))
    fp.seek(0)
    seen: set[str] = set()
    for key, at in _members(head, pos + 1, block):
        if key == shape.own_key:
            raise NotStreamable(Reason.NOT_STREAMABLE, f"the object has the key {key!r}: it is one conversation")
        if key in shape.wrappers and head[at:at + 1] == b"[":
            if key in seen or not seen.issuperset(shape.wrappers[:shape.wrappers.index(key)]):
                raise NotStreamable(Reason.NOT_STREAMABLE, f"a member after the list under {key!r} may hold the "
                                    "list the whole read takes (a key seen twice, or an earlier wrapper key not yet)")
            return ListAt(at + 1, key)
        seen.add(key)
    under = " or ".join(map(repr, shape.wrappers))
    if _value_end(head, pos) is not None or (head[pos:].rstrip(_SPACE).endswith(b"}") and len(head) < block):
        raise NotStreamable(Reason.NOT_STREAMABLE, f"the object holds no list under {under}: it is one conversation")
    raise NotStreamable(Reason.NOT_STREAMABLE, f"no list under {under} starts in the object's first {block} bytes")


def _whole_characters(head: bytes) -> bytes:
    """``head`` without the UTF-8 character its end cuts (orjson refuses the whole input for it)."""
    for back in range(1, min(4, len(head)) + 1):
        byte = head[-back]
        if byte < 0x80:
            return head
        if byte >= 0xC0:  # the lead byte of the last character: 2, 3 or 4 bytes long
            size = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return head if back >= size else head[:-back]
    return head


def _members(head: bytes, pos: int, block: int) -> Iterator[tuple[str, int]]:
    """(key, offset of its value) of an object's members from ``pos`` (after its ``{``), each value before
    the next member read whole; ends at the object's end or where ``head`` does not tell."""
    pos = _skip(head, pos)
    while (m := _KEY.match(head, pos)) is not None:
        at = _skip(head, m.end())
        key = orjson.loads(m.group(1))
        yield key, at
        end = _value_end(head, at)
        if end is None:
            return
        pos = _skip(head, end)
        if head[pos:pos + 1] != b",":
            return
        pos = _skip(head, pos + 1)


def _value_end(head: bytes, at: int) -> int | None:
    """The offset just after the JSON value at ``at``, or None when it does not end inside ``head``."""
    window = memoryview(head)[at:]
    try:
        orjson.loads(window)
    except orjson.JSONDecodeError as exc:
        if exc.msg == "unexpected content after document":
            return at + len(bytes(window[:_byte_offset(window, exc.pos)]).rstrip(_SPACE))
    return None


def _skip(data: bytes, pos: int) -> int:
    while data[pos:pos + 1] and data[pos] in _SPACE:
        pos += 1
    return pos


def entries(fp: BinaryIO, block: int = BLOCK, at: ListAt | None = None,
            shape: ConversationList | None = None) -> Iterator[Entry]:
    """The entries of the JSON array ``at`` (the file's own list by default; ``shape`` tells a wrapper's
    members after its list), in order."""
    if at is None:
        head = fp.read(4096)
        fp.seek(0)
        pos = _skip(head, 3 if head.startswith(b"\xef\xbb\xbf") else 0)
        if head[pos:pos + 1] != b"[":
            raise SplitError("not a JSON list", 0, 0)
        at = ListAt(pos + 1)
    buf = _Buffer(fp, block, at.start)
    pos = buf.skip_space(at.start)
    index = 0
    if _byte(buf, pos) == b"]":
        _after(buf, pos + 1, index, at, shape)
        return
    while True:
        entry = _entry(buf, pos, index)
        yield entry
        index += 1
        pos = buf.skip_space(entry.end)
        mark = _byte(buf, pos)
        if mark == b"]":
            _after(buf, pos + 1, index, at, shape)
            return
        if mark != b",":
            raise SplitError(f"expected ',' or ']' after entry {index - 1} at byte {pos}", index, pos)
        pos = buf.skip_space(pos + 1)


def _after(buf: _Buffer, pos: int, index: int, at: ListAt, shape: ConversationList | None) -> None:
    """After the list's ``]``: the end of the file, or of the wrapper object and its members after the list."""
    if at.key is not None:
        pos = _tail(buf, buf.skip_space(pos), index, shape)
    _end(buf, pos, index)


def _tail(buf: _Buffer, pos: int, index: int, shape: ConversationList | None) -> int:
    """The wrapper's members after its list, read one by one and set aside as the whole read sets them
    aside; the offset after its ``}``."""
    telling = (shape.own_key, *shape.wrappers) if shape is not None else ()
    while _byte(buf, pos) == b",":
        start = buf.skip_space(pos + 1)
        key = _exact(buf, start, index)
        colon = buf.skip_space(key.end)
        if _byte(buf, colon) != b":" or not isinstance(key.value, str):
            raise SplitError(f"expected a member of the wrapper object after its list at byte {start}", index, start)
        if key.value in telling:
            raise ShapeError(f"the wrapper object has the key {key.value!r} after its list", index, start)
        pos = buf.skip_space(_exact(buf, buf.skip_space(colon + 1), index).end)
    if _byte(buf, pos) != b"}":
        raise SplitError(f"expected the end of the wrapper object after its list at byte {pos}", index, pos)
    return pos + 1


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
    """The entry found by parsing on from its start, in a window that grows until the value ends in it:
    orjson says where it ends. Only that is decided in a window; everything else (a value that parses to
    the window's end, an error) is decided on the whole buffer. A lone surrogate escape (``\\ud800``
    without its pair) is read as U+FFFD, as a whole read reads it."""
    surrogates, size = 0, WINDOW
    while True:
        rest = memoryview(buf.data)[pos - buf.base:]
        whole = size >= len(rest)
        window = rest if whole else rest[:_boundary(rest, size)]
        try:
            value = orjson.loads(window)
        except orjson.JSONDecodeError as exc:
            if exc.msg == "unexpected content after document":
                cut = bytes(window[:_byte_offset(window, exc.pos)]).rstrip(_SPACE)
                return Entry(index, pos, pos + len(cut), orjson.loads(cut), cut, surrogates)
            if "surrogate" in exc.msg and (found := buf.replace_surrogates(pos)):
                surrogates += found
                continue
            if not whole:
                size *= 2
                continue
            if buf.more(pos):
                continue
            raise SplitError(f"entry {index} (from byte {pos}) is not valid JSON: {exc.msg} "
                             f"(at character {exc.pos} of the entry)", index, pos) from None
        if not whole:  # a value that ends the window may go on past it (a number)
            size *= 2
        elif not buf.more(pos):  # the value ends the file (a number may go on in the next block)
            return Entry(index, pos, buf.base + len(buf.data), value, window, surrogates)


def _boundary(data: memoryview, end: int) -> int:
    """``end`` moved back to the start of the UTF-8 character it falls in (orjson refuses a cut one)."""
    while end > 0 and data[end] & 0xC0 == 0x80:
        end -= 1
    return end


def _byte_offset(window: memoryview, chars: int) -> int:
    """The byte offset of character ``chars`` of UTF-8 bytes (orjson counts characters)."""
    return len(bytes(window).decode("utf-8", errors="replace")[:chars].encode("utf-8"))
