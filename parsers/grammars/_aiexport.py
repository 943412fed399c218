"""Helpers shared by the AI-assistant export grammars (ChatGPT, Claude, JSON Lines).

They agree on a few rules: an entry that is not an object is still one turn (B1), kept verbatim;
a time that cannot be read gives no time and one aggregated warning per session, never one per
message; tool inputs are shown as compact JSON with sorted keys so a render is stable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import orjson
import regex

from models.messages import is_message_like
from models.records import ParsedSession, Turn
from parsers.base import ConversationList
from parsers.sample import shared
from parsers.timeparse import parse_iso


class TimeNotes:
    """Counts the turns of one session whose source time is present but unreadable."""

    __slots__ = ("bad", "first")

    def __init__(self) -> None:
        self.bad = 0
        self.first: tuple[str, str] | None = None

    def note(self, when: datetime | None, raw: str | None, where: str) -> datetime | None:
        if when is None and raw not in (None, ""):
            self.bad += 1
            if self.first is None:
                self.first = (raw, where)
        return when

    def flush(self, session: ParsedSession) -> None:
        if self.bad:
            raw, where = self.first or ("", "")
            session.warnings.append(
                f"{plural(self.bad, 'time')} could not be read (first {raw!r} at {where}): no time set there"
            )


def plural(n: int, word: str, suffix: str = "s") -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}{suffix}"


def read_time(value: Any, *, guess_millis: bool = True) -> tuple[datetime | None, str | None]:
    """(time, raw text) of a source time: epoch seconds (or milliseconds, told by size, when the
    format allows both) or ISO text.

    Epochs are aware UTC; ISO text is aware only when it carries a zone. Booleans and other
    types are not times, but their text is kept so the loss is visible.
    """
    kind = type(value)
    if kind is int or kind is float:  # the common case first: this runs once per message
        seconds = value / 1000 if guess_millis and abs(value) > 1e11 else value
        try:
            return datetime.fromtimestamp(int(seconds), UTC), str(value)
        except (ValueError, OverflowError, OSError):
            return None, str(value)
    if kind is str:
        if len(value) >= 16 and value[10:11] in ("T", " "):
            try:  # the C parser reads strict ISO several times faster than a regex
                when = datetime.fromisoformat(value)
                return (when.replace(microsecond=0) if when.microsecond else when), value
            except ValueError:
                pass
        return (parse_iso(value), value) if value else (None, None)
    if value is None:
        return None, None
    if isinstance(value, bool):
        return None, str(value).lower()
    return None, orjson.dumps(value).decode()


def malformed_turn(value: Any, pointer: str | None = None, lines: tuple[int, int] | None = None) -> Turn:
    """An entry of a message list that is not an object: still one turn (B1), kept verbatim."""
    content = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return Turn("System", "system", content, None, None, None, "notice", lines, pointer,
                {"malformedEntry": True})


def odd_warning(count: int, where: str) -> str:
    if count == 1:
        return f"1 of the {where} entries is not an object: kept verbatim as a System notice"
    return f"{count} of the {where} entries are not objects: kept verbatim as System notices"


def json_text(value: Any) -> str:
    """Compact JSON with sorted keys (tool inputs, unknown content), stable across runs."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()


def compact(fields: dict[str, Any]) -> dict[str, Any] | None:
    """``extra`` without empty values; None when nothing is left (convention 5)."""
    out = {k: v for k, v in fields.items() if v is not None and v != "" and v != [] and v != {}}
    return out or None


# --- detection: the share of a JSON sample's message-like records a grammar explains -------------

_TOKEN = regex.compile(r'"(?:[^"\\]|\\.)*(")?|[{}\[\]]')


def decode_sample(sample: str) -> Any:
    """The JSON value of a sample, or of its longest prefix that ends at a closing bracket, closed.

    A 64 KiB sample of a big export is cut off mid-value; the prefix keeps every record that was
    complete in it. None when the sample is not JSON at all."""
    return read_sample(sample)[0]


def read_sample(sample: str) -> tuple[Any, bool]:
    """(``decode_sample``'s value, True when the sample was cut off and the value closed by hand).

    Read once per ``Sample``: every JSON export grammar reads the same sample during one detection.
    The value is shared, never modified."""
    return shared(sample, "value", lambda: _read(sample))


@lru_cache(maxsize=2)
def _read(sample: str) -> tuple[Any, bool]:
    text = sample.lstrip("\ufeff \t\r\n")
    if not text or text[0] not in "[{":
        return None, False
    try:
        return orjson.loads(text), False
    except orjson.JSONDecodeError:
        pass
    stack: list[str] = []
    cut, closers = 0, ""
    for m in _TOKEN.finditer(text):
        token = m.group()
        if token[0] == '"':
            if m.group(1) is None:
                break  # a string cut off by the sample's end
            continue
        if token in "{[":
            stack.append("}" if token == "{" else "]")
        elif stack and stack[-1] == token:
            stack.pop()
            cut, closers = m.end(), "".join(reversed(stack))
        else:
            return None, False
    if not cut:
        return ([] if text[0] == "[" else {}), True
    try:
        return orjson.loads(text[:cut] + closers), True
    except orjson.JSONDecodeError:
        return None, False


