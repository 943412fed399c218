"""The ledger's rows as types: what a run writes into it, and what its queries read back.

Written rows (``FileRow``, ``SessionRow``...) are what shards return; read rows (``RunRecord``,
``FileRecord``...) are one query's rows, their fields in the order of the query's columns, with
statuses as enums and comma-joined reason lists as tuples (``fetch``).
"""

from __future__ import annotations

import enum
import functools
import sqlite3
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from models.status import FileStatus, RunStatus, SessionStatus

KEYS_PER_QUERY = 500  # keys bound in one query (SQLite's variable limit is far above)


# -- written ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RevisionRow:
    """A document a shard wrote (or found already written): a revision unless the index already
    ends with this sha256. ``previous_sha256`` is what the file held before, if anything."""

    output_path: str
    sha256: str
    note: str
    ts: str
    previous_sha256: str | None = None


@dataclass(frozen=True, slots=True)
class FileRow:
    """One input as a shard leaves it (``files`` and its ``reasons``)."""

    source_key: str
    source_path: str
    sha256: str | None
    size: int
    grammar: str | None
    status: FileStatus
    reasons: list[str]
    detail: str
    sessions: int
    seconds: float
    context_sha256: str | None = None  # the companions' hash: a changed users.json is a change
    raw_sha256: str | None = None  # of the bytes as read (``sha256`` is of the decoded text): proves it unchanged


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One session as a shard leaves it (``sessions``, its ``reasons`` and its format ``drift``)."""

    source_key: str
    ordinal: int
    session_id: str
    session_id_raw: str | None
    status: SessionStatus
    reasons: list[str]
    detail: str
    output_path: str | None
    output_sha256: str | None
    interactions: int
    source_turns: int
    characters: int
    seconds: float
    unaccounted: int = 0
    declared: int = 0
    drift: dict[str, dict[str, Any]] | None = None
    session_key: str | None = None


@dataclass(frozen=True, slots=True)
class SnapshotRow:
    """One session's document from one source (#15): the same key and source sha256 are one snapshot;
    ``blob_sha256`` names its single-snapshot document in the revision store."""

    session_key: str
    source_sha256: str
    source_path: str
    blob_sha256: str
    first_at: str | None
    last_at: str | None
    messages: int


@dataclass(frozen=True, slots=True)
class ReconciliationRow:
    """What one snapshot brought to its key's document (expected: the source's own counter, if any)."""

    session_key: str
    source_sha256: str
    expected: int | None
    reconstructed: int
    new: int
    unchanged: int
    absent: int
    edited: int


# -- read ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RunRecord:
    """A row of ``runs``; ``args`` is the JSON of the run's parameters (paths, out, pid, host...)."""

    run_id: str
    started_at: str
    finished_at: str | None
    status: RunStatus
    args: str
    config_fingerprint: str
    pipeline_version: str
    files: int
    files_skipped: int
    files_quarantined: int
    sessions_ok: int
    sessions_partial: int
    sessions_quarantined: int
    seconds: float | None


@dataclass(frozen=True, slots=True)
class FileRecord:
    """A row of ``files``: one input in one run."""

    run_id: str
    source_key: str
    source_path: str
    sha256: str | None
    size: int | None
    grammar: str | None
    status: FileStatus
    reasons: tuple[str, ...]
    detail: str
    sessions: int
    config_fingerprint: str
    seconds: float | None
    context_sha256: str | None
    raw_sha256: str | None


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A row of ``sessions``: one session of one input in one run."""

    run_id: str
    source_key: str
    ordinal: int
    session_id: str
    session_id_raw: str | None
    status: SessionStatus
    reasons: tuple[str, ...]
    detail: str
    output_path: str | None
    output_sha256: str | None
    interactions: int | None
    source_turns: int | None
    characters: int | None
    seconds: float | None
    unaccounted: int
    declared: int
    session_key: str | None


@dataclass(frozen=True, slots=True)
class RevisionRecord:
    """A row of ``revisions``: one version of one document (``rev`` 0 the first)."""

    output_path: str
    rev: int
    sha256: str
    note: str
    ts: str
    run_id: str | None


@dataclass(frozen=True, slots=True)
class SnapshotRecord:
    """A row of ``snapshots``: a key's document from one source, and the run that indexed it."""

    session_key: str
    source_sha256: str
    source_path: str
    blob_sha256: str
    first_at: str | None
    last_at: str | None
    messages: int
    run_id: str | None


@dataclass(frozen=True, slots=True)
class ReconciliationRecord:
    """A row of ``reconciliation``: what one snapshot brought to its key's document in a run."""

    run_id: str
    session_key: str
    source_sha256: str
    expected: int | None
    reconstructed: int
    new: int
    unchanged: int
    absent: int
    edited: int


class Failed(enum.StrEnum):
    """What a quarantine entry is about: an input of its own, or one of its sessions."""

    FILE = "file"
    SESSION = "session"


@dataclass(frozen=True, slots=True)
class QuarantineEntry:
    """What failed in a run: an input (``ordinal`` None) or a session, with its reason codes."""

    what: Failed
    source_key: str
    source_path: str
    ordinal: int | None
    session_id: str | None
    reasons: tuple[str, ...]
    detail: str | None


