"""JSON sessions whose turns are column builders, assembled a batch at a time (no I/O).

A grammar with ``Grammar.appends`` gives each session's turns as a ``parsers.turncols.TurnColumns``
when its input is read column-wise (``uses_columns``: ``columnar`` on, the input or the streamed batch
at least ``columnar_min_bytes``, as for line inputs). Each session is counted and accounted as it comes
(``prepare``), then the sessions of a batch (a streamed batch of conversations, or about
``BATCH_TURNS`` turns of a whole read) are normalised, redacted, checked and encoded as one table
(``normalizers.jsoncols``), and each gets its envelope (``assemble_batch``). The callers
(flows/process.py, flows/jsonstream.py) judge each session as the record route does, in order. A
session its builder could not hold as columns, or a batch the column route fails on, takes the
record route: the documents are the same bytes either way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from models.records import Detection, ParsedSession, SourceText
from models.settings import Settings
from normalizers.assemble import RunContext, envelope
from normalizers.jsoncols import assemble_batch
from parsers.turncols import TurnColumns, batch_frame
from validators import gate
from validators.accounting import Accounting, account_records

BATCH_TURNS = 2048
"""Turns per batch of a whole read (a streamed batch of ``stream_chunk_bytes``, 2 MiB, of a ChatGPT
export holds about 2,400): polars' per-call cost shared by a hundred conversations or so."""


def uses_columns(grammar, settings: Settings, size: int) -> bool:
    """Whether sessions of ``size`` bytes of input (a file, or a streamed batch) are read column-wise."""
    return grammar.appends and settings.columnar and size >= settings.columnar_min_bytes


def columnar(parsed: ParsedSession) -> bool:
    """Whether a parsed session's turns are columns the batch can take."""
    return isinstance(parsed.turns, TurnColumns) and parsed.turns.appended


@dataclass(slots=True)
class Pending:
    """A session counted and accounted, waiting for its batch."""

    parsed: ParsedSession
    counted: int
    accounting: Accounting
    seconds: float


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


def assemble_pending(pending: list[Pending], source: SourceText, detection: Detection, grammar, ctx: RunContext,
                     rows: bool = True) -> list[Assembled]:
    """The batch's sessions assembled as one table (``rows``: keep each one's turns table rows)."""
    started = time.perf_counter()
    builders = [p.parsed.turns for p in pending]
    sizes = [len(b) for b in builders]
    batch = assemble_batch(batch_frame(builders), sizes, ctx, rows)
    checks = gate.FrameCheck.batch(batch.interactions, sizes, [s.checked for s in batch.sessions])
    out = []
    share = (time.perf_counter() - started) / max(len(pending), 1)
    for p, part, frames in zip(pending, batch.sessions, checks, strict=True):
        doc = envelope(p.parsed, p.counted, part.summary, [], source=source, detection=detection,
                       grammar_version=grammar.version, ctx=ctx, accounting=p.accounting.as_dict(),
                       unaccounted=p.accounting.reason())
        out.append(Assembled(doc, part.summary.count, part.characters, part.body, frames, part.rows,
                             p.seconds + share))
    return out
