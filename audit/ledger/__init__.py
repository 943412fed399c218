"""The run ledger: an embedded SQLite database of runs, input files, sessions and what became of them.

``Ledger`` (store.py) owns the connection; one repository per family of tables reads and writes
through it (``ledger.runs``, ``ledger.inputs``, ``ledger.sessions``, ``ledger.quarantine``,
``ledger.revisions``, ``ledger.snapshots``, ``ledger.aliases``, ``ledger.links``, ``ledger.meta``);
schema.py holds the tables and their migrations, rows.py the rows as types, errors.py ``LedgerError``.
"""

from .errors import LedgerError, sqlite_reason
from .revisions import MOVED_TO
from .rows import (
    DriftItem,
    Failed,
    FailedSource,
    FileRecord,
    FileRow,
    KeyCounts,
    KeyedSession,
    KeyListing,
    PriorRuns,
    QuarantineEntry,
    ReconciliationRecord,
    ReconciliationRow,
    RevisionRecord,
    RevisionRow,
    RunRecord,
    SessionRecord,
    SessionRow,
    SnapshotRecord,
    SnapshotRow,
    SnapshotSummary,
    SourceSeen,
)
from .schema import SCHEMA_VERSION
from .store import JOURNAL_MODE, RESERVE_BYTES, Ledger, ledger_path_for

__all__ = [
    "JOURNAL_MODE", "MOVED_TO", "RESERVE_BYTES", "SCHEMA_VERSION", "DriftItem", "Failed", "FailedSource",
    "FileRecord", "FileRow", "KeyCounts", "KeyListing", "KeyedSession", "Ledger", "LedgerError", "PriorRuns",
    "QuarantineEntry", "ReconciliationRecord", "ReconciliationRow", "RevisionRecord", "RevisionRow", "RunRecord",
    "SessionRecord", "SessionRow", "SnapshotRecord", "SnapshotRow", "SnapshotSummary", "SourceSeen",
    "ledger_path_for", "sqlite_reason",
]
