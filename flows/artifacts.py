"""What the Prefect UI shows of a run: its name and tags, a markdown summary and a quarantine table.

The flow run is named after its archive and the ledger's run id (``sample_logs 20261123T020000Z-ab12cd``)
and tagged ``reconstruct`` and ``archive:<name>``, so a night's run is found by what it read.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from normalizers.secrets import scrub_name

if TYPE_CHECKING:
    from audit.ledger import FileRecord, QuarantineEntry

    from .summary import RunSummary

SUMMARY_KEY = "reconstruct-run-summary"
QUARANTINE_KEY = "reconstruct-quarantine"
SLOWEST = 10
TABLE_ROWS = 500


def archive_name(paths: list[str]) -> str:
    """The archive's name: its first path's name (any secret in it redacted, as in every name the
    run records: it names the flow run in Prefect's database), and how many more paths there are."""
    names = [scrub_name(Path(p).name or str(p)) for p in paths]
    if not names:
        return "nothing"
    return names[0] if len(names) == 1 else f"{names[0]}+{len(names) - 1}"


def run_tags(paths: list[str]) -> list[str]:
    return ["reconstruct", f"archive:{archive_name(paths)}"]


def flow_run_name(paths: list[str], run_id: str) -> str:
    return f"{archive_name(paths)} {run_id}"


def name_flow_run(paths: list[str], run_id: str) -> str:
    """Rename and tag the current flow run (keeping the tags it has) unless it was created so (as
    ``run_archive`` creates it: a call to the API saved); returns the name."""
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext

    name = flow_run_name(paths, run_id)
    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        return name
    tags = sorted({*ctx.flow_run.tags, *run_tags(paths)})
    if ctx.flow_run.name == name and set(tags) == set(ctx.flow_run.tags):
        return name
    with get_client(sync_client=True) as client:
        client.update_flow_run(ctx.flow_run.id, name=name, tags=tags)
    return name


def reason_counts(quarantined: list[QuarantineEntry]) -> Counter:
    return Counter(r for q in quarantined for r in q.reasons)


def summary_markdown(summary: RunSummary, slowest: list[FileRecord]) -> str:
    """Counts, quarantine reasons and the slowest files of a run."""
    c, run_id = summary.counts, summary.run_id
    lines = [
        f"# reconstruct run {run_id}",
        "",
        "| files | skipped | files quarantined | sessions ok | partial | quarantined | seconds |",
        "|---|---|---|---|---|---|---|",
        f"| {c.files} | {c.files_skipped} | {c.files_quarantined} | {c.sessions_ok} "
        f"| {c.sessions_partial} | {c.sessions_quarantined} | {summary.seconds:.2f} |",
        "",
        f"Current tables: {summary.published}.",
        "",
        "## Quarantine reasons",
        "",
    ]
    reasons = reason_counts(summary.quarantined)
    if reasons:
        lines += ["| reason | count |", "|---|---|"]
        lines += [f"| {reason} | {n} |" for reason, n in reasons.most_common()]
    else:
        lines.append("Nothing quarantined.")
    lines += ["", f"## Slowest files (top {SLOWEST})", "",
              "| file | status | sessions | seconds |", "|---|---|---|---|"]
    lines += [f"| {f.source_path} | {f.status} | {f.sessions} | {f.seconds or 0:.3f} |" for f in slowest]
    return "\n".join(lines)


def quarantine_rows(quarantined: list[QuarantineEntry]) -> list[dict[str, str]]:
    return [{"what": str(q.what), "source": q.source_path, "session": q.session_id or "",
             "reasons": ",".join(q.reasons), "detail": (q.detail or "")[:300]}
            for q in quarantined[:TABLE_ROWS]]


def slowest_files(ledger_path: str, run_id: str, n: int = SLOWEST) -> list[FileRecord]:
    from audit.ledger import Ledger

    ledger = Ledger(Path(ledger_path))
    try:
        return ledger.inputs.slowest(run_id, n)  # not every row of the run read back
    finally:
        ledger.close()


def publish(summary: RunSummary) -> None:
    """The run's markdown summary and, when something was quarantined, the quarantine table."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    slowest = slowest_files(summary.ledger, summary.run_id)
    create_markdown_artifact(key=SUMMARY_KEY, markdown=summary_markdown(summary, slowest),
                             description=f"Run {summary.run_id}: counts, quarantine reasons, slowest files")
    if summary.quarantined:
        create_table_artifact(key=QUARANTINE_KEY, table=quarantine_rows(summary.quarantined),
                              description=f"Run {summary.run_id}: every quarantined input and session")
