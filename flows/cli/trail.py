"""Audit-trail commands: sessions, history, revert, verify, diff, apply-diff, export and report.

Destructive commands (revert, apply-diff) change nothing until the exact confirmation string
(seed 000) is typed at the prompt or given with ``--confirm``; anything else aborts with a
non-zero exit and no side effect.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..exits import ExitCode, fail
from . import views

if TYPE_CHECKING:
    from audit.ledger import KeyListing

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output root of the runs.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="TOML config file (default ./reconstruct.toml).")]
ConfirmOpt = Annotated[str | None, typer.Option("--confirm", help="The exact confirmation string (else prompted).")]
JsonOpt = views.JsonOpt
SessionArg = Annotated[str, typer.Argument(help="The document: its path under OUT (sessions/...), its path as the "
                                                "shell completes it (OUT/sessions/...), or its session id.")]


def _err(message: str) -> None:
    typer.echo(message, err=True)


def _ledger(out: Path, config: Path | None, *, write: bool = False):
    """The run ledger of OUT (read-only unless ``write``); errors end as one line and their exit code."""
    from .app import read_ledger

    return read_ledger(out, config, write=write)


def _resolve(ledger, out: Path, session: str, as_json: bool = False) -> str:
    """The document SESSION names; when a session id names several, they are listed (path, key, session
    id) on stdout and the command exits AMBIGUOUS."""
    from audit import revisions

    try:
        return revisions.resolve(ledger, out, session)
    except revisions.AmbiguousDocument as exc:
        keys = {r.output_path: r.session_key for r in ledger.sessions.keyed()}
        view = views.MatchesView(session=session, matches=[
            views.MatchRow(path=p, key=keys.get(p), session_id=Path(p).stem) for p in exc.matches])
        views.show(view, view.matches, views.MatchRow, as_json, title=f"{session!r} names {len(exc.matches)} documents")
        fail(f"{session!r} names {len(exc.matches)} documents: give one of their paths", ExitCode.AMBIGUOUS)


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


def history(session: SessionArg, out: OutOpt = Path("output"), config: ConfigOpt = None,
            as_json: JsonOpt = False) -> None:
    """Revisions of a document, newest first: rev, ts, note, sha256."""
    from audit import revisions

    with _ledger(out, config) as ledger:
        rel = _resolve(ledger, out, session, as_json)
        view = views.HistoryView(document=rel, revisions=[
            views.RevisionRow(rev=f"v{r.rev}", ts=r.ts, note=r.note, sha256=r.sha256)
            for r in revisions.history(ledger, rel)])
    views.show(view, view.revisions, views.RevisionRow, as_json, title=rel)


def revert(
    session: SessionArg,
    to: Annotated[str, typer.Option("--to", help="Revision to restore (v0, v1, ...).")],
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
    confirm: ConfirmOpt = None,
) -> None:
    """Restore an earlier revision, as a new revision; asks for CONFIRM REVERT <SESSION> <vK>."""
    from audit import revisions

    with _ledger(out, config, write=True) as ledger:
        rel = _resolve(ledger, out, session)
        target = revisions.revision(ledger, rel, to)
        revisions.check_current(ledger, out, rel)
        rev = f"v{target.rev}"
        if not confirmed(f"CONFIRM REVERT {session} {rev}", confirm):
            raise typer.Exit(ExitCode.PROBLEM)
        new = revisions.revert(ledger, out, rel, rev)
    typer.echo(f"{rel}: v{new} = revert->{rev}")


def verify(out: OutOpt = Path("output"), config: ConfigOpt = None, as_json: JsonOpt = False) -> None:
    """Check every document against the revision index and every blob against its name."""
    from audit import revisions

    with _ledger(out, config) as ledger:
        view = views.VerifyView(problems=revisions.verify(ledger, out), checked=len(ledger.revisions.latest()))
    if as_json:
        typer.echo(views.dumps(view), nl=False)
    for p in [] if as_json else view.problems:
        typer.echo(p)
    if view.problems:
        fail(f"{len(view.problems)} mismatches", ExitCode.PROBLEM)
    _err(f"ok: {view.checked} documents and their blobs match the index")


class DiffFormat(StrEnum):
    UNIFIED = "unified"
    DIFF_JSON_V1 = "diff_json_v1"


def diff(
    session: SessionArg,
    rev_a: Annotated[str, typer.Argument(help="Base revision (vA).")],
    rev_b: Annotated[str, typer.Argument(help="Result revision (vB).")],
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
    format: Annotated[DiffFormat, typer.Option("--format", help="unified: the interactions, as diff -u shows "
                                               "lines; diff_json_v1: the patch apply-diff takes.")
                      ] = DiffFormat.UNIFIED,
    as_json: JsonOpt = False,
) -> None:
    """Show how revision vA of a document became vB: its interactions as a unified diff (speaker, time,
    content), or the diff_json_v1 patch (nothing else on stdout)."""
    from audit import convdiff, revisions
    from validators.diffjson import dumps, make_diff

    with _ledger(out, config) as ledger:
        rel = _resolve(ledger, out, session, as_json)
        a = revisions.get_blob(out, revisions.revision(ledger, rel, rev_a).sha256)
        b = revisions.get_blob(out, revisions.revision(ledger, rel, rev_b).sha256)
        if format is DiffFormat.DIFF_JSON_V1:
            sys.stdout.write(dumps(make_diff(a.decode("utf-8"), b.decode("utf-8"), rel)) + "\n")
            return
        result = convdiff.compare(rel, rev_a, convdiff.turns(a, f"{rel} {rev_a}"),
                                  rev_b, convdiff.turns(b, f"{rel} {rev_b}"))
    sys.stdout.write(views.dumps(result) if as_json else convdiff.unified(result))


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
        fail(f"cannot read {diff_file}: {exc.strerror or exc}", ExitCode.CANNOT_START)
    with _ledger(out, config, write=True) as ledger:
        try:
            rel = _resolve(ledger, out, to)
            latest = revisions.check_current(ledger, out, rel)
            base = revisions.get_blob(out, latest.sha256).decode("utf-8")
            # checksum before ranges: a diff made for another base is reported as such
            result = apply(validate(raw), base).encode("utf-8")
            _gate(result)
            rev = f"v{latest.rev}"
            if not confirmed(f"CONFIRM APPLY-DIFF {to} {rev}", confirm):
                raise typer.Exit(ExitCode.PROBLEM)
            new = revisions.commit(ledger, out, rel, result, f"apply-diff on {rev} ({diff_file.name})")
        except DiffError as exc:
            fail(f"refused: {exc}", ExitCode.PROBLEM)
    typer.echo(f"{rel}: v{new} = apply-diff on {rev}")


def export(
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
    format: Annotated[str, typer.Option("--format", help="parquet | csv | jsonl")] = "parquet",
    to: Annotated[Path | None, typer.Option("--to", help="Folder to write into (default OUT/datasets).")] = None,
    table: Annotated[str | None, typer.Option("--table", help="sessions | turns | quarantine | runs | reconciliation "
                                              "| revisions | links | terms (default all).")] = None,
    out_file: Annotated[Path | None, typer.Option("--out-file", help="Write the one --table here.")] = None,
) -> None:
    """Write the current tables (sessions, turns, quarantine, runs, reconciliation, revisions, links,
    terms) as single files, with the columns and types of OUT/datasets/current."""
    from audit.current import TABLES, Table
    from audit.export import Format, write
    from audit.ledger import ledger_path_for

    from .app import load_settings, open_ledger

    if format not in set(Format):
        fail(f"unknown format {format!r}: {', '.join(Format)}", ExitCode.USAGE)
    if table is not None and table not in set(TABLES):
        fail(f"unknown table {table!r}: {', '.join(TABLES)}", ExitCode.USAGE)
    if out_file is not None and table is None:
        table = "sessions" if "turn" not in out_file.name else "turns"
        _err(f"--out-file without --table: writing the {table} table")
    lpath = ledger_path_for(out, load_settings(config))
    if not lpath.is_file():
        fail(f"no ledger at {lpath}: nothing has run into {out}, nothing to export", ExitCode.CANNOT_START)
    ledger = open_ledger(lpath)
    problems: list[str] = []
    try:
        paths = write(out, ledger, Format(format), to or out / "datasets", table=Table(table) if table else None,
                      out_file=out_file, problems=problems)
    finally:
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
    browse: Annotated[str | None, typer.Option("--browse", help="URL of a running `reconstruct browse` to link "
                                               "into (e.g. http://127.0.0.1:8765).")] = None,
) -> None:
    """Write a self-contained HTML audit report (inline SVG charts) from the ledger and datasets."""
    from audit.report import write_report

    from .app import known_run

    with _ledger(out, config) as ledger:
        path = write_report(out, ledger, known_run(ledger, run_id, out), out_file,
                            browse.rstrip("/") if browse else None)
    typer.echo(str(path))


def sessions(
    key: Annotated[str | None, typer.Option("--key", help="Only this session key (<platform>:<id>).")] = None,
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Sessions by key: each one's document, its snapshots (the exports it was read from) and counts."""
    with _ledger(out, config) as ledger:
        view = views.SessionsView(sessions=[_session_row(r, ledger.links.possibly_same(r.key))
                                            for r in ledger.sessions.listing(key)])
    if key is not None and not view.sessions:
        fail(f"no session with key {key!r}", ExitCode.NOT_FOUND)
    views.show(view, [line for r in view.sessions for line in _snapshot_lines(r)], views.SnapshotLine, as_json,
               title="Sessions by key")
    linked = [views.LinkLine(r.key, x.key, x.evidence) for r in view.sessions for x in r.possibly_same
              if r.key < x.key]
    if linked and not as_json:  # evidence short of proof: reconstruct link / unlink decide
        views.show(view, linked, views.LinkLine, False, title="Possibly the same conversation")


def _session_row(r: KeyListing, possibly_same: list[dict[str, str]]) -> views.SessionRow:
    return views.SessionRow(key=r.key, path=r.path, session_id=r.session_id, status=r.status,
                            snapshots=r.snapshots, counts=r.counts,
                            possibly_same=[views.PossibleLink(**x) for x in possibly_same])


def _snapshot_lines(r: views.SessionRow) -> list[views.SnapshotLine]:
    counts = "/".join(str(getattr(r.counts, c)) for c in ("new", "unchanged", "absent", "edited"))
    return [views.SnapshotLine(key=r.key, path=r.path, snapshot=s.source_path, sha256=s.sha256[:12],
                               first=s.first or "-", last=s.last or "-", messages=str(s.messages), counts=counts)
            for s in r.snapshots] or [views.SnapshotLine(r.key, r.path, "-", "-", "-", "-", "-", counts)]


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
