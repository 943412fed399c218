"""A large text input cut into byte ranges at turn starts, the ranges read in parallel, merged in order.

The pre-pass of a streamed input (flows/core/spool.py) reads the raw bytes in blocks of whole lines
(``raw_blocks``), decodes them and hands each to the grammar's survey; the route notes the turns before
each block. ``cut`` then picks a block every ``stream_range_bytes`` and cuts at its first turn start
(``LineGrammar.starts``): each ``Range`` knows its byte offsets, its first line and its first turn, so
it can be read alone. ``read_range`` reads one range chunk by chunk (the grammar's ``frames`` of a table
of the chunk, the column assembler, the gate's column and byte checks, the source accounting) into its
own spool piece and its own dataset row pieces, and returns what the session needs of it
(``RangePart``); ``merge`` adds the parts in order as one pass over the whole input would have added
them (the speaker table with each speaker's first turn, the redactions, the facts observed in order), so
the document's bytes do not depend on where the input was cut or how many ranges ran at once.

The ranges run on threads of the worker that streams the input: nearly all of a range's time is
spent in polars, which releases the GIL, so two ranges use two cores without a second copy of
the process, without pickling turns, and a worker that dies still takes the whole input with it
(the pool records ``worker_died``).
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl

from models.errors import NotStreamable, Reason
from normalizers.table import ColumnAssembler
from parsers.columns import LineTable, split_lines
from validators import gate
from validators.accounting import Accounting, BlankIndex, account_spans


@dataclass(frozen=True, slots=True)
class Range:
    """Bytes ``start..end`` of the input (``end`` None: to its end), from line ``line``, turn ``turn`` on."""

    index: int
    start: int
    end: int | None
    line: int
    turn: int


WHOLE = Range(0, 0, None, 1, 0)


def raw_blocks(fp: BinaryIO, size: int, end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of whole lines from where ``fp`` stands to ``end``: cut after an LF, or after
    a CR when a block holds no LF (a CR LF pair is never cut); the last may end without one."""
    offset, pending = fp.tell(), b""
    while True:
        want = size if end is None else min(size, end - offset - len(pending))
        data = fp.read(want) if want > 0 else b""
        buf = pending + data
        if not data:
            if buf:
                yield offset, buf
            return
        cut = buf.rfind(b"\n") + 1 or buf.rfind(b"\r", 0, len(buf) - 1) + 1
        if cut == 0:  # one long line: read on
            pending = buf
            continue
        yield offset, buf[:cut]
        offset, pending = offset + cut, buf[cut:]


def canonical(raw: bytes, first: bool) -> str:
    """A block's text: UTF-8 (a BOM dropped at the start of the input), CR LF and CR as LF."""
    try:
        text = raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        raise NotStreamable(Reason.NOT_STREAMABLE, f"not UTF-8: {exc}") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


@dataclass(slots=True)
class Blocks:
    """The pre-pass's blocks: what ``cut`` needs of each (offset, size, first line)."""

    offsets: list[tuple[int, int, int]] = field(default_factory=list)

    def read(self, fp: BinaryIO, size: int) -> Iterator[tuple[int, bytes, int]]:
        """The input in blocks of whole raw lines ``(offset, bytes, number of its first line)``."""
        line = 1
        for offset, raw in raw_blocks(fp, size):
            self.offsets.append((offset, len(raw), line))
            yield offset, raw, line
            line += raw.count(b"\n") + ((raw.count(b"\r") - raw.count(b"\r\n")) if b"\r" in raw else 0)

    def scans(self, fp: BinaryIO, size: int, scan: Callable[[str, int], Any], workers: int) -> Iterator[Any]:
        """``scan(text, first line)`` of every block, in order, up to ``workers`` blocks at once."""
        return ordered(lambda block: scan(canonical(block[1], block[0] == 0), block[2]), self.read(fp, size), workers)


def ordered(fn: Callable[[Any], Any], items: Iterator[Any], workers: int) -> Iterator[Any]:
    """``fn`` of each item on up to ``workers`` threads, the results in order; a few items ahead at
    most, so memory stays bounded by a few items."""
    if workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scan") as pool:
        window: deque = deque()
        for item in items:
            window.append(pool.submit(fn, item))
            if len(window) > workers:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


