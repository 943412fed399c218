"""What a run returns: its id, how it ended, its counts and its quarantine, as one typed value."""

from __future__ import annotations

from dataclasses import dataclass

from audit.ledger import QuarantineEntry
from audit.publication import Published
from models.status import RunCounts, RunStatus


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A finished run (``flows.pipeline.reconstruct``, the ``reconstruct-archive`` flow)."""

    run_id: str
    status: RunStatus  # completed or interrupted (a run that raised returns nothing)
    counts: RunCounts
    quarantined: list[QuarantineEntry]
    seconds: float
    shards: int
    written: int  # documents written or replaced
    temporaries_removed: int  # left behind by an unfinished run before this one
    ledger: str  # the ledger's path
    datasets_unpublished: str | None = None  # why the current tables could not be published
    published: Published = Published.REWRITTEN  # what became of the current tables (only the runs table...)
