"""Sessions waiting for their batch, and a batch assembled as one table (no I/O).

Every session comes here: a grammar that appends turns to a column builder (``parsers.turncols.
TurnColumns``: ChatGPT, Claude) gives it as is; any other's turn records, and the frame of lines a line
grammar reads a large input as, are held as the batch takes them once counted and accounted
(``prepare``, ``prepare_read``). The sessions of a batch (a shard's small inputs together, a whole
read's sessions about ``BATCH_TURNS`` turns at a time, or a streamed batch of conversations) are
normalised, redacted, checked and encoded as one table (``normalizers.table``), and each gets its
envelope (``assemble_pending``). The callers (flows/core/process.py, flows/core/jsonstream.py) judge each session
in order. A batch the column route fails on has its sessions quarantined with the failure: no other
route assembles them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import polars as pl

from models.records import ParsedSession
from normalizers.assemble import RunContext, envelope
from normalizers.table import assemble_batch
from parsers.turncols import TurnColumns, batch_frame
from validators import gate
from validators.accounting import Accounting, account_records

TABLE_BYTES = 4 * 1024 * 1024
"""Bytes of input a batch holds unread before it reads them, a table of lines per grammar."""
BATCH_TURNS = 2048
"""Turns per batch of a whole read (a streamed batch of ``stream_chunk_bytes``, 2 MiB, of a ChatGPT
export holds about 2,400): polars' per-call cost shared by a hundred conversations or so."""


def columnar(parsed: ParsedSession) -> bool:
    """Whether a parsed session's turns are columns the batch can take."""
    return isinstance(parsed.turns, pl.DataFrame) or (isinstance(parsed.turns, TurnColumns) and parsed.turns.appended)


@dataclass(slots=True)
class Pending:
    """A session counted and accounted, waiting for its batch."""

    parsed: ParsedSession
    counted: int
    accounting: Accounting
    seconds: float


def prepare_read(parsed: ParsedSession, grammar, accounting: Accounting) -> Pending:
    """Count one session whose grammar built turn records or read a frame of lines (accounted by the
    caller), then hold its turns as the batch takes them (a builder, or the frame) and drop its raw value."""
    started = time.perf_counter()
    counted = grammar.count_turns(parsed.raw)
    parsed.raw = None
    if parsed.frame is not None:
        parsed.turns, parsed.frame = parsed.frame, None
    else:
        parsed.turns = TurnColumns.of(parsed.turns)
    return Pending(parsed, counted, accounting, time.perf_counter() - started)


def prepare(parsed: ParsedSession, grammar) -> Pending:
    """Count and account one session (``process._judge``'s first steps; a JSON session's accounting,
    ``accounting.account``, with the turns' pointers from its columns), then drop its raw value."""
    started = time.perf_counter()
    counted = grammar.count_turns(parsed.raw)
    pointers = parsed.turns.pointers
    accounting = account_records(parsed.raw, parsed.pointer or "", pointers, (r.pointer for r in parsed.regions))
    parsed.raw = None
    return Pending(parsed, counted, accounting, time.perf_counter() - started)


@dataclass(slots=True)
class Assembled:
    """A session of a batch before the gate: its envelope (no interactions in it), its interactions'
    bytes and the gate's checks of their columns."""

    doc: dict[str, Any]
    count: int
    characters: int
    body: bytes
    frames: gate.FrameCheck
    rows: Any
    seconds: float


def assemble_pending(pending: list[tuple[Pending, Any]], ctx: RunContext, rows: bool = True) -> list[Assembled]:
    """The batch's sessions, each with its input (``process.Owner``: grammar, source, detection),
    assembled as one table (``rows``: keep each one's turns table rows)."""
    started = time.perf_counter()
    builders = [p.parsed.turns for p, _ in pending]
    sizes = [len(b) for b in builders]
    batch = assemble_batch(batch_frame(builders), sizes, ctx, rows)
    checks = gate.FrameCheck.batch(batch.interactions, sizes, [s.checked for s in batch.sessions])
    out = []
    share = (time.perf_counter() - started) / max(len(pending), 1)
    for (p, owner), part, frames in zip(pending, batch.sessions, checks, strict=True):
        doc = envelope(p.parsed, p.counted, part.summary, [], source=owner.source, detection=owner.detection,
                       grammar_version=owner.grammar.version, ctx=ctx, accounting=p.accounting.as_dict(),
                       unaccounted=p.accounting.reason())
        out.append(Assembled(doc, part.summary.count, part.characters, part.body, frames, part.rows,
                             p.seconds + share))
    return out
