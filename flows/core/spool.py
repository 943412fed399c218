"""A large text input streamed: read in ranges cut at turn starts, interactions spooled to disk.

A line grammar (``parsers.base.LineGrammar``) is read through one contract, whole or streamed; an
input above ``stream_text_bytes`` is streamed through the same methods the whole read calls, never held
whole, nor all its turns:

1. pre-pass: the input is read in blocks of whole lines (flows/core/ranges.py ``Blocks``), each a table
   of one text surveyed (``LineGrammar.survey``), the surveys added up in order (``Survey.then``): what
   only the whole file can decide (WhatsApp's day/month order from every header's date), the
   independent turn count, the line count and the turns before each block; an input whose survey
   says it can only be read whole (``Survey.whole_only``) is; one whose chunks can be read apart
   (``Survey.apart``) is cut into ranges of about ``stream_range_bytes`` at turn starts, the others
   are one range read in order;
2. main pass: the ranges are read on ``workers`` threads (flows/core/ranges.py), each in chunks cut at
   the last turn start of each block; each chunk's turns become a frame (``LineGrammar.frames``), its
   interactions are assembled and encoded (normalizers.columns), checked (the gate's column and byte checks),
   accounted (line spans, prefix sums) and appended to the range's spool piece, its dataset rows
   to row pieces; the ranges are then merged in order (speaker table, counts, redactions, facts,
   accounting), so the bytes do not depend on the cuts or the number of workers;
3. the session's envelope facts are concluded (``LineGrammar.conclude``), the envelope is built from
   those aggregates and the document is written as head + pieces + tail into a temporary file (sha256
   computed on the way, fsync); the shard renames it into place (the shard stages it in its write batch)
   and turns the row pieces into a dataset part. The worker hands on files, never the bytes.

Memory is bounded by a chunk (``stream_chunk_bytes``) per worker, not by the file or the session.
The bytes are those of the same input read whole (tests cut golden and sample inputs into tiny
chunks and ranges). Inputs that are not valid UTF-8 (or UTF-8 with a BOM) go the whole way, where
decoding can replace and count bad bytes; so does an input a range cannot account for.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from audit.datasets import StreamedRows
from models.errors import NotStreamable, Reason
from models.records import Detection, SourceText
from models.status import FileStatus, SessionStatus
from normalizers.assemble import RunContext, envelope
from normalizers.encode import head_and_tail
from parsers import registry
from parsers.base import LineGrammar, Survey
from parsers.columns import LineTable
from parsers.memory import paused_gc
from validators import gate

from . import ranges
from .process import FileOutcome, ReadWhole, SessionOutcome, failure, quarantined_file

__all__ = ["clean", "discard", "stream_text_input"]

SPOOL_DIR = ".spool"


@dataclass(slots=True)
class _Spooled:
    """A streamed session's document, finished in a temporary file."""

    path: Path
    sha256: str
    size: int


def stream_text_input(open_input: Callable[[], BinaryIO], source: SourceText, detection: Detection, ctx: RunContext,
                      out_root: Path) -> FileOutcome | ReadWhole | None:
    """The streamed core for a large input of a line grammar (``detection``); None for another grammar
    (the caller says why it is read whole); ``ReadWhole`` with the reason when its pre-pass finds the
    input must be read whole (its ledger row says so)."""
    grammar = registry.get(detection.grammar)
    if not isinstance(grammar, LineGrammar):
        return None
    try:
        with paused_gc():
            return stream_text(open_input, source, detection, grammar, ctx, out_root)
    except NotStreamable as exc:  # the pre-pass found what needs the whole file: read whole, and said so
        return ReadWhole(exc.detail)
    except OSError:  # reading the input or writing the output: the shard records it
        raise
    except Exception as exc:  # a failure of this route quarantines the input; no other route retries it
        return quarantined_file(source.name, source.size, Reason.INTERNAL, f"the streamed route failed: {failure(exc)}",
                                source.sha256, grammar.name, detection)


def stream_text(open_input: Callable[[], BinaryIO], source: SourceText, detection: Detection, grammar,
                ctx: RunContext, out_root: Path) -> FileOutcome:
    """The core for one large text input, streamed (see the module docstring). Raises NotStreamable
    before anything is written when the input must be read whole."""
    started = time.perf_counter()
    settings = ctx.settings
    with open_input() as fp:
        survey, cuts = _survey(fp, source, grammar, settings)
    sessions = grammar.sessions(source, survey)
    if len(sessions) != 1:
        raise NotStreamable(Reason.NOT_STREAMABLE, f"{len(sessions)} sessions in one input")
    session = sessions[0]
    spool_dir = out_root / SPOOL_DIR
    spool_dir.mkdir(parents=True, exist_ok=True)
    name = f".{hashlib.sha256(source.name.encode()).hexdigest()[:16]}.{os.getpid()}"
    reading = ranges.Reading(open_input, source, grammar, survey, session, ctx, spool_dir / name)
    kept: list[Path] = []
    try:
        built = ranges.merge(ranges.read_all(reading, cuts, settings.workers), ctx)
        grammar.conclude(sessions, source, survey, [built])
        outcome = _finish(built, spool_dir / f"{name}.json.tmp", source, detection, grammar, survey, session, ctx,
                          started)
        first = outcome.sessions[0]
        if first.spool is not None:
            kept = [Path(first.spool), *first.turns.files()]
    finally:
        for path in spool_dir.glob(f"{name}.*.tmp"):
            if path not in kept:
                path.unlink(missing_ok=True)
    return outcome


