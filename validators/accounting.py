"""Source accounting: every part of a session's source lies in an interaction or a declared region.

A grammar cannot certify its own completeness (DESIGN section 2, gate check 3), so this module
knows nothing of any format:

- text sources are checked line by line: every non-blank line of the session's extent lies in
  exactly one interaction's span or in one declared region;
- JSON sources are checked record by record: a generic walker finds every message-like object
  (one with an author or role, a time, or a content field, in two of those three) and each must lie
  in an interaction's pointer or a declared region's pointer (one containing the other).

Anything else is listed (first ranges or pointers) and makes the session partial with
``unaccounted_source``.

Beside it, for a line grammar with a ``turn_shape``, an independent census of turn-start-shaped lines
(the shape matched on every line of the session, with no fence, quote or state logic): every such line
is a turn start, lies in a declared region, or is declared text of its turn with a reason
(``ParsedSession.shaped``). Any other makes the session partial with ``possible_merged_turns``: a
grammar that swallowed a header into the turn before it cannot say the session is complete.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import polars as pl
import regex

from models.messages import CONTENT_KEYS, TURN_TEXT_KEYS, is_message_like
from models.records import ParsedSession, SourceText
from parsers.columns import nonblank
from validators.frames import FrameSession, FrameText, account_frames
from validators.lines import MAX_LISTED, Accounting, LineIndex, account_lines, shaped_lines, undeclared_shapes

__all__ = ["MAX_LISTED", "Accountant", "Accounting", "BlankIndex", "LineIndex", "account", "account_lines",
           "account_records", "account_spans", "message_records", "shaped_lines", "undeclared_shapes"]


def _is_sparse_list(node: dict) -> bool:
    """An object keyed by line or list indexes only (``{"3": ..., "7": ...}``): a session's view of
    the records of a JSON Lines file, walked like a list."""
    first = next(iter(node), None)  # mostly settles it, without a generator: this runs for every object walked
    if not (isinstance(first, str) and first.isdigit()):
        return False
    return all(isinstance(k, str) and k.isdigit() for k in node)


def escape(part: str) -> str:
    """One JSON pointer reference token (RFC 6901)."""
    if "~" not in part and "/" not in part:
        return part
    return part.replace("~", "~0").replace("/", "~1")


def message_records(node: Any, pointer: str = "") -> Iterator[str]:
    """Pointers of the outermost message-like objects under ``node``, in document order. A string or
    null standing in a list beside message-like objects is a record too (a damaged or elided message).
    In a JSON Lines view (``{"3": ..., "7": ...}``) every line that holds something is a record, as
    every non-blank line of a text source is: a line is the source's own unit."""
    return (at for at, _ in _records(node, pointer))


def _records(node: Any, pointer: str) -> Iterator[tuple[str, Any]]:
    """``message_records`` with each record's value."""
    if isinstance(node, dict) and _is_sparse_list(node):
        yield from ((f"{pointer}/{k}", v) for k, v in sorted(node.items(), key=lambda kv: int(kv[0])) if v is not None)
        return
    stack: list[tuple[Any, str]] = [(node, pointer)]
    while stack:
        value, at = stack.pop()
        if value is None or isinstance(value, str):  # a bare entry in a list of messages
            if at != pointer:
                yield at, value
            continue
        if isinstance(value, dict) and not _is_sparse_list(value):
            if is_message_like(value):
                yield at, value
                continue
            children = [(v, f"{at}/{escape(str(k))}") for k, v in value.items() if isinstance(v, (dict, list))]
        elif isinstance(value, (list, dict)):
            items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
            bare = any(isinstance(v, dict) and is_message_like(v) for _, v in items)  # beside messages only
            children = [(v, f"{at}/{i}") for i, v in items
                        if isinstance(v, (dict, list)) or (bare and (v is None or isinstance(v, str)))]
        else:
            continue
        stack.extend(reversed(children))


def _within(pointer: str, owners: set[str], ancestors: set[str]) -> bool:
    """True when ``pointer`` equals an owner, lies inside one, or contains one."""
    if pointer in owners or pointer in ancestors:
        return True
    cut = pointer.rfind("/")
    while cut > 0:
        pointer = pointer[:cut]
        if pointer in owners:
            return True
        cut = pointer.rfind("/")
    return "" in owners


