"""Audit-trail commands: sessions, history, revert, verify, diff, apply-diff, export and report.

Destructive commands (revert, apply-diff) change nothing until the exact confirmation string
(seed 000) is typed at the prompt or given with ``--confirm``; anything else aborts with a
non-zero exit and no side effect.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from audit.revisions import RevisionError

EXIT_PROBLEM = 1
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output root of the runs.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="TOML config file (default ./reconstruct.toml).")]
ConfirmOpt = Annotated[str | None, typer.Option("--confirm", help="The exact confirmation string (else prompted).")]


def _err(message: str) -> None:
    typer.echo(message, err=True)


@contextmanager
def _ledger(out: Path, config: Path | None, *, write: bool = False):
    """The run ledger of OUT (read-only unless ``write``); a RevisionError inside the block, or a
    missing or unreadable ledger, becomes one line and exit 1."""
    from audit.ledger import Ledger, LedgerError, ledger_path_for
    from flows.cli import load_settings

    path = ledger_path_for(out, load_settings(config))
    if not path.is_file():
        _err(f"no ledger at {path}: nothing has run into {out}")
        raise typer.Exit(EXIT_PROBLEM)
    try:
        ledger = Ledger(path, read_only=not write)
    except LedgerError as exc:
        _err(str(exc))
        raise typer.Exit(EXIT_PROBLEM) from None
    try:
        yield ledger
    except RevisionError as exc:  # every audit command reports a revision problem the same way
        _err(str(exc))
        raise typer.Exit(EXIT_PROBLEM) from None
    finally:
        ledger.close()


def confirmed(expected: str, given: str | None) -> bool:
    """True only for the exact string, typed or passed; an empty or closed stdin is a no."""
    if given is None:
        _err(f"This replaces a document. Type exactly: {expected}")
        try:
            given = input("> ") if sys.stdin is not None else ""
        except EOFError:
            given = ""
    if given != expected:
        _err(f"aborted: confirmation did not match {expected!r}; nothing changed")
        return False
    return True


def history(
    session: Annotated[str, typer.Argument(help="Document path under OUT (sessions/...) or a session id.")],
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
) -> None:
    """Revisions of a document, newest first: rev, ts, note, sha256."""
    from audit import revisions
    from flows.cli import show_rows

    with _ledger(out, config) as ledger:
        rel = revisions.resolve(ledger, out, session)
        rows = revisions.history(ledger, rel)
    show_rows(["rev", "ts", "note", "sha256"], [[f"v{r['rev']}", r["ts"], r["note"], r["sha256"]] for r in rows],
              title=rel)


def revert(
    session: Annotated[str, typer.Argument(help="Document path under OUT (sessions/...) or a session id.")],
    to: Annotated[str, typer.Option("--to", help="Revision to restore (v0, v1, ...).")],
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
    confirm: ConfirmOpt = None,
) -> None:
    """Restore an earlier revision, as a new revision; asks for CONFIRM REVERT <SESSION> <vK>."""
    from audit import revisions

    with _ledger(out, config, write=True) as ledger:
        rel = revisions.resolve(ledger, out, session)
        target = revisions.revision(ledger, rel, to)
        revisions.check_current(ledger, out, rel)
        rev = f"v{target['rev']}"
        if not confirmed(f"CONFIRM REVERT {session} {rev}", confirm):
            raise typer.Exit(EXIT_PROBLEM)
        new = revisions.revert(ledger, out, rel, rev)
    typer.echo(f"{rel}: v{new} = revert->{rev}")


def verify(out: OutOpt = Path("output"), config: ConfigOpt = None) -> None:
    """Check every document against the revision index and every blob against its name."""
    from audit import revisions

    with _ledger(out, config) as ledger:
        problems = revisions.verify(ledger, out)
        checked = len(ledger.latest_revisions())
    for p in problems:
        typer.echo(p)
    if problems:
        _err(f"{len(problems)} mismatches")
        raise typer.Exit(EXIT_PROBLEM)
    _err(f"ok: {checked} documents and their blobs match the index")


def diff(
    session: Annotated[str, typer.Argument(help="Document path under OUT (sessions/...) or a session id.")],
    rev_a: Annotated[str, typer.Argument(help="Base revision (vA).")],
    rev_b: Annotated[str, typer.Argument(help="Result revision (vB).")],
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
) -> None:
    """Print one clean diff_json_v1 object turning revision vA into vB (nothing else on stdout)."""
    from audit import revisions
    from validators.diffjson import dumps, make_diff

    with _ledger(out, config) as ledger:
        rel = revisions.resolve(ledger, out, session)
        a = revisions.get_blob(out, revisions.revision(ledger, rel, rev_a)["sha256"])
        b = revisions.get_blob(out, revisions.revision(ledger, rel, rev_b)["sha256"])
    sys.stdout.write(dumps(make_diff(a.decode("utf-8"), b.decode("utf-8"), rel)) + "\n")


def apply_diff(
    diff_file: Annotated[Path, typer.Argument(help="A diff_json_v1 file.")],
    to: Annotated[str, typer.Option("--to", help="Document path under OUT (sessions/...) or a session id.")],
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
    confirm: ConfirmOpt = None,
) -> None:
    """Validate a diff and apply it to the latest revision as a new revision; asks for
    CONFIRM APPLY-DIFF <SESSION> <vN> (vN: the latest revision it applies to)."""
    from audit import revisions
    from validators.diffjson import DiffError, apply, validate

    try:
        raw = diff_file.read_bytes()
    except OSError as exc:
        _err(f"cannot read {diff_file}: {exc}")
        raise typer.Exit(EXIT_PROBLEM) from None
    with _ledger(out, config, write=True) as ledger:
        try:
            rel = revisions.resolve(ledger, out, to)
            latest = revisions.check_current(ledger, out, rel)
            base = revisions.get_blob(out, latest["sha256"]).decode("utf-8")
            # checksum before ranges: a diff made for another base is reported as such
            result = apply(validate(raw), base).encode("utf-8")
            _gate(result)
            rev = f"v{latest['rev']}"
            if not confirmed(f"CONFIRM APPLY-DIFF {to} {rev}", confirm):
                raise typer.Exit(EXIT_PROBLEM)
            new = revisions.commit(ledger, out, rel, result, f"apply-diff on {rev} ({diff_file.name})")
        except DiffError as exc:
            _err(f"refused: {exc}")
            raise typer.Exit(EXIT_PROBLEM) from None
    typer.echo(f"{rel}: v{new} = apply-diff on {rev}")


def export(
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
    format: Annotated[str, typer.Option("--format", help="parquet | csv | jsonl")] = "parquet",
    to: Annotated[Path | None, typer.Option("--to", help="Folder to write into (default OUT/datasets).")] = None,
    table: Annotated[str | None, typer.Option("--table", help="sessions | turns | reconciliation (default all).")
                     ] = None,
    out_file: Annotated[Path | None, typer.Option("--out-file", help="Write the one --table here.")] = None,
) -> None:
    """Write the sessions, turns and reconciliation tables (one row per session document, per
    interaction, and per snapshot of a session key)."""
    from audit.datasets import EXPORT_TABLES, FORMATS, write
    from audit.ledger import Ledger, ledger_path_for
    from flows.cli import load_settings

    if format not in FORMATS:
        _err(f"unknown format {format!r}: parquet, csv or jsonl")
        raise typer.Exit(2)
    if table is not None and table not in EXPORT_TABLES:
        _err(f"unknown table {table!r}: sessions, turns or reconciliation")
        raise typer.Exit(2)
    if out_file is not None and table is None:
        table = "sessions" if "turn" not in out_file.name else "turns"
        _err(f"--out-file without --table: writing the {table} table")
    lpath = ledger_path_for(out, load_settings(config))
    if not (out / "sessions").is_dir():
        _err(f"no documents under {out}/sessions: nothing to export")
        raise typer.Exit(EXIT_PROBLEM)
    ledger = Ledger(lpath, read_only=True) if lpath.is_file() else None
    problems: list[str] = []
    try:
        paths = write(out, format, to, ledger=ledger, table=table, out_file=out_file, problems=problems)
    finally:
        if ledger is not None:
            ledger.close()
    for problem in problems:
        _err(problem)
    for path in paths:
        typer.echo(str(path))


def report(
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
    run_id: Annotated[str | None, typer.Option("--run", help="Which run (default the latest).")] = None,
    out_file: Annotated[Path | None, typer.Option("--out-file", help="Default OUT/report.html.")] = None,
) -> None:
    """Write a self-contained HTML audit report (inline SVG charts) from the ledger and datasets."""
    from audit.report import ReportError, write_report

    with _ledger(out, config) as ledger:
        try:
            path = write_report(out, ledger, run_id, out_file)
        except ReportError as exc:
            _err(str(exc))
            raise typer.Exit(EXIT_PROBLEM) from None
    typer.echo(str(path))


def sessions(
    key: Annotated[str | None, typer.Option("--key", help="Only this session key (<platform>:<id>).")] = None,
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document instead of a table.")] = False,
) -> None:
    """Sessions by key: each one's document, its snapshots (the exports it was read from) and counts."""
    from audit import links
    from flows.cli import show_rows

    with _ledger(out, config) as ledger:
        rows = ledger.listing(key)
        for r in rows:  # "possibly the same conversation": evidence short of proof (reconstruct link / unlink)
            r["possiblySame"] = links.possibly_same(ledger, r["key"])
    if key is not None and not rows:
        _err(f"no session with key {key!r}")
        raise typer.Exit(EXIT_PROBLEM)
    if as_json:
        import orjson

        typer.echo(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode())
        return
    show_rows(["key", "path", "snapshot", "sha256", "first", "last", "messages", "new/unchanged/absent/edited"],
              [[r["key"], r["path"], s["source_path"], s["sha256"][:12], s["first"] or "-", s["last"] or "-",
                str(s["messages"]), "/".join(str(r["counts"][c]) for c in ("new", "unchanged", "absent", "edited"))]
               for r in rows for s in r["snapshots"] or [_NO_SNAPSHOT]], title="Sessions by key")
    linked = [[r["key"], x["key"], x["evidence"]] for r in rows for x in r["possiblySame"] if r["key"] < x["key"]]
    if linked:
        show_rows(["key", "possibly the same as", "evidence"], linked, title="Possibly the same conversation")


