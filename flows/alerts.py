"""Alerts for the operator: a Prefect event for every run that needs attention, and the automation
that turns those events into a notification.

A run that quarantined anything emits ``reconstruct.run.quarantined``; one that raised emits
``reconstruct.run.crashed``; one stopped by Ctrl-C, SIGTERM or a cancellation emits
``reconstruct.run.interrupted``. Each carries the run id, the archive and the ledger's counts.
``reconstruct alerts --webhook URL`` (or ``--block TYPE/NAME`` for a notification block that already
exists, e.g. ``slack-webhook/ops``) installs the automation ``AUTOMATION_NAME``, which sends one
notification per such event.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

from models.status import RunCounts, RunOutcome

OUTCOMES = tuple(RunOutcome)
EVENT_PREFIX = "reconstruct.run."
AUTOMATION_NAME = "reconstruct: run needs attention"
WEBHOOK_BLOCK = "reconstruct-alerts"
SUBJECT = "reconstruct {{ event.payload.archive }}: run {{ event.payload.run_id }} {{ event.payload.outcome }}"
BODY = (  # the facts last: a long error must not push them out of a notification that keeps the tail
    "{{ event.payload.error }}\n"
    "Next: reconstruct quarantine --out {{ event.payload.out }}\n"
    "Run {{ event.payload.run_id }} of {{ event.payload.archive }} {{ event.payload.outcome }}: "
    "files {{ event.payload.counts.files }} ({{ event.payload.counts.files_quarantined }} quarantined); "
    "sessions ok {{ event.payload.counts.sessions_ok }}, partial {{ event.payload.counts.sessions_partial }}, "
    "quarantined {{ event.payload.counts.sessions_quarantined }}."
)


def outcome_of(exc: BaseException) -> RunOutcome:
    """interrupted for a stop from outside (Ctrl-C, SIGTERM, cancellation), crashed for anything else."""
    from prefect.exceptions import TerminationSignal

    if isinstance(exc, KeyboardInterrupt | SystemExit | asyncio.CancelledError | TerminationSignal):
        return RunOutcome.INTERRUPTED
    return RunOutcome.CRASHED


def ledger_counts(ledger_path: Path, run_id: str) -> RunCounts | None:
    """The counts the ledger holds for a run that did not finish (None when there is no ledger)."""
    from audit.ledger import Ledger

    if not ledger_path.is_file():
        return None
    ledger = Ledger(ledger_path)
    try:
        return ledger.runs.counts(run_id)
    finally:
        ledger.close()


def emit_run_event(outcome: RunOutcome, run_id: str, archive: str, out: str, counts: RunCounts | None,
                   error: str = ""):
    """Send ``reconstruct.run.<outcome>`` (the flow run and flow are attached as related resources)."""
    from prefect.events import emit_event

    return emit_event(
        event=f"{EVENT_PREFIX}{outcome}",
        resource={"prefect.resource.id": f"{EVENT_PREFIX}{run_id}", "prefect.resource.name": f"{archive} {run_id}",
                  "reconstruct.archive": archive},
        payload={"run_id": run_id, "archive": archive, "outcome": str(outcome), "out": out,
                 "counts": asdict(counts) if counts is not None else {},
                 "error": error[:2000]},
    )


def automation(block_document_id) -> Any:
    """The automation as code: one notification through the block for each event of a bad run."""
    from prefect.events.actions import SendNotification
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture

    return AutomationCore(
        name=AUTOMATION_NAME,
        description="Notify when a reconstruct run quarantines anything, crashes or is interrupted.",
        trigger=EventTrigger(expect={f"{EVENT_PREFIX}{o}" for o in OUTCOMES},
                             match={"prefect.resource.id": f"{EVENT_PREFIX}*"},
                             posture=Posture.Reactive, threshold=1, within=timedelta(0)),
        actions=[SendNotification(block_document_id=block_document_id, subject=SUBJECT, body=BODY)],
    )


def webhook_block(url: str):
    """A notification block that POSTs ``{"subject": ..., "body": ...}`` as JSON to ``url``."""
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    block = CustomWebhookNotificationBlock(name=WEBHOOK_BLOCK, url=url,
                                           json_data={"subject": "{{subject}}", "body": "{{body}}"})
    block.save(WEBHOOK_BLOCK, overwrite=True)
    return block._block_document_id


def existing_block(slug: str):
    """The id of a saved notification block named ``TYPE/NAME`` (e.g. ``slack-webhook/ops``)."""
    from prefect.blocks.core import Block

    return Block.load(slug)._block_document_id


def install(block_document_id) -> Any:
    """Create the automation, replacing an earlier one of the same name; returns its id."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        for old in client.read_automations_by_name(AUTOMATION_NAME):
            client.delete_automation(old.id)
        return client.create_automation(automation(block_document_id))