def message_records(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, dict]]:
    """(key path, object) of the outermost message-like objects under ``value``, in document order."""
    stack: list[tuple[Any, tuple]] = [(value, path)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            if is_message_like(node):
                yield at, node
                continue
            items = [(v, (*at, k)) for k, v in node.items() if isinstance(v, (dict, list))]
        elif isinstance(node, list):
            items = [(v, (*at, i)) for i, v in enumerate(node) if isinstance(v, (dict, list))]
        else:
            continue
        stack.extend(reversed(items))


_ANY_SHAPE = ConversationList(own_key="\0")
"""The shapes of an export whatever its format: a list, a wrapper object or one object."""


def explained_share(sample: str, explains: Callable[[tuple, dict], bool],
                    conversation: Callable[[Any], bool]) -> float:
    """The share of a JSON sample's message-like records that ``explains`` accepts.

    A sample with no complete message-like record (exports of empty conversations, or a first
    message longer than the sample) is judged by its conversations instead: the share of the
    complete top-level entries ``conversation`` accepts, 1.0 when the sample ends inside the first
    one (the caller has already seen its format's own key in the sample)."""
    value, cut = read_sample(sample)
    if value is None:
        return 0.0
    total = explained = 0
    for path, record in message_records(value):
        total += 1
        explained += bool(explains(path, record))
    if total:
        return explained / total
    entries = [v for _, v in _ANY_SHAPE.top_level(value)] if isinstance(value, (list, dict)) else []
    if cut:
        entries = entries[:-1]  # the last entry is the one the sample cut short
    if not entries:
        return 1.0 if cut else 0.0
    return sum(1 for e in entries if conversation(e)) / len(entries)


def has_text(value: Any, skip: frozenset[str] = frozenset()) -> bool:
    """True when a non-blank string lies anywhere in ``value`` (dict keys in ``skip`` not looked at)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if node.strip():
                return True
        elif isinstance(node, dict):
            stack.extend(v for k, v in node.items() if k not in skip)
        elif isinstance(node, list):
            stack.extend(node)
    return False


# --- message trees: the current branch of a conversation stored as nodes with parent links -------------


def current_path(parents: dict[str, str | None], current: str | None,
                 time_of: Callable[[str], float | None]) -> tuple[list[str], str | None]:
    """(node ids from the root to the current leaf, the assumption made to find it or None) of a tree given
    as ``{node: parent}`` in document order (Open WebUI's ``history``, Grok's responses).

    ``current`` names the leaf the tool showed last; when it is missing, or has children, the branch
    goes on to the latest leaf (by its own time, then the deeper, then the later in the document).
    Without any parent link the nodes are read in document order. Cycle-safe."""
    order = {k: i for i, k in enumerate(parents)}
    links = {k: p for k, p in parents.items() if p is not None and p in parents and p != k}
    if not links:
        return list(parents), None

    def up(node: str) -> list[str]:
        path, seen = [], set()
        while node is not None and node not in seen:
            seen.add(node)
            path.append(node)
            node = links.get(node)
        return path

    has_child = set(links.values())

    def latest(under: str | None) -> tuple[str | None, int]:
        leaves = [(k, up(k)) for k in parents if k not in has_child]
        leaves = [(k, p) for k, p in leaves if under is None or under in p]
        best = max(leaves, key=lambda kp: (time_of(kp[0]) or float("-inf"), len(kp[1]), order[kp[0]]),
                   default=(None, []))
        return best[0], len(leaves)

    if current in parents and current not in has_child:
        return up(current)[::-1], None
    leaf, count = latest(current if current in parents else None)
    if leaf is None:
        return (up(current)[::-1] if current in parents else []), None
    why = (f"the current node {current!r} is not a leaf" if current in parents else
           "no current node is named" if current in (None, "") else f"the current node {current!r} is not in the tree")
    note = f"{why}: the branch is taken to end at the latest of {count} leaves ({leaf!r})" if count > 1 or \
        current in parents else None
    return up(leaf)[::-1], note


def record_role(record: dict[str, Any], roles: dict[str, str], drift, pointer: str) -> tuple[str, str]:
    """(the role as the record writes it, the contract's role) of a message record with a ``role``
    field; a role the format does not know is ``other`` and noted as format drift."""
    raw = record.get("role") if isinstance(record.get("role"), str) else "unknown"
    role = roles.get(raw, "other")
    if role == "other":
        drift.note("role", raw, pointer)
    return raw, role
