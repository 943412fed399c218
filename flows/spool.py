"""A large text input streamed: read in chunks cut at turn starts, interactions spooled to disk.

For a grammar that reads text column-wise and plans from a pre-pass (``Grammar.streams_text``:
WhatsApp), an input above ``stream_bytes`` is never held whole, nor all its turns:

1. pre-pass: the input is read in blocks of whole lines (``text_blocks``); the grammar takes what
   only the whole file can decide (WhatsApp's day/month order from every header's date), the
   independent turn count and the line count (``Grammar.plan``);
2. main pass: the blocks are cut at the last turn start of each (``turn_chunks``); each chunk's
   turns become a frame, its interactions are assembled and encoded (normalizers.columns), checked
   (the gate's column and byte checks), accounted (line spans, prefix sums) and appended to a spool
   file under the output root; what spans chunks (speaker table, counts, redactions, facts,
   accounting) is merged as it goes;
3. the envelope is built from those aggregates and the document is written as head + spool +
   tail into a temporary file (sha256 computed on the way, fsync); the shard renames it into
   place (the shard stages it in its write batch). The worker hands on the file, never the bytes.

Memory is bounded by a chunk (``stream_chunk_bytes``), not by the file or the session. The bytes
are those of the same input read whole (tests cut golden and sample inputs into tiny chunks).
Inputs that are not valid UTF-8 (or UTF-8 with a BOM) go the whole way, where decoding can
replace and count bad bytes.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import polars as pl

from models.errors import ReconstructError
from models.records import Detection, SourceText
from models.status import FileStatus, SessionStatus
from normalizers.assemble import RunContext, envelope
from normalizers.columns import ColumnAssembler, lines_bytes
from normalizers.encode import head_and_tail
from parsers import registry
from parsers.columns import split_lines
from parsers.memory import paused_gc
from validators import gate
from validators.accounting import Accounting, BlankIndex, account_spans

from .process import FileOutcome, SessionOutcome

SPOOL_DIR = ".spool"


class NotStreamable(Exception):
    """The input cannot be streamed (not UTF-8, or a gap the accounting must name): read it whole."""


def text_blocks(fp: BinaryIO, size: int) -> Iterator[tuple[str, int]]:
    """Canonical text (BOM stripped, CRLF/CR to LF) in blocks of whole lines, each with the number
    of its first line; the last block may end without a line end."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")  # a BOM is dropped, even cut in two
    pending, line, cr = "", 1, False
    while True:
        data = fp.read(size)
        final = not data
        try:
            text = decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            raise NotStreamable(f"not UTF-8: {exc}") from None
        if cr:
            text = "\r" + text
        cr = text.endswith("\r") and not final  # a CR LF pair may be cut between blocks
        if cr:
            text = text[:-1]
        text = pending + text.replace("\r\n", "\n").replace("\r", "\n")
        cut = len(text) if final else text.rfind("\n") + 1
        pending, text = text[cut:], text[:cut]
        if text:
            yield text, line
            line += text.count("\n")
        if final:
            return


def turn_chunks(blocks: Iterator[tuple[str, int]], is_header: Callable[[pl.Series], pl.Series]
                ) -> Iterator[tuple[pl.Series, int]]:
    """Runs of whole turns: each block's lines up to its last header line, the rest carried on."""
    carry: list[str] = []
    carry_line = 1
    for text, first_line in blocks:
        lines = split_lines(text)
        if carry:
            lines = pl.concat([pl.Series("line", carry, pl.Utf8), lines])
            first_line = carry_line
        heads = is_header(lines).arg_true()
        cut = int(heads[-1]) if len(heads) else 0
        if cut == 0:  # no turn starts after the first line: the chunk goes on
            carry, carry_line = lines.to_list(), first_line
            continue
        yield lines.head(cut), first_line
        carry, carry_line = lines.slice(cut).to_list(), first_line + cut
    if carry:
        yield pl.Series("line", carry, pl.Utf8), carry_line


@dataclass(slots=True)
class _Spooled:
    """A streamed session's document, finished in a temporary file."""

    path: Path
    sha256: str
    size: int


def _merge(total: Accounting, part: Accounting) -> None:
    total.checked += part.checked
    total.in_turns += part.in_turns
    total.declared += part.declared


def stream_text_input(open_input: Callable[[], BinaryIO], source: SourceText, sample: str, ctx: RunContext,
                      out_root: Path) -> FileOutcome | None:
    """The streamed core for a large input whose grammar streams text; None when it does not (or
    the input must be read whole after all)."""
    if not ctx.settings.columnar:
        return None
    try:
        detection = registry.detect(sample, source.name, threshold=ctx.settings.detect_threshold,
                                    forced=ctx.settings.format)
    except ReconstructError:
        return None  # the whole path records why
    grammar = registry.get(detection.grammar)
    if not getattr(grammar, "streams_text", False):
        return None
    try:
        with paused_gc():
            return stream_text(open_input, source, detection, grammar, ctx, out_root)
    except Exception:  # NotStreamable, or a shortcoming of this route: the input is read whole instead
        return None