def _ancestors(pointers: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for p in pointers:
        cut = p.rfind("/")
        while cut > 0:
            p = p[:cut]
            if p in out:
                break
            out.add(p)
            cut = p.rfind("/")
    return out


def account_records(raw: Any, base: str, turns: Iterable[str], regions: Iterable[str]) -> Accounting:
    """Check every message-like record under ``raw`` (found at pointer ``base``)."""
    out = Accounting("records")
    turn_set = {p for p in turns if p is not None}
    region_set = {p for p in regions if p is not None}
    turn_up, region_up = _ancestors(turn_set), _ancestors(region_set)
    owners, owners_up = turn_set | region_set, turn_up | region_up
    ordered = sorted(owners)
    for pointer, node in _records(raw, base):
        out.checked += 1
        if _within(pointer, turn_set, turn_up):
            out.in_turns += 1
        elif _within(pointer, region_set, region_up):
            out.declared += 1
        else:
            out.unaccounted += 1
            out.note(pointer)
            continue
        parts = _parts(raw, base, pointer, ordered)  # one interaction per block: every block owned
        if parts:
            lost = [part for part in parts if not _within(part, owners, owners_up)]
        elif _within(pointer, turn_set, turn_up):  # a reply nested in a record is a turn of its own
            nested = _nested_messages(node, pointer)
            lost = [part for part in nested if not _owned_below(part, pointer, owners, owners_up)]
        else:
            lost = []
        out.checked += len(lost)
        out.unaccounted += len(lost)
        for part in lost:
            out.note(part)
    return out


def _owned_below(pointer: str, record: str, owners: set[str], owners_up: set[str]) -> bool:
    """True when ``pointer`` is owned by itself, holds an owner, or lies in an owner inside ``record``
    (the record's own owner does not count)."""
    if pointer in owners or pointer in owners_up:
        return True
    cut = pointer.rfind("/")
    while cut > len(record):
        pointer = pointer[:cut]
        if pointer in owners:
            return True
        cut = pointer.rfind("/")
    return False


def _nested_messages(node: Any, record: str) -> list[str]:
    """The messages nested in a record's lists beside its content (a thread's ``replies`` in Teams or a
    Mattermost bulk export), each with text of its own: every one is a turn, so the turn of the record
    that holds them does not account for them. References without text (Slack's ``replies`` of user
    and ts) are not messages."""
    if not isinstance(node, dict):
        return []
    return [f"{record}/{escape(k)}/{i}" for k, v in node.items() if k not in CONTENT_KEYS and isinstance(v, list)
            for i, x in enumerate(v) if isinstance(x, dict) and is_message_like(x)
            and any(f in CONTENT_KEYS and not _blank(c) for f, c in x.items())]


def _parts(raw: Any, base: str, record: str, owners: list[str]) -> list[str]:
    """When interactions or regions point inside a record (one per content block), the pointers of
    the non-blank elements of every list on the way to them: each of those must be owned as well
    (``owners``: sorted, so the pointers below the record are found by bisection)."""
    inner = owners[bisect_left(owners, record + "/"):bisect_left(owners, record + "0")]  # "0" follows "/"
    if not inner:
        return []
    lists: dict[str, list] = {}
    for pointer in inner:
        node, at = _resolve(raw, base, record), record
        for token in pointer[len(record) + 1:].split("/"):
            if isinstance(node, list):
                lists[at] = node
                node = node[int(token)] if token.isdigit() and int(token) < len(node) else None
            elif isinstance(node, dict):
                node = node.get(token.replace("~1", "/").replace("~0", "~"))
            else:
                break
            at = f"{at}/{token}"
    listed = [f"{at}/{i}" for at, items in sorted(lists.items()) for i, item in enumerate(items) if not _blank(item)]
    return list(dict.fromkeys(listed + _content_fields(_resolve(raw, base, record), record)))  # each part once


def _content_fields(node: Any, record: str) -> list[str]:
    """The record's own non-blank content fields (``message``, ``response``...) and the objects of its
    lists: a record read as several interactions (a request and its reply, a reply and its tool
    calls) must not lose one of them while another is kept."""
    if not isinstance(node, dict):
        return []
    fields = [f"{record}/{escape(k)}" for k, v in node.items() if k in TURN_TEXT_KEYS and not _blank(v)]
    # a list of objects beside them (an entry's tool calls) is read one interaction per object too
    fields += [f"{record}/{escape(k)}/{i}" for k, v in node.items() if k not in CONTENT_KEYS and isinstance(v, list)
               and v and all(isinstance(x, dict) for x in v) for i, x in enumerate(v) if not _blank(x)]
    return fields


def _resolve(raw: Any, base: str, pointer: str) -> Any:
    node = raw
    for token in pointer[len(base):].split("/")[1:]:
        if isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        elif isinstance(node, dict):
            node = node.get(token.replace("~1", "/").replace("~0", "~"))
        else:
            return None
    return node


def _blank(item: Any) -> bool:
    """True when an element holds no text at all (an empty block), whatever its type markers."""
    if isinstance(item, str):
        return not item.strip()
    if isinstance(item, dict):
        return all(_blank(v) for k, v in item.items() if k != "type")
    if isinstance(item, list):
        return all(_blank(v) for v in item)
    return item is None or isinstance(item, bool)


def session_extent(session: ParsedSession) -> tuple[int, int] | None:
    """A text session's line span: its own, else the hull of its turns and regions."""
    if session.lines:
        return session.lines
    spans = [t.lines for t in session.turns if t.lines] + [r.lines for r in session.regions if r.lines]
    if not spans:
        return None
    return min(a for a, _ in spans), max(b for _, b in spans)


def part_extent(session: ParsedSession, part: str | None) -> tuple[int, int] | None:
    """A text session's line span in one part of its source (None: the source is one file): its own
    span, else the hull of its turns and regions there."""
    if part is None:
        return session_extent(session)
    spans = ([t.lines for t in session.turns if t.lines and t.part == part]
             + [r.lines for r in session.regions if r.lines and r.part == part])
    if not spans:
        return None
    return min(a for a, _ in spans), max(b for _, b in spans)


def is_text_session(session: ParsedSession) -> bool:
    """Text sessions locate turns by lines, JSON sessions by pointers."""
    if session.lines:
        return True
    located = any(t.lines for t in session.turns) or any(r.lines for r in session.regions)
    return located and not any(t.pointer for t in session.turns)


def account(session: ParsedSession, index: LineIndex | None, extent: tuple[int, int] | None = None) -> Accounting:
    """The accounting of one session. ``extent`` widens a text session's span to the lines between
    it and its neighbours (the caller knows them); JSON sessions are walked from ``session.raw``."""
    if is_text_session(session):
        span = extent or session_extent(session)
        if index is None or span is None:
            return Accounting("lines")
        return account_lines(index, span, (t.lines for t in session.turns if t.lines),
                             (r.lines for r in session.regions if r.lines))
    return account_records(session.raw, session.pointer or "", (t.pointer for t in session.turns),
                           (r.pointer for r in session.regions))


class Accountant:
    """Source accounting across the sessions of one input, in source order.

    A text session is accountable for the lines from the end of the previous session to its own
    end, and the last one to the end of the file, so nothing between or after sessions escapes.
    A conversation over several text files (``SourceText.parts``) is accounted part by part the
    same way: each turn and region counts in the part it names, and every non-blank line of every
    readable part must be in one of them. JSON sessions are walked from their raw value."""

    def __init__(self, texts: Sequence[tuple[str | None, str]], lines: bool = False,
                 shape: str | None = None) -> None:
        self.texts = list(texts)  # (part name, or None for a single file; canonical text)
        self.lines = lines  # a line-oriented format: every session is checked line by line, even one with no spans
        self.shape = regex.compile(shape, regex.MULTILINE) if shape else None  # the grammar's turn_shape
        self.indexes: dict[str | None, LineIndex] = {}
        self.frames: FrameText | None = None  # a single text read by the batches of its frame sessions
        self.done: dict[str | None, int] = {}  # per part, the last line an earlier session accounted for

    @classmethod
    def of(cls, source: SourceText, lines: bool = False, shape: str | None = None) -> Accountant:
        if source.parts:
            return cls([(part_name(p.name), p.text) for p in source.parts if p.text], lines, shape)
        return cls([(None, source.text)], lines, shape)

    def account(self, parsed: ParsedSession, last: bool) -> Accounting:
        if not (self.lines or is_text_session(parsed)):
            return account(parsed, None)
        deferred = self.defer(parsed, last)
        if deferred is not None:
            return account_frames([deferred])[0]
        out = Accounting("lines")
        for part, text in self.texts:
            extent = self._extent(parsed, part, text, last)
            if extent is None:
                continue
            turns = [t.lines for t in parsed.turns if t.lines and t.part == part]
            regions = [r.lines for r in parsed.regions if r.lines and r.part == part]
            found = account_lines(self.indexes[part], extent, turns, regions)
            self._census(found, parsed, part, extent, lambda turns=turns: {a for a, _ in turns}, regions)
            out.absorb(found, part)
        return out

    def _census(self, out: Accounting, parsed: ParsedSession, part: str | None, extent: tuple[int, int],
                starts: Callable[[], set[int]], regions: list[tuple[int, int]]) -> None:
        """Reconcile the census of turn-start-shaped lines with the turns and declarations."""
        if self.shape is None:
            return
        found = shaped_lines(self._index(part, dict(self.texts)[part]), extent, self.shape)
        if not found:
            return
        declared = {s.line for s in parsed.shaped if s.part == part}
        out.note_merged(f"line {n}" for n in undeclared_shapes(found, starts(), regions, declared))

    def defer(self, parsed: ParsedSession, last: bool) -> FrameSession | None:
        """A session whose turns are a frame, with its extent (the sessions of a text are taken in
        order), for the batch to account with others (``frames.account_frames``); None for any other
        session, which ``account`` answers at once."""
        if parsed.frame is None or len(self.texts) != 1 or not (self.lines or is_text_session(parsed)):
            return None
        part, text = self.texts[0]
        if self.frames is None:
            self.frames = FrameText(text, self.shape)
        extent = self._span(parsed, part, self.frames.count, last) or (1, 0)
        return FrameSession(self.frames, extent, parsed.frame["line_start"], parsed.frame["line_end"],
                            [r.lines for r in parsed.regions if r.lines],
                            {s.line for s in parsed.shaped if s.part == part})

    def _index(self, part: str | None, text: str) -> LineIndex:
        index = self.indexes.get(part)
        if index is None:
            index = self.indexes[part] = LineIndex(text)
        return index

    def _extent(self, parsed: ParsedSession, part: str | None, text: str, last: bool) -> tuple[int, int] | None:
        return self._span(parsed, part, self._index(part, text).count, last)

    def _span(self, parsed: ParsedSession, part: str | None, count: int, last: bool) -> tuple[int, int] | None:
        done = self.done.get(part, 0)
        own = part_extent(parsed, part)
        if own is None:
            if not last:
                return None  # nothing of this session is in this part: a later session answers for it
            own = (done + 1, done)
        end = count if last else own[1]
        extent = (min(done + 1, own[0]), max(end, own[1]))
        self.done[part] = max(done, extent[1])
        return extent


def part_name(name: str) -> str:
    """The name a turn or region gives its part by: the part's file name without its folder."""
    return name.rpartition("/")[2]


class BlankIndex:
    """Cumulative counts of non-blank lines of one text (or one chunk of it), for accounting turn
    spans as columns: ``prefix[k]`` is how many of lines ``first..first+k-1`` are not blank."""

    __slots__ = ("count", "first", "prefix")

    def __init__(self, lines: pl.Series, first: int = 1) -> None:
        self.first = first
        self.count = len(lines)
        self.prefix = pl.concat([pl.Series([0], dtype=pl.Int64), nonblank(lines).cast(pl.Int64).cum_sum()])

    def upto(self, line: pl.Expr) -> pl.Expr:
        """Non-blank lines from this index's first line up to ``line`` (inclusive)."""
        return pl.lit(self.prefix).gather((line - self.first + 1).clip(0, self.count))


def account_spans(index: BlankIndex, extent: tuple[int, int], starts: pl.Series, ends: pl.Series,
                  regions: Iterable[tuple[int, int]]) -> Accounting | None:
    """``account_lines`` over turn spans given as columns, for lines the index holds. Returns None
    when some line is unaccounted or doubled: the caller then lists them with ``account_lines``."""
    first, last = extent
    region_list = list(regions)
    schema = {"a": pl.Int64, "b": pl.Int64, "turn": pl.Boolean}
    spans = pl.concat([
        pl.DataFrame({"a": starts, "b": ends, "turn": pl.Series([True] * len(starts), dtype=pl.Boolean)},
                     schema=schema),
        pl.DataFrame({"a": [a for a, _ in region_list], "b": [b for _, b in region_list],
                      "turn": [False] * len(region_list)}, schema=schema),
    ]).sort("a", "b", "turn")
    c = pl.col
    clipped = spans.select(c("a").clip(lower_bound=first).alias("a"), c("b").clip(upper_bound=last).alias("b"),
                           c("turn")).filter(c("a") <= c("b"))
    covered = pl.max_horizontal(c("b").cum_max().shift(1).fill_null(first - 1), pl.lit(first - 1))
    sums = clipped.with_columns(cb=covered).select(
        loose=(pl.when(c("a") > c("cb") + 1).then(index.upto(c("a") - 1) - index.upto(c("cb"))).otherwise(0)).sum(),
        doubled=(pl.when(c("a") <= c("cb")).then(index.upto(pl.min_horizontal(c("b"), c("cb")))
                                                 - index.upto(c("a") - 1)).otherwise(0)).sum(),
        fresh=pl.when(c("b") > c("cb"))
        .then(index.upto(c("b")) - index.upto(pl.max_horizontal(c("a"), c("cb") + 1) - 1)).otherwise(0),
        turn=c("turn"), end=c("b").max(),
    )
    end = sums["end"][0] if len(sums) else None
    tail = 0
    covered_to = max(first - 1, end) if end is not None else first - 1
    if covered_to < last:
        tail = int(pl.select(index.upto(pl.lit(last)) - index.upto(pl.lit(covered_to))).item())
    if (len(sums) and (sums["loose"][0] or sums["doubled"][0])) or tail:
        return None
    out = Accounting("lines")
    out.in_turns = int(sums.filter(pl.col("turn"))["fresh"].sum()) if len(sums) else 0
    out.declared = int(sums.filter(~pl.col("turn"))["fresh"].sum()) if len(sums) else 0
    out.checked = out.in_turns + out.declared
    return out
