"""The inputs an earlier run proves unchanged, found before the shards are planned: each gets its
skipped row and no shard work, so an unchanged rerun reads and hashes its inputs and starts nothing.

The rule is the shard's (``PriorRuns.unchanged``: the same key, size, sha256 of the canonical text,
companions, configuration fingerprint and pipeline version as its latest row, nothing in it failed,
no session held by the mass latch), applied here once for the whole run. An input whose latest row
holds its raw bytes' sha256 is not decoded: the same size and raw bytes are the same text, so the row's
text sha256 stands (``PriorRuns.same_bytes``); a row written before raw hashes were kept is proven by
decoding, and the skipped row then records the raw hash for the next run. As before, a document
removed by hand is not written again (it is no longer current: docs/auditing.md). An input this
cannot prove (changed, unreadable, too large to read whole, a database streamed) goes to its shard
as before, which reads it and records what it is.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from audit.ledger import FileRow, Ledger, PriorRuns
from models.errors import IngestError
from models.settings import Settings
from models.status import FileStatus
from parsers.text import input_sha256

from . import ingest
from .shard import (
    MEMORY_PER_INPUT_BYTE,
    UNCHANGED,
    ShardInputs,
    memory_budget,
    note_only,
    note_row,
    stream_limit,
)


@dataclass(slots=True)
class Proof:
    """The run's inputs split: the skipped rows of those proven unchanged, and the rest for the shards."""

    rows: list[FileRow] = field(default_factory=list)
    rest: list[ingest.InputRef] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Check:
    """What proving one input needs: the ledger's prior rows, the run's settings and their fingerprint,
    and the reads (each zip opened once, each folder's companions read once)."""

    prior: PriorRuns
    settings: Settings
    fingerprint: str
    inputs: ShardInputs
    contexts: dict[str, str | None] = field(default_factory=dict)

    def context(self, ref: ingest.InputRef) -> str | None:
        """The companions' hash of the input's folder, asked once per folder (by its key's text: the
        shard's lookup builds a path per input)."""
        folder = ref.key.rpartition("/")[0]
        if folder not in self.contexts:
            self.contexts[folder] = self.inputs.context(ref)[1]
        return self.contexts[folder]


def prove(refs: list[ingest.InputRef], settings: Settings, ledger: Ledger,
          companions: dict[str, ingest.InputRef]) -> Proof:
    """Split ``refs`` into the inputs the ledger proves unchanged (their rows, with those of the inputs only
    noted) and the rest, in order. Nothing is read when the ledger knows none of them (a first run)."""
    prior = ledger.inputs.prior([key for ref in refs for key in (ref.key, *(p.key for p in ref.parts))])
    proof = Proof()
    inputs = ShardInputs(companions)
    check = Check(prior, settings, settings.fingerprint(), inputs)
    try:
        for ref in refs:
            rows = _proven(ref, check) if prior.latest else None
            if rows is None:
                proof.rest.append(ref)
            else:
                proof.rows.extend(rows)
    finally:
        inputs.close()
    return proof


def _proven(ref: ingest.InputRef, check: Check) -> list[FileRow] | None:
    """The skipped rows of ``ref`` (one per file of a conversation) when it is proven unchanged, its own
    row when it is only noted (ignored, a companion), else None."""
    noted = note_only(ref)
    if noted is not None:
        return [noted]
    if ref.problem:
        return None
    try:
        if ref.parts:
            return _group(ref, check)
        shas = _shas(ref, check)
        context = check.context(ref)
    except (IngestError, OSError):  # its shard reads it again and records why it cannot
        return None
    if shas is None or not check.prior.unchanged(ref.key, shas[0], check.fingerprint, context):
        return None
    return [_skipped(ref, shas, context)]


def _group(ref: ingest.InputRef, check: Check) -> list[FileRow] | None:
    """A conversation's files (their sessions under the group's key): proven when every file is."""
    prior = check.prior
    if prior.held(ref.key) or any(p.problem or not prior.sized(p.key, p.size) for p in ref.parts):
        return None
    context = check.context(ref.parts[0])
    found = [(p, _whole(p, check)) for p in ref.parts]
    if not all(prior.unchanged(p.key, shas[0], check.fingerprint, context) for p, shas in found):
        return None
    return [_skipped(p, shas, context) for p, shas in found]


def _skipped(ref: ingest.InputRef, shas: tuple[str, str], context: str | None) -> FileRow:
    """The skipped row of an input proven unchanged: its text's sha256 and its raw bytes'."""
    return note_row(ref, FileStatus.SKIPPED, UNCHANGED, shas[0], context, shas[1])


def _shas(ref: ingest.InputRef, check: Check) -> tuple[str, str] | None:
    """(the hash the ledger keys an input on, as its shard computes it, streamed from the stream size on;
    its raw bytes' sha256); None when its size alone says it changed, or it is not read whole."""
    if not check.prior.sized(ref.key, ref.size):
        return None
    if ref.size >= stream_limit(ref, check.settings):
        return _streamed(ref, check)
    if ref.size * MEMORY_PER_INPUT_BYTE > memory_budget(check.settings):
        return None  # its shard quarantines it as too large, as it always has
    return _whole(ref, check)


def _whole(ref: ingest.InputRef, check: Check) -> tuple[str, str]:
    """An input read whole: decoded only when its latest row holds no raw sha256 of these bytes."""
    data = check.inputs.read(ref)
    raw = check.inputs.raw[ref.key]
    return check.prior.same_bytes(ref.key, ref.size, raw) or input_sha256(data), raw


def _streamed(ref: ingest.InputRef, check: Check) -> tuple[str, str]:
    """A stream-sized input: its raw bytes hashed, and its canonical text too only when its latest row
    holds no raw sha256 (then both in one pass)."""
    if check.prior.recorded_raw(ref.key):
        with ingest.open_binary(ref, check.inputs.zips) as fp:
            raw = hashlib.file_digest(fp, "sha256").hexdigest()
        sha = check.prior.same_bytes(ref.key, ref.size, raw)
        if sha is not None:
            return sha, raw
    return check.inputs.stream_sha256(ref)[0], check.inputs.raw[ref.key]