def stream_text(open_input: Callable[[], BinaryIO], source: SourceText, detection: Detection, grammar,
                ctx: RunContext, out_root: Path) -> FileOutcome:
    """The core for one large text input, streamed (see the module docstring). Raises NotStreamable
    before anything is written when the input must be read whole."""
    started = time.perf_counter()
    size = ctx.settings.stream_chunk_bytes
    with open_input() as fp:
        plan = grammar.plan(source, text_blocks(fp, size))
    session = grammar.stream_session(source, plan)
    spool_dir = out_root / SPOOL_DIR
    spool_dir.mkdir(parents=True, exist_ok=True)
    spool = spool_dir / f".{hashlib.sha256(source.name.encode()).hexdigest()[:16]}.{os.getpid()}.lines.tmp"
    try:
        built = _spool(open_input, source, grammar, plan, session, ctx, spool)
        outcome = _finish(built, spool, source, detection, grammar, plan, session, ctx, started)
    finally:
        spool.unlink(missing_ok=True)
    return outcome


@dataclass(slots=True)
class _Streamed:
    assembler: ColumnAssembler
    frames: gate.FrameCheck
    check: gate.ByteCheck
    accounting: Accounting
    characters: int = 0
    bad: int = 0


def _spool(open_input, source, grammar, plan, session, ctx: RunContext, spool: Path) -> _Streamed:
    """The main pass: every chunk's interactions appended to the spool."""
    built = _Streamed(ColumnAssembler(ctx), gate.FrameCheck(), gate.ByteCheck(), Accounting("lines"))
    reader = grammar.reader(source)
    extras: list[dict] = []
    with open_input() as fp, open(spool, "wb") as out:
        for lines, first_line in turn_chunks(text_blocks(fp, ctx.settings.stream_chunk_bytes), grammar.is_header):
            chunk = grammar.stream_chunk(session, plan, lines, first_line, reader)
            built.bad += chunk.bad
            extras.extend(chunk.extras)
            seen = len(built.assembler.checked)
            columns = built.assembler.add(chunk.frame)
            built.frames.feed(columns, built.assembler.checked[seen:])
            del built.assembler.checked[seen:]
            regions = [r.lines for r in session.regions if r.lines]
            extent = (first_line, first_line + len(lines) - 1)
            found = account_spans(BlankIndex(lines, first_line), extent, chunk.frame["line_start"],
                                  chunk.frame["line_end"], regions)
            if found is None:
                raise NotStreamable("some lines are in no turn and no declared region")
            _merge(built.accounting, found)
            built.characters += int(columns["content"].str.len_chars().sum() or 0)
            piece = lines_bytes(columns, built.assembler.summary.count == columns.height)
            built.check.feed(piece, encoded=True)
            out.write(piece)
    grammar.stream_end(session, source, plan, built.bad, extras)
    return built


def _finish(built: _Streamed, spool: Path, source, detection, grammar, plan, session, ctx, started) -> FileOutcome:
    """The envelope from the aggregates, gated; the document written as head + spool + tail."""
    counted = plan.counted
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
        spooled = _wrap(head, spool, tail)
        status = SessionStatus.PARTIAL if result.partial else SessionStatus.OK
        reason = doc["artifacts"]["Chatthistorik"].get("coverageReason", "")
        outcome = SessionOutcome(1, sid, raw_id, status, [], reason, None, None, summary.count, counted,
                                 built.characters, seconds=seconds, spool=spooled.path, spool_sha256=spooled.sha256)
    outcome.declared = built.accounting.declared
    file_status = (FileStatus.QUARANTINED if outcome.status == SessionStatus.QUARANTINED
                   else FileStatus.OK if outcome.status == SessionStatus.OK else FileStatus.PARTIAL)
    return FileOutcome(source.name, source.sha256, source.size, detection.grammar, file_status, [], "",
                       detection, [outcome], seconds)


def _wrap(head: bytes, spool: Path, tail: bytes) -> _Spooled:
    """head + spool + tail into a temporary document beside the spool, hashed on the way, synced."""
    path = spool.with_name(spool.name.replace(".lines.tmp", ".json.tmp"))
    digest = hashlib.sha256(head)
    size = len(head)
    with open(path, "wb") as out, open(spool, "rb") as lines:
        out.write(head)
        while block := lines.read(1 << 20):
            digest.update(block)
            size += len(block)
            out.write(block)
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


def clean(out_root: Path) -> None:
    """Spool files a killed run left behind."""
    shutil.rmtree(out_root / SPOOL_DIR, ignore_errors=True)
