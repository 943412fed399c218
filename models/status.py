"""One status vocabulary for files, sessions and runs, shared by the core, the ledger and the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FileStatus(StrEnum):
    """What became of one input file in one run."""

    OK = "ok"  # every session written
    PARTIAL = "partial"  # some sessions written; see the file's and the sessions' reasons
    QUARANTINED = "quarantined"  # nothing written; see the reasons
    SKIPPED = "skipped"  # unchanged since an earlier run that did not fail
    COMPANION = "companion"  # a context file for its folder's inputs (Slack's users.json)
    IGNORED = "ignored"  # not an input by rule (hidden name, system file, the output root); detail names the rule
    MISSING = "missing"  # asked for by a rerun but no longer there (reason source_missing)


class SessionStatus(StrEnum):
    """What became of one session."""

    OK = "ok"
    PARTIAL = "partial"
    QUARANTINED = "quarantined"


class RunStatus(StrEnum):
    """The state of a run in the ledger."""

    RUNNING = "running"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"  # stopped by Ctrl-C, SIGTERM or a kill; what was written is recorded
    FAILED = "failed"  # stopped by an error (a full disk...); what was written is recorded
    CRASHED = "crashed"  # stopped by a bug


class DocumentMark(StrEnum):
    """A document kept on disk whose source no longer produces it (never deleted without the
    confirmation rule; the ledger, the datasets, ``status`` and the report say so)."""

    SOURCE_MISSING = "source_missing"  # its input is gone from the run's paths
    SUPERSEDED = "superseded"  # its input no longer holds this session (a conversation removed)


WRITTEN = (SessionStatus.OK, SessionStatus.PARTIAL)


class RunOutcome(StrEnum):
    """What an alert says of a run that needs attention (``reconstruct.run.<outcome>``, flows/alerts.py)."""

    QUARANTINED = "quarantined"  # it finished but quarantined an input or a session
    CRASHED = "crashed"  # it raised
    INTERRUPTED = "interrupted"  # Ctrl-C, SIGTERM or a cancellation stopped it


@dataclass(frozen=True, slots=True)
class RunCounts:
    """What a run recorded, counted from the ledger's rows (``Runs.counts``)."""

    files: int = 0
    files_skipped: int = 0
    files_quarantined: int = 0  # inputs with a reason of their own
    files_failed: int = 0  # inputs with a reason of their own or of one of their sessions
    files_companion: int = 0
    files_ignored: int = 0
    files_missing: int = 0
    sessions_ok: int = 0
    sessions_partial: int = 0
    sessions_quarantined: int = 0
    interactions: int = 0  # of the documents the run left, each once
    sessions_unaccounted: int = 0
    unaccounted_source: int = 0
    drift_items: int = 0

    @property
    def quarantined_any(self) -> bool:
        """The run quarantined an input or a session (exit 3, an alert)."""
        return bool(self.files_quarantined or self.sessions_quarantined)