def decoded(blocks: Iterator[tuple[int, bytes]], line: int) -> Iterator[tuple[str, int]]:
    for offset, raw in blocks:
        text = canonical(raw, offset == 0)
        yield text, line
        line += text.count("\n")


def line_offset(raw: bytes, k: int) -> int:
    """The byte offset of line ``k`` (0-based) of a block of raw lines."""
    pos = 0
    if b"\r" not in raw:
        for _ in range(k):
            pos = raw.index(b"\n", pos) + 1
        return pos
    for _ in range(k):
        lf, cr = raw.find(b"\n", pos), raw.find(b"\r", pos)
        at_cr = cr != -1 and (lf == -1 or cr < lf)
        pos = (cr + 1 + (raw[cr + 1:cr + 2] == b"\n")) if at_cr else lf + 1
    return pos


def cut(fp: BinaryIO, blocks: Blocks, starts: list[int], starts_turn: Callable[[pl.Series], pl.Series],
        every: int) -> list[Range]:
    """Ranges of about ``every`` bytes, each starting at the first turn start of a block
    (``starts``: the turns before each block, from the blocks' surveys)."""
    found: list[tuple[int, int, int]] = [(0, 1, 0)]
    for b, (offset, size, line) in enumerate(blocks.offsets):
        if b == 0 or offset - found[-1][0] < every:
            continue
        fp.seek(offset)
        raw = fp.read(size)
        heads = starts_turn(split_lines(canonical(raw, False))).arg_true()
        if len(heads):
            k = int(heads[0])
            found.append((offset + line_offset(raw, k), line + k, starts[b]))
    ends = [start for start, _, _ in found[1:]] + [None]
    return [Range(i, start, end, line, turn)
            for i, ((start, line, turn), end) in enumerate(zip(found, ends, strict=True))]


@dataclass(slots=True)
class RangePart:
    """What one range adds to its session (``merge``), and the files it wrote."""

    assembler: ColumnAssembler
    frames: gate.FrameCheck
    check: gate.ByteCheck
    accounting: Accounting
    piece: Path
    rows: list[Path] = field(default_factory=list)
    characters: int = 0
    bad: int = 0
    extras: list[dict] = field(default_factory=list)


@dataclass(slots=True)
class Reading:
    """What every range of one input reads with: the grammar, the input's survey and session, the run's context."""

    open_input: Callable[[], BinaryIO]
    source: Any
    grammar: Any
    survey: Any
    session: Any
    ctx: Any
    spool: Path
    """The input's spool name: range i writes ``<spool>.<i>.lines.tmp`` and its row pieces beside it."""


def read_range(r: Reading, rng: Range) -> RangePart:
    """One range, chunk by chunk: its interactions into its spool piece, its rows into row pieces."""
    part = RangePart(ColumnAssembler.starting_at(r.ctx, rng.turn), gate.FrameCheck(rng.turn), gate.ByteCheck(),
                     Accounting("lines"), r.spool.with_name(f"{r.spool.name}.{rng.index:05d}.lines.tmp"))
    size = r.ctx.settings.stream_chunk_bytes
    with r.open_input() as fp, open(part.piece, "wb") as out:
        fp.seek(rng.start)
        chunks = turn_chunks(decoded(raw_blocks(fp, size, rng.end), rng.line), r.grammar.starts)
        for lines, first_line in chunks:
            _chunk(r, part, lines, first_line, out)
    return part