@dataclass(frozen=True, slots=True)
class FailedSource:
    """An input a run failed, to be processed again by ``rerun``."""

    source_key: str
    source_path: str


@dataclass(frozen=True, slots=True)
class DriftItem:
    """An item of format drift in a run: how often it was met and the first place it was."""

    item: str
    count: int
    first: str


@dataclass(frozen=True, slots=True)
class KeyedSession:
    """A session key's latest written document."""

    session_key: str
    output_path: str
    session_id: str
    status: SessionStatus


@dataclass(frozen=True, slots=True)
class SourceSeen:
    """Where an input's bytes were read, and by which run (with the run's parameters)."""

    source_path: str
    run_id: str
    args: str


@dataclass(frozen=True, slots=True)
class SnapshotSummary:
    """One snapshot of a key as ``reconstruct sessions`` lists it."""

    source_path: str
    sha256: str
    first: str | None
    last: str | None
    messages: int


@dataclass(frozen=True, slots=True)
class KeyCounts:
    """A key's messages by what its snapshots brought: new and unchanged summed over them, edited
    likewise, absent from the latest."""

    new: int
    unchanged: int
    absent: int
    edited: int


@dataclass(frozen=True, slots=True)
class KeyListing:
    """A session key (``reconstruct sessions``): its document, its snapshots and its counts."""

    key: str
    path: str
    session_id: str
    status: SessionStatus
    snapshots: list[SnapshotSummary]
    counts: KeyCounts


@dataclass(frozen=True, slots=True)
class PriorRuns:
    """What the ledger recorded of a set of inputs before this run (``Inputs.prior``)."""

    latest: dict[str, tuple]  # source key -> (sha256, fingerprint, context sha256, status, failed) of its last row
    latched: set[str]  # keys whose latest processing held a session back by the mass latch
    sizes: dict[str, int | None] = field(default_factory=dict)  # source key -> the size its last row recorded
    raw: dict[str, str] = field(default_factory=dict)  # source key -> its last row's raw sha256, when it has one

    def unchanged(self, source_key: str, sha256: str, fingerprint: str, context_sha256: str | None = None) -> bool:
        """True when the latest record of this input is of these exact bytes (and companions), with
        these settings, and nothing in it failed (an input changed and changed back is processed),
        and no session of it is held by the mass latch (--allow-shrink may now decide otherwise)."""
        row = self.latest.get(source_key)
        return (row is not None and row == (sha256, fingerprint, context_sha256, row[3], 0)
                and row[3] in (FileStatus.OK, FileStatus.PARTIAL, FileStatus.SKIPPED)
                and source_key not in self.latched)

    def same_bytes(self, source_key: str, size: int, raw_sha256: str) -> str | None:
        """The sha256 of the decoded text the latest record of this input holds, when that record is of
        these raw bytes (the same size and raw sha256): the text is then the same without decoding it.
        None otherwise, also for a record written before raw hashes were kept (proven by decoding)."""
        if self.raw.get(source_key) != raw_sha256 or not self.sized(source_key, size):
            return None
        return self.latest[source_key][0]

    def recorded_raw(self, source_key: str) -> bool:
        """Whether the latest record of this input holds its raw bytes' sha256."""
        return source_key in self.raw

    def held(self, source_key: str) -> bool:
        return source_key in self.latched

    def sized(self, source_key: str, size: int) -> bool:
        """Whether the latest record of this input has this size (an input of another size changed:
        no need to hash it to know)."""
        return self.sizes.get(source_key) == size


# -- reading rows ----------------------------------------------------------------------------------
Row = TypeVar("Row")


def fetch(db: sqlite3.Connection, cls: type[Row], sql: str, args: Iterable[Any] = ()) -> list[Row]:
    """The rows of ``sql`` as ``cls``, each column into the field of its name (enums and reason
    lists converted: see ``_converters``)."""
    cur = db.execute(sql, tuple(args))
    names = [c[0] for c in cur.description]
    convert = _converters(cls)
    return [cls(**{n: (convert[n](v) if n in convert and v is not None else v)
                   for n, v in zip(names, row, strict=True)}) for row in cur.fetchall()]


@functools.cache
def _converters(cls: type) -> dict[str, Any]:
    """Field name -> what turns its column's value into the field's type: an enum by its value, a
    tuple of strings from SQLite's comma-joined text."""
    out: dict[str, Any] = {}
    for name, hint in typing.get_type_hints(cls).items():
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            out[name] = hint
        elif hint == tuple[str, ...]:
            out[name] = _split
    return out


def _split(text: str) -> tuple[str, ...]:
    return tuple(filter(None, text.split(",")))


def chunks(keys: Iterable[str]) -> Iterator[list[str]]:
    """Sorted distinct keys in chunks of ``KEYS_PER_QUERY``, each bound in one query."""
    keys = sorted(set(keys))
    for start in range(0, len(keys), KEYS_PER_QUERY):
        yield keys[start:start + KEYS_PER_QUERY]


def marks(chunk: list[str]) -> str:
    """The placeholders of one chunk of keys, ``?,?,?``."""
    return ",".join("?" * len(chunk))