_NO_SNAPSHOT = {"source_path": "-", "sha256": "-", "first": None, "last": None, "messages": "-"}


def register(app: typer.Typer) -> None:
    """Add this module's commands to the ``reconstruct`` app."""
    app.command()(sessions)
    app.command()(history)
    app.command()(revert)
    app.command()(verify)
    app.command()(diff)
    app.command("apply-diff")(apply_diff)
    app.command()(export)
    app.command()(report)


def _gate(result: bytes) -> None:
    """A diff may only produce a document the gate accepts: the sessions folder holds no other."""
    import orjson

    from models.errors import Reason
    from validators import gate
    from validators.diffjson import DiffError

    try:
        doc = orjson.loads(result)
    except orjson.JSONDecodeError as exc:
        raise DiffError(Reason.JSON_SYNTAX, f"the patched document is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DiffError(Reason.SCHEMA, "the patched document is not a JSON object")
    try:
        counted = doc["artifacts"]["ai_protocol_performance"]["sourceTurnCount"]
    except (KeyError, TypeError):
        counted = -1
    checked = gate.check(doc, result, counted if isinstance(counted, int) else -1)
    if not checked.passed:
        first = "; ".join(f"{f.reason.value} at {f.path}: {f.message}" for f in checked.failures[:3])
        raise DiffError(checked.failures[0].reason, f"the patched document fails the gate: {first}")