def _survey(fp: BinaryIO, source: SourceText, grammar: LineGrammar, settings) -> tuple[Survey, list[ranges.Range]]:
    """The input's survey, its blocks' added up in order, and the ranges to read: ranges cut at turn
    starts when its chunks can be read apart, else one range read in order. Raises NotStreamable
    when the survey says the input can only be read whole."""
    blocks = ranges.Blocks()

    def survey(text: str, first_line: int) -> Survey:  # on the pre-pass's threads, the count included
        return grammar.survey([source], LineTable.of([text]), [first_line])[0].census()

    total: Survey | None = None
    before: list[int] = []  # the turns before each block
    for found in blocks.scans(fp, settings.stream_chunk_bytes, survey, settings.workers):
        before.append(total.turns if total is not None else 0)
        total = found if total is None else total.then(found)
    if total is None:  # an empty input: the survey of no lines
        total = survey("", 1)
    if (why := total.whole_only) is not None:
        raise NotStreamable(Reason.NOT_STREAMABLE, why)
    cuts = (ranges.cut(fp, blocks, before, grammar.starts, settings.stream_range_bytes)
            if total.apart and ranges.seekable(fp) else [ranges.WHOLE])
    return total, cuts


def _finish(built: ranges.Merged, target: Path, source, detection, grammar, survey, session, ctx, started
            ) -> FileOutcome:
    """The envelope from the aggregates, gated; the document written as head + spool + tail."""
    counted = survey.counted
    summary = built.assembler.summary
    doc = envelope(session, counted, summary, [], source=source, detection=detection,
                   grammar_version=grammar.version, ctx=ctx, accounting=built.accounting.as_dict(), unaccounted=None)
    result = gate.check(doc, None, counted, accounting=built.accounting, frames=built.frames)
    doc["artifacts"]["ai_protocol_performance"]["gate"] = result.summary()
    head, tail = head_and_tail(doc, summary.count)
    built.check.envelope(head, tail)
    built.check.feed(head)
    built.check.feed(tail)
    result.failures.extend(built.check.failures())
    sid = doc["sessionId"]
    raw_id = doc["artifacts"]["ByggLogg"].get("sessionIdRaw", sid) if session.session_id is not None else None
    seconds = time.perf_counter() - started
    if not result.passed:  # the quarantine record keeps the envelope; the interactions were only spooled
        doc["artifacts"]["Chatthistorik"]["interactions"] = f"not kept: {summary.count} interactions, streamed"
        detail = "; ".join(f"{f.reason.value} at {f.path}: {f.message}" for f in result.failures[:5])
        outcome = SessionOutcome(1, sid, raw_id, SessionStatus.QUARANTINED, result.reasons, detail, None, doc,
                                 summary.count, counted, built.characters,
                                 [f.as_dict() for f in result.failures], seconds=seconds)
    else:
        spooled = _wrap(head, built.pieces, tail, target)
        status = SessionStatus.PARTIAL if result.partial else SessionStatus.OK
        reason = doc["artifacts"]["Chatthistorik"].get("coverageReason", "")
        # the envelope and the row pieces: the shard's dataset rows, without reading the document back
        rows = StreamedRows(built.rows, built.assembler.speaker_fields())
        outcome = SessionOutcome(1, sid, raw_id, status, [], reason, None, doc, summary.count, counted,
                                 built.characters, seconds=seconds, spool=spooled.path, spool_sha256=spooled.sha256,
                                 turns=rows)
    outcome.declared = built.accounting.declared
    file_status = (FileStatus.QUARANTINED if outcome.status == SessionStatus.QUARANTINED
                   else FileStatus.OK if outcome.status == SessionStatus.OK else FileStatus.PARTIAL)
    return FileOutcome(source.name, source.sha256, source.size, detection.grammar, file_status, [], "",
                       detection, [outcome], seconds)


def _wrap(head: bytes, pieces: list[Path], tail: bytes, path: Path) -> _Spooled:
    """head + the pieces + tail into a temporary document, hashed on the way, synced. The pieces
    hold one interaction line and a comma each: the first goes on a new line, the last comma is
    left out."""
    left = sum(p.stat().st_size for p in pieces) - 2  # the last ",\n"
    body = b"\n" if left > 0 else b""
    digest = hashlib.sha256(head + body)
    size = len(head) + len(body)
    with open(path, "wb") as out:
        out.write(head + body)
        for piece in pieces:
            n = min(piece.stat().st_size, left)
            if n <= 0:
                continue
            with open(piece, "rb") as lines, mmap.mmap(lines.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                block = memoryview(mapped)[:n]  # hashed and written from the page cache, not copied first
                digest.update(block)
                out.write(block)
                block.release()
            left -= n
            size += n
        out.write(tail)
        out.flush()
        os.fsync(out.fileno())
    digest.update(tail)
    return _Spooled(path, digest.hexdigest(), size + len(tail))


def discard(outcome: FileOutcome) -> None:
    """Remove the temporary documents of an outcome that will not be written."""
    for s in outcome.sessions:
        if s.spool is not None:
            Path(s.spool).unlink(missing_ok=True)
            if s.turns is not None:
                s.turns.discard()


def clean(out_root: Path) -> None:
    """Spool files a killed run left behind."""
    shutil.rmtree(out_root / SPOOL_DIR, ignore_errors=True)
