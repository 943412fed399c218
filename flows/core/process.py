"""The core of one input file, with no I/O and no Prefect: bytes in, gated documents out.

decode -> detect -> parse -> count -> normalise/assemble -> encode -> gate. Every failure becomes
a quarantined outcome with a reason code; nothing raised by a grammar escapes.
"""

from __future__ import annotations

import hashlib
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

import orjson

from audit.datasets import DocumentRows
from models.errors import ParseError, Reason, ReconstructError
from models.records import Detection, SourceText
from models.status import FileStatus, SessionStatus
from normalizers.assemble import RunContext, surrogates_note
from normalizers.encode import head_and_tail
from normalizers.ids import safe_id
from parsers import registry
from parsers.columns import failed
from parsers.memory import paused_gc
from parsers.text import decode
from validators import gate
from validators.accounting import Accountant, Accounting

from . import batches

DETECT_SAMPLE = 65536


@dataclass(slots=True)
class SessionOutcome:
    """One session's result: the bytes to write (when it passed) and what the ledger records."""

    ordinal: int
    session_id: str
    session_id_raw: str | None
    status: SessionStatus
    reasons: list[str]
    detail: str
    encoded: bytes | None
    document: dict[str, Any] | None
    interactions: int
    source_turns: int
    characters: int
    failures: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    unaccounted: int = 0
    """Lines or records of the source the accounting found in no interaction and no declared region."""
    declared: int = 0
    """Lines or records in declared regions."""
    drift: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Format drift the grammar met: ``{"category:value": {"count": n, "first": pointer}}``."""
    spool: Any = None
    """A streamed session's finished document: a temporary file (flows/core/spool.py) the shard renames
    into place, instead of ``encoded``."""
    spool_sha256: str | None = None
    turns: Any = None
    """The interaction rows when the session was assembled column-wise (``normalizers.columns.TurnRows``:
    ``.frame()`` is the turns table's document columns), for the datasets; else None."""
    rows: DocumentRows | None = None
    """The document's dataset rows, taken from it as assembled (the trail keys them by path and sha256)."""


@dataclass(slots=True)
class FileOutcome:
    """One input file's result."""

    name: str
    sha256: str | None
    size: int
    grammar: str | None
    status: FileStatus  # ok | partial | quarantined
    reasons: list[str]
    detail: str
    detection: Detection | None
    sessions: list[SessionOutcome]
    seconds: float = 0.0
    part_failures: dict[str, tuple[str, str]] = field(default_factory=dict)
    """For a conversation over several files: the files that could not be decoded, by name, with
    (reason code, detail); the conversation reads them as gaps, the ledger quarantines each file."""
    emitted: bool = False
    """True when each session was handed to the shard as soon as it was done (flows/core/jsonstream.py):
    only the file's own record is left to write."""
    staged: list[Any] = field(default_factory=list)
    """Dataset parts the route staged for the documents it handed on (``audit.datasets.adopt``)."""
    failure: tuple[Reason, str] | None = None
    """A failure of the whole input after the sessions before it (``finish`` makes it the file's reason)."""
    notes: tuple[str, ...] = ()
    """What decoding assumed or replaced, for the file's detail whatever became of its sessions."""
    open: bool = False
    """True while its sessions wait in a batch: status, reasons and sessions are not final (``finish``)."""


def _gate_session(built: _Built, counted: int, accounting: Accounting) -> tuple[bytes, gate.GateResult]:
    """Gate the document, record the per-check results in it, then check the exact bytes as they
    are encoded (normalizers.encode: head, interaction lines, tail).

    The summary is written before the byte check (a document is encoded once); a document whose
    bytes fail is never written, so a written document's ``jsonSyntax: pass`` is always true.
    """
    doc = built.doc
    result = gate.check(doc, None, counted, accounting=accounting, frames=built.frames)
    doc["artifacts"]["ai_protocol_performance"]["gate"] = result.summary()
    check = gate.ByteCheck()
    try:
        head, tail = head_and_tail(doc, built.count)
        body = built.body
    except (TypeError, ValueError) as exc:  # e.g. an integer beyond 64 bits in a source field
        result.failures.append(gate.GateFailure(Reason.JSON_SYNTAX, "$", f"cannot be serialised: {exc}"))
        return b"", result
    check.envelope(head, tail)
    check.feed(head)
    check.feed(body, encoded=True)
    check.feed(tail)
    result.failures.extend(check.failures())
    return b"".join((head, body, tail)), result


@dataclass(frozen=True, slots=True)
class ReadWhole:
    """A large input that is read whole, not streamed, decided before any of it was processed (a JSON export
    whose list cannot be located cheaply, a text whose pre-pass finds a line it cannot cut at); ``why``
    goes into its ledger row."""

    why: str

    def note(self) -> str:
        return f"read whole, not streamed: {self.why}"


def quarantined_file(name: str, size: int, reason: Reason | str, detail: str, sha: str | None = None,
                     grammar: str | None = None, detection: Detection | None = None) -> FileOutcome:
    return FileOutcome(name, sha, size, grammar, FileStatus.QUARANTINED, [str(reason)], detail, detection, [])


def process_text(source: SourceText, ctx: RunContext, batch: Batch | None = None,
                 detection: Detection | ReconstructError | None = None) -> FileOutcome:
    """Detect, parse and gate every session of one decoded source; with ``batch``, its sessions go to that
    batch and the outcome stays open until the caller flushes it (see ``take_all``). ``detection``: the
    source's detection (or why it has none) when the caller detected it with others
    (``registry.detect_many``); else it is detected here."""
    started = time.perf_counter()
    try:
        if detection is None:
            detection = registry.detect(
                source.text[:DETECT_SAMPLE], source.name,
                threshold=ctx.settings.detect_threshold, forced=ctx.settings.format,
            )
        elif isinstance(detection, ReconstructError):
            raise detection
    except ReconstructError as exc:
        return quarantined_file(source.name, source.size, exc.reason, str(exc), source.sha256)
    own = Batch(ctx) if batch is None else batch
    outcome = own.read_later(registry.get(detection.grammar), source, detection, started)
    return settled(own, outcome) if batch is None else outcome


@dataclass(slots=True)
class Unread:
    """An input detected and waiting to be read with the batch's other inputs of its grammar
    (``Grammar.read``)."""

    source: SourceText
    outcome: FileOutcome
    owner: Owner
    started: float


def read_together(unread: list[Unread], batch: Batch) -> None:
    """Read inputs of one grammar together (``Grammar.read``: a line grammar's one table of lines),
    each input's sessions then taken into ``batch`` as ``take_all`` takes them. A failure of the
    read is recorded on each of its inputs; no other route reads them again."""
    grammar = unread[0].owner.grammar
    try:
        read = grammar.read([u.source for u in unread], batch.ctx.settings)
    except Exception as exc:  # recorded on each input read together; the run goes on
        error = exc if isinstance(exc, ReconstructError) else ParseError(
            Reason.PARSE_ERROR, f"reading {len(unread)} {grammar.name} input{'s' * (len(unread) != 1)} together "
            f"failed: {failure(exc)}", grammar=grammar.name)
        read = [failed(error) for _ in unread]
    for u, sessions in zip(unread, read, strict=True):
        take_all(sessions, u.outcome, u.owner, batch, u.started)


def failure(exc: BaseException) -> str:
    """An unexpected exception as a ledger detail: its type, message and where it was raised."""
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" ({where.filename}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {exc}{at}"


@dataclass(slots=True)
class Owner:
    """One input whose sessions are judged in a batch: what judging them needs, and the list its
    outcomes go to, in order."""

    grammar: Any
    source: SourceText
    detection: Detection
    seen_ids: dict[str, int] | None
    """Session ids met so far in the input (None: each session on its own, as an entry of a streamed list)."""
    sessions: list[SessionOutcome] = field(default_factory=list)


class Batch:
    """Sessions of one input or of many (a shard shares one across its files) whose turns are columns,
    judged as one table about ``batches.BATCH_TURNS`` turns at a time, in order, each into its
    input's outcomes: polars' per-call cost is shared by every session of the batch."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.pending: list[tuple[int, batches.Pending, Owner]] = []
        self.turns = 0
        self.unread: dict[str, list[Unread]] = {}
        self.unread_bytes = 0

    @property
    def idle(self) -> bool:
        """Nothing waits in the batch: no input to read, no session to judge."""
        return not self.pending and not self.unread

    def add(self, ordinal: int, pending: batches.Pending, owner: Owner) -> None:
        self.pending.append((ordinal, pending, owner))
        self.turns += len(pending.parsed.turns)
        if self.turns >= batches.BATCH_TURNS:
            self.flush()

    def read_later(self, grammar, source: SourceText, detection: Detection, started: float) -> FileOutcome:
        """Hold a detected input until the batch reads it with the others of its grammar; its outcome,
        open until then."""
        outcome, owner = opened(grammar, source, detection)
        self.unread.setdefault(grammar.name, []).append(Unread(source, outcome, owner, started))
        self.unread_bytes += source.size
        if self.unread_bytes >= batches.TABLE_BYTES:
            self.flush()
        return outcome

    def flush(self) -> None:
        unread, self.unread, self.unread_bytes = self.unread, {}, 0
        for same in unread.values():
            read_together(same, self)
        pending, self.pending, self.turns = self.pending, [], 0
        if pending:
            for (_, _, owner), outcome in zip(pending, judge_batch(pending, self.ctx), strict=True):
                owner.sessions.append(outcome)


def opened(grammar, source: SourceText, detection: Detection) -> tuple[FileOutcome, Owner]:
    """An input's open outcome and the owner its sessions are judged for."""
    owner = Owner(grammar, source, detection, {})
    return FileOutcome(source.name, source.sha256, source.size, detection.grammar, FileStatus.OK, [], "",
                       detection, owner.sessions, open=True), owner


def take_all(parsed_sessions, outcome: FileOutcome, owner: Owner, batch: Batch, started: float) -> FileOutcome:
    """Each session of an input counted, accounted and handed to ``batch`` (a session read as a frame is
    accounted with the batch's other frame sessions when the batch is judged); a grammar failure keeps
    what came before. The outcome stays open until the batch is flushed and ``finish``-ed (``settled``)."""
    grammar, source, detection = owner.grammar, owner.source, owner.detection
    accountant = Accountant.of(source, lines=not grammar.structured, shape=grammar.turn_shape)
    try:
        for ordinal, (parsed, last) in enumerate(_with_last(parsed_sessions), 1):
            _take(ordinal, parsed, last, accountant, owner, batch)
    except ReconstructError as exc:
        outcome.failure = (exc.reason, str(exc))
    except Exception as exc:  # a grammar bug must quarantine the file, not crash the run
        outcome.failure = (Reason.PARSE_ERROR, f"{detection.grammar} failed: {failure(exc)}")
    outcome.seconds = time.perf_counter() - started
    return outcome


def settled(batch: Batch, outcome: FileOutcome) -> FileOutcome:
    """An input's outcome once the batch holding its sessions is judged."""
    batch.flush()
    return finish(outcome)


def _take(ordinal: int, parsed, last: bool, accountant: Accountant, owner: Owner, batch: Batch) -> None:
    """One parsed session, counted and accounted (a frame session's extent taken now, its accounting
    left to the batch), into the batch."""
    if isinstance(parsed.turns, batches.TurnColumns) and parsed.frame is None:
        pending = batches.prepare(parsed, owner.grammar)
    else:
        deferred = accountant.defer(parsed, last)
        accounting = None if deferred is not None else accountant.account(parsed, last)
        pending = batches.prepare_read(parsed, owner.grammar, accounting, deferred)
    batch.add(ordinal, pending, owner)


def finish(outcome: FileOutcome) -> FileOutcome:
    """An open input's status once its sessions are judged: a file-level failure, no session, or theirs."""
    if not outcome.open:
        return outcome
    outcome.open = False
    sessions = outcome.sessions
    if outcome.notes:
        outcome.detail = "; ".join(x for x in (outcome.detail, *outcome.notes) if x)
    if outcome.failure is not None:
        reason, detail = outcome.failure
        outcome.status = FileStatus.PARTIAL if sessions else FileStatus.QUARANTINED
        outcome.reasons, outcome.detail = [str(reason)], "; ".join((detail, *outcome.notes))
    elif not sessions:
        outcome.status, outcome.reasons = FileStatus.QUARANTINED, [Reason.NO_TURNS.value]
        outcome.detail = "; ".join((f"{outcome.grammar} found no session in the input", *outcome.notes))
    else:
        statuses = {s.status for s in sessions}
        # the file's own reasons are file-level failures only; each session carries its own
        outcome.status = (FileStatus.QUARANTINED if statuses == {SessionStatus.QUARANTINED}
                          else FileStatus.OK if statuses == {SessionStatus.OK} else FileStatus.PARTIAL)
    return outcome


_END = object()


def _with_last(items):
    """Yield (item, is_last). An error fetching the next item still yields the one held first."""
    it = iter(items)
    held = next(it, _END)
    while held is not _END:
        try:
            following = next(it, _END)
        except Exception:
            yield held, False
            raise
        yield held, following is _END
        held = following


def _tally(outcome: SessionOutcome, parsed, accounting: Accounting) -> None:
    outcome.unaccounted = accounting.unaccounted + accounting.overlapping
    outcome.declared = accounting.declared
    outcome.drift = parsed.meta.get("formatDrift") or {}


def _decide(ordinal, parsed, built: _Built, counted: int, accounting: Accounting, seen_ids: dict[str, int],
            t0: float) -> SessionOutcome:
    """A built session's judgement: a duplicate id, else the gate's."""
    doc = built.doc
    sid = doc["sessionId"]
    raw_id = doc["artifacts"]["ByggLogg"].get("sessionIdRaw", sid) if parsed.session_id is not None else None
    if parsed.session_id is not None and sid in seen_ids:
        return SessionOutcome(
            ordinal, sid, raw_id, SessionStatus.QUARANTINED, [Reason.DUPLICATE_SESSION_ID.value],
            f"session id {raw_id!r} already used by session #{seen_ids[sid]} of this source; "
            "not merged, not overwritten",
            None, built.full_document(), built.count, counted, built.characters, seconds=time.perf_counter() - t0,
        )
    seen_ids.setdefault(sid, ordinal)
    encoded, result = _gate_session(built, counted, accounting)
    if result.passed:
        status = SessionStatus.PARTIAL if result.partial else SessionStatus.OK
        reason = doc["artifacts"]["Chatthistorik"].get("coverageReason", "")
        return SessionOutcome(ordinal, sid, raw_id, status, [], reason, encoded, None,
                              built.count, counted, built.characters, seconds=time.perf_counter() - t0,
                              rows=DocumentRows.of(doc, built.table))
    detail = "; ".join(f"{f.reason.value} at {f.path}: {f.message}" for f in result.failures[:5])
    return SessionOutcome(ordinal, sid, raw_id, SessionStatus.QUARANTINED, result.reasons, detail, None,
                          built.full_document(), built.count, counted, built.characters,
                          [f.as_dict() for f in result.failures], seconds=time.perf_counter() - t0)


@dataclass(slots=True)
class _Built:
    """A session of a batch before the gate: its envelope, its interactions' bytes (``body``), the gate's
    checks of their columns and the turns table rows (``normalizers.table.SessionColumns.rows``)."""

    doc: dict[str, Any]
    count: int
    characters: int
    frames: gate.FrameCheck
    body: bytes
    table: Any

    def full_document(self) -> dict[str, Any]:
        """The document with its interactions as dicts (a quarantine record keeps it)."""
        history = self.doc["artifacts"]["Chatthistorik"]
        if self.body:  # one line per interaction, each but the last ending in a comma
            history["interactions"] = [orjson.loads(line.rstrip(b",")) for line in self.body[1:].split(b"\n")]
        return self.doc


def judge_batch(pending: list[tuple[int, batches.Pending, Owner]], ctx: RunContext, rows: bool = True
                ) -> list[SessionOutcome]:
    """Judge a batch of prepared sessions, in order, each with its ordinal and its input. Should the
    column route fail on the batch, its sessions are quarantined with the failure (never assembled
    again by another route). A session whose source fields cannot be encoded is quarantined alone. The
    batch's frame sessions are accounted first, together; should that fail, they are quarantined with
    the failure and the others judged."""
    unaccounted = _account(pending)
    table = [(p, owner) for _, p, owner in pending if batches.columnar(p.parsed) and id(p) not in unaccounted]
    try:
        built = dict(zip((id(p) for p, _ in table), batches.assemble_pending(table, ctx, rows), strict=True))
    except Exception as exc:  # recorded on each of the batch's sessions; the run goes on
        detail = f"the column route failed on its batch: {failure(exc)}"
        return [_route_failed(ordinal, p, Reason.INTERNAL, detail) for ordinal, p, _ in pending]
    out = []
    for ordinal, p, owner in pending:
        b = built.get(id(p))
        if id(p) in unaccounted:
            out.append(_route_failed(ordinal, p, Reason.INTERNAL, unaccounted[id(p)]))
            continue
        if b is None:
            out.append(_route_failed(ordinal, p, Reason.JSON_SYNTAX, "a source field cannot be serialised as JSON: "
                                     f"{p.parsed.turns.why}"))
            continue
        p.parsed.turns = []  # the document holds what is needed
        session = _Built(b.doc, b.count, b.characters, b.frames, b.body, b.rows)
        outcome = _decide(ordinal, p.parsed, session, p.counted, p.accounting,
                          {} if owner.seen_ids is None else owner.seen_ids, time.perf_counter() - b.seconds)
        _tally(outcome, p.parsed, p.accounting)
        out.append(outcome)
    return out


def _account(pending: list[tuple[int, batches.Pending, Owner]]) -> dict[int, str]:
    """Account the batch's frame sessions (``batches.account_deferred``); when that fails, the failure
    for each of them, by ``id`` of its pending entry (left with an empty accounting)."""
    try:
        batches.account_deferred(p for _, p, _ in pending)
    except Exception as exc:  # recorded on each frame session of the batch; the others go on
        detail = f"the accounting of the batch's frame sessions failed: {failure(exc)}"
        waiting = [p for _, p, _ in pending if p.deferred is not None]
        for p in waiting:
            p.accounting, p.deferred = Accounting("lines"), None
        return {id(p): detail for p in waiting}
    return {}


def _route_failed(ordinal: int, pending: batches.Pending, reason: Reason, detail: str) -> SessionOutcome:
    """A session that could not be assembled: quarantined with the failure, nothing written."""
    raw = pending.parsed.session_id
    outcome = SessionOutcome(ordinal, safe_id(raw), raw, SessionStatus.QUARANTINED, [reason.value], detail,
                             None, None, 0, pending.counted, 0, seconds=pending.seconds)
    _tally(outcome, pending.parsed, pending.accounting)
    return outcome


def process_bytes(data: bytes, name: str, ctx: RunContext, companions: dict[str, str] | None = None,
                  siblings: tuple[str, ...] = (), decoded: SourceText | None = None,
                  batch: Batch | None = None, detection: Detection | ReconstructError | None = None) -> FileOutcome:
    """The whole core for one input's bytes (``siblings``: names of the files beside it;
    ``decoded``: the bytes already decoded, when the caller did it to hash them; ``batch``: see
    ``take_all``; ``detection``: see ``process_text``)."""
    with paused_gc():
        started = time.perf_counter()
        try:
            source = decoded if decoded is not None else decode(data, name)
        except ReconstructError as exc:
            return quarantined_file(name, len(data), exc.reason, str(exc))
        if companions or siblings:
            source = replace(source, companions=companions or {}, siblings=siblings)
        # what decoding assumed or replaced goes on the file's ledger row, whatever became of its sessions
        notes = tuple(x for x in (source.encoding_guess, surrogates_note(source) if source.surrogates_count else None)
                      if x)
        own = Batch(ctx) if batch is None else batch
        outcome = process_text(source, ctx, own, detection)
        outcome.notes = notes
        outcome.seconds = time.perf_counter() - started
        return settled(own, outcome) if batch is None else outcome


def process_group(parts: list[tuple[bytes | None, str]], name: str, ctx: RunContext,
                  companions: dict[str, str] | None = None, batch: Batch | None = None) -> FileOutcome | None:
    """The core for the files of one conversation over several files (a Slack channel's day files).

    Detection reads the first readable file; when its grammar reads these files as one group (``group_of``) the
    files go to it together as one source whose ``parts`` they are (a file that cannot be read or
    decoded is an empty part the grammar reports as a gap). None when the grammar does not group: the
    caller then processes each file on its own, as any other input."""
    with paused_gc():
        started = time.perf_counter()
        failures: dict[str, tuple[str, str]] = {}
        sources = [_part(data, part, failures) for data, part in parts]
        first = next((s for s in sources if s.text), None)
        if first is None:
            return None
        try:
            detection = registry.detect(first.text[:DETECT_SAMPLE], first.name,
                                        threshold=ctx.settings.detect_threshold, forced=ctx.settings.format)
        except ReconstructError:
            return None
        grammar = registry.get(detection.grammar)
        if not _groups(grammar, [s.name for s in sources]):
            return None
        digest = hashlib.sha256("\n".join(f"{s.name} {s.sha256}" for s in sources).encode()).hexdigest()
        group = SourceText("", name, digest, sum(s.size for s in sources), first.encoding, companions or {},
                           parts=tuple(sources))
        own = Batch(ctx) if batch is None else batch
        outcome = own.read_later(grammar, group, detection, started)
        outcome.part_failures = failures
        return settled(own, outcome) if batch is None else outcome


def _groups(grammar, names: list[str]) -> bool:
    """True when the grammar reads these files as the parts of one conversation (``Grammar.group_of``;
    a file named as the conversation's key is its first part, as DiscordChatExporter names it)."""
    claims = [(PurePosixPath(n).name, grammar.group_of(PurePosixPath(n).name)) for n in names]
    keys = {claim[0] if claim else leaf for leaf, claim in claims}
    return any(claim for _, claim in claims) and len(keys) == 1


def _part(data: bytes | None, name: str, failures: dict[str, tuple[str, str]]) -> SourceText:
    if data is not None:
        try:
            return decode(data, name)
        except ReconstructError as exc:
            failures[name] = (exc.reason.value, str(exc))
    return SourceText("", name, "", len(data or b""), "unreadable")
