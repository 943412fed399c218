"""Commands that say whether two session keys are one conversation: link, unlink and forget (#25).

Evidence short of proof leaves two documents with a "possibly the same conversation" link
(``reconstruct sessions`` lists them). A person decides: ``link A B`` (one conversation: the next run
merges them), ``unlink A B`` (two conversations: never merged, and a merge made on evidence is undone:
each key's own snapshots go back to it and the next run writes both documents again), ``forget A B``
(back to the evidence). Each decision is kept in the ledger with who, when and why (audit/ledger/links.py);
the latest for a pair wins, so every decision can be reverted by another.
"""

from __future__ import annotations

import getpass
import time
from pathlib import Path
from typing import Annotated

import typer

from ..exits import ExitCode, fail
from .trail import ConfigOpt, OutOpt, _ledger

KeyArg = Annotated[str, typer.Argument(help="A session key (<platform>:<id>), as `reconstruct sessions` lists it.")]
WhyOpt = Annotated[str, typer.Option("--why", help="Why (kept in the ledger with the decision).")]
WhoOpt = Annotated[str | None, typer.Option("--who", help="Who decides (default: the login name).")]


def link(a: KeyArg, b: KeyArg, why: WhyOpt, out: OutOpt = Path("output"), config: ConfigOpt = None,
         who: WhoOpt = None) -> None:
    """Say two keys are one conversation: the next run merges their documents."""
    from audit.ledger.links import Decision

    _decide(a, b, Decision.SAME, why, who, out, config)
    typer.echo(f"{a} and {b}: one conversation (merged by the next run)")


def unlink(a: KeyArg, b: KeyArg, why: WhyOpt, out: OutOpt = Path("output"), config: ConfigOpt = None,
           who: WhoOpt = None) -> None:
    """Say two keys are two conversations: never merged; a merge made on evidence is undone by the next run."""
    from audit.ledger.links import Decision

    _decide(a, b, Decision.DIFFERENT, why, who, out, config)
    typer.echo(f"{a} and {b}: two conversations (written apart by the next run)")


def forget(a: KeyArg, b: KeyArg, why: WhyOpt, out: OutOpt = Path("output"), config: ConfigOpt = None,
           who: WhoOpt = None) -> None:
    """Withdraw a decision on two keys: the evidence decides again."""
    from audit.ledger.links import Decision

    _decide(a, b, Decision.UNDECIDED, why, who, out, config)
    typer.echo(f"{a} and {b}: back to the evidence")


def _decide(a: str, b: str, decision, why: str, who: str | None, out: Path, config: Path | None) -> None:
    from audit.ledger.links import Decision, Say

    if a == b:
        fail("name two different keys", ExitCode.USAGE)
    with _ledger(out, config, write=True) as ledger:
        known = {r.session_key for r in ledger.sessions.keyed()} | set(ledger.aliases.of([a, b]))
        missing = [k for k in (a, b) if k not in known]
        if missing:
            fail(f"no session with key {missing[0]!r}", ExitCode.NOT_FOUND)
        if decision == Decision.DIFFERENT:
            _separate(ledger, out, a, b)
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        ledger.links.decide(Say(a, b, decision, who or getpass.getuser(), at, why))


def _separate(ledger, out: Path, a: str, b: str) -> None:
    """Undo a merge of the pair: each key of it that was resolved into the other (or into the same
    third key) gets back the snapshots whose own document carries its key."""
    from audit import revisions

    from ..core.snapshots import envelope

    resolved = ledger.aliases.of([a, b])
    for key, other in ((a, b), (b, a)):
        canonical = resolved.get(key)
        if canonical is None or canonical not in (other, resolved.get(other)):
            continue
        rows = ledger.snapshots.of([canonical]).get(canonical, [])
        own = [r.source_sha256 for r in rows
               if envelope(revisions.get_blob(out, r.blob_sha256))["artifacts"]["ByggLogg"]["sessionKey"] == key]
        ledger.aliases.remove(key, own)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the ``reconstruct`` app."""
    app.command()(link)
    app.command()(unlink)
    app.command()(forget)