def _chunk(r: Reading, part: RangePart, lines: pl.Series, first_line: int, out: BinaryIO) -> None:
    """One chunk of a range: assembled, checked, accounted; its interactions appended to ``out``."""
    table = LineTable.of_lines(lines)
    chunk = r.grammar.frames([r.source], table, [r.survey], [[r.session]], [first_line])[0][0]
    part.bad += chunk.bad
    part.extras.extend(chunk.extras)
    assembler = part.assembler
    seen = len(assembler.checked)
    columns = assembler.add(chunk.frame)
    # speakers are checked once per session, where it first meets them (merge)
    part.frames.feed(columns, [c for c in assembler.checked[seen:] if "sourceFields" in c])
    del assembler.checked[seen:]
    regions = [reg.lines for reg in r.session.regions if reg.lines]
    extent = (first_line, first_line + len(lines) - 1)
    found = account_spans(BlankIndex(lines, first_line), extent, chunk.frame["line_start"],
                          chunk.frame["line_end"], regions)
    if found is None:
        raise NotStreamable(Reason.NOT_STREAMABLE, "some lines are in no turn and no declared region")
    merge_accounting(part.accounting, found)
    part.characters += int(columns["content"].str.len_chars().sum() or 0)
    if columns.height:
        rows = r.spool.with_name(f"{part.piece.name[:-len('.lines.tmp')]}.{len(part.rows):06d}.rows.tmp")
        assembler.rows(columns).columns.write_ipc(rows)  # the speakers' fields are the session's (merge)
        part.rows.append(rows)
    part.check.lines(columns["line"])
    # each line and a comma: the document's last comma is left out when the pieces are joined
    columns.select("line").write_csv(out, include_header=False, quote_style="never", line_terminator=",\n")


def turn_chunks(blocks: Iterator[tuple[str, int]], starts_turn: Callable[[pl.Series], pl.Series]
                ) -> Iterator[tuple[pl.Series, int]]:
    """Runs of whole turns: each block's lines up to its last header line, the rest carried on."""
    carry: list[str] = []
    carry_line = 1
    for text, first_line in blocks:
        lines = split_lines(text)
        if carry:
            lines = pl.concat([pl.Series("line", carry, pl.Utf8), lines])
            first_line = carry_line
        heads = starts_turn(lines).arg_true()
        at = int(heads[-1]) if len(heads) else 0
        if at == 0:  # no turn starts after the first line: the chunk goes on
            carry, carry_line = lines.to_list(), first_line
            continue
        yield lines.head(at), first_line
        carry, carry_line = lines.slice(at).to_list(), first_line + at
    if carry:
        yield pl.Series("line", carry, pl.Utf8), carry_line


def merge_accounting(total: Accounting, part: Accounting) -> None:
    total.checked += part.checked
    total.in_turns += part.in_turns
    total.declared += part.declared


def read_all(r: Reading, ranges: list[Range], workers: int) -> list[RangePart]:
    """Every range, up to ``workers`` at once; the parts in order."""
    if workers <= 1 or len(ranges) == 1:
        return [read_range(r, rng) for rng in ranges]
    with ThreadPoolExecutor(max_workers=min(workers, len(ranges)), thread_name_prefix="range") as pool:
        return list(pool.map(lambda rng: read_range(r, rng), ranges))


@dataclass(slots=True)
class Merged:
    """A session's ranges added up, in order."""

    assembler: ColumnAssembler
    frames: gate.FrameCheck = field(default_factory=gate.FrameCheck)
    check: gate.ByteCheck = field(default_factory=gate.ByteCheck)
    accounting: Accounting = field(default_factory=lambda: Accounting("lines"))
    pieces: list[Path] = field(default_factory=list)
    rows: list[list[Path]] = field(default_factory=list)
    """Each range's row pieces."""
    characters: int = 0
    bad: int = 0
    extras: list[dict] = field(default_factory=list)


def merge(parts: list[RangePart], ctx) -> Merged:
    """The parts of a session in order, added up as one pass over the whole input would have."""
    total = Merged(ColumnAssembler(ctx))
    for part in parts:
        for speaker in total.assembler.absorb(part.assembler):
            total.frames.speaker(speaker.at, speaker.entry)
        total.frames.merge(part.frames)
        total.check.merge(part.check)
        merge_accounting(total.accounting, part.accounting)
        total.pieces.append(part.piece)
        total.rows.append(part.rows)
        total.characters += part.characters
        total.bad += part.bad
        total.extras.extend(part.extras)
    return total


def seekable(fp: BinaryIO) -> bool:
    """Whether ranges of this input can be read apart (a plain file; a zip member is read in order)."""
    return isinstance(fp, io.BufferedReader)
