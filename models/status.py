"""One status vocabulary for files, sessions and runs, shared by the core, the ledger and the CLI."""

from __future__ import annotations

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
