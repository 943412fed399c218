"""The ``reconstruct`` command line.

Exit codes follow one table, ``flows.exits.ExitCode`` (docs/cli.md prints it); read commands take
``--json`` and print their rows through ``flows.cli.views``.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import orjson
import typer
from rich.console import Console

from models.settings import Settings
from models.status import RunStatus

from ..exits import ExitCode, one_line
from ..exits import fail as fail_with
from . import views

if TYPE_CHECKING:
    from audit.ledger import QuarantineEntry, RunRecord

    from ..summary import RunSummary

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Rebuild chat sessions from raw log archives.",
)
console = Console(stderr=True)

PREFECT_DEFAULTS = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "PREFECT_LOGGING_LEVEL": "WARNING",
}

PREFECT_EVENTS_LOGGER = "EventsWorker"
"""The logger of Prefect's event worker (named after its class, not under ``prefect``)."""

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="TOML config file (default ./reconstruct.toml).")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output root.")]
JsonOpt = views.JsonOpt


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from models.settings import PIPELINE_VERSION

        typer.echo(f"reconstruct {version('reconstruct')} (pipeline {PIPELINE_VERSION})")
        raise typer.Exit(ExitCode.OK)


VersionOpt = Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the package and pipeline versions.")]


@app.callback()
def main(version: VersionOpt = False) -> None:
    """Rebuild chat sessions from raw log archives."""


def prefect_env() -> None:
    """Embedded Prefect, offline: no telemetry, a patient start-up for a fresh database."""
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    # said once, as one line, by flows.faults.check_prefect_home: not as a warning at Prefect's import
    warnings.filterwarnings("ignore", message="Failed to create the Prefect home directory")
    # Prefect's event worker drains at exit with a warning line per 4 s while events wait to be sent to the
    # run's server ("Still processing items: 1 items remaining..."): progress, not a fault, on the run's stderr
    logging.getLogger(PREFECT_EVENTS_LOGGER).setLevel(logging.ERROR)


def fail(message: str, code: ExitCode = ExitCode.CANNOT_START):
    """One line on stderr naming the problem, then exit (4 unless told)."""
    fail_with(message, code)


def load_settings(config: Path | None, **flags) -> Settings:
    with one_line("invalid configuration"):
        return Settings.load(config, **flags)


@contextmanager
def clear_failures(what: str, out: Path | None = None):
    """Faults of the environment (the ledger, the disk, the output folder, Prefect, limits) end as one
    line and exit 4, their traceback in a log under ``out`` (flows/faults.py); other errors of the
    pipeline, the ledger and the file system end as one line and the exit-code table's code; anything
    else (a bug) propagates."""
    from .. import faults

    with one_line(what, otherwise=ExitCode.CANNOT_START):
        try:
            yield
        except Exception as exc:
            found = faults.verdict(exc, out)
            if found is None:
                raise
            fail(f"{what}: {found[0]}", found[1])


@contextmanager
def read_ledger(out: Path, config: Path | None, *, write: bool = False):
    """The ledger of OUT, read-only unless ``write`` (works on a read-only output), checked as a run
    checks it and closed after the block; a missing, damaged or too new ledger, and errors inside the
    block, end as one line."""
    from audit.ledger import ledger_path_for

    ledger = open_ledger(ledger_path_for(out, load_settings(config)), write=write)
    try:
        with one_line(), ledger_faults("cannot read"):
            yield ledger
    finally:
        ledger.close()


def open_ledger(path: Path, *, write: bool = False):
    """The ledger at ``path`` (read-only unless ``write``), its pages checked with ``quick_check`` as
    ``run`` checks them: a damaged ledger ends a read command with the line and exit code it ends a run
    with, never a traceback or an answer read from a damaged page."""
    from audit.ledger import Ledger

    with one_line("cannot read"), ledger_faults("cannot read"):
        ledger = Ledger(path, read_only=not write)
        try:
            ledger.check()
        except BaseException:
            ledger.close()
            raise
    return ledger


@contextmanager
def ledger_faults(what: str):
    """SQLite's faults in the ledger (damaged, unusable, full, read-only) inside the block end as the
    one line and exit code of flows/faults.py, as they end a run; the traceback goes to a log in the
    temporary folder (a read command writes nothing under OUT). A missing or too new ledger (no SQLite
    error behind it) is left to ``one_line``, which says it as it is."""
    import sqlite3

    from audit.ledger import LedgerError

    from .. import faults

    try:
        yield
    except (LedgerError, sqlite3.Error) as exc:
        found = faults.verdict(exc, None) if _from_sqlite(exc) else None
        if found is None:
            raise
        fail(f"{what}: {found[0]}", found[1])


def _from_sqlite(exc: BaseException) -> bool:
    import sqlite3

    return isinstance(exc, sqlite3.Error) or isinstance(exc.__cause__ or exc.__context__, sqlite3.Error)


def known_run(ledger, run_id: str | None, out: Path) -> str:
    """``run_id``, or the latest run when None; one line and NOT_FOUND when the ledger has no such run."""
    found = run_id or ledger.runs.latest_id()
    if found is None or not ledger.runs.exists(found):
        fail(f"no run {run_id!r} in the ledger of {out}" if run_id else f"no run yet in the ledger of {out}",
             ExitCode.NOT_FOUND)
    return found


def _print_summary(summary: RunSummary) -> None:
    c = summary.counts
    console.print(
        f"run {summary.run_id}: {c.files} files ({c.files_skipped} skipped, "
        f"{c.files_quarantined} quarantined, {c.files_companion} companions); sessions "
        f"ok {c.sessions_ok}, partial {c.sessions_partial}, quarantined {c.sessions_quarantined}; "
        f"{summary.seconds:.2f} s"
    )
    if summary.quarantined:
        view = _quarantine_view(summary.run_id, summary.quarantined)
        views.show(view, view.quarantined, views.QuarantineRow, as_json=False, title="Quarantined")


def _check_out(out: Path) -> None:
    """The output root must be a folder this process can write (or create): not a file, not a
    symbolic-link loop nor under one, not read-only (one line and exit 4 otherwise)."""
    try:
        os.stat(out)  # follows every link on the way: a loop anywhere is ELOOP
    except FileNotFoundError:
        pass
    except OSError as exc:
        what = "is a symbolic-link loop or lies under one" if exc.errno == errno.ELOOP else "cannot be reached"
        fail(f"cannot start: --out {out} {what} ({exc.strerror})")
    if out.exists() and not out.is_dir():
        fail(f"cannot start: --out {out} is a file, not a folder")
    probe = out if out.exists() else next((p for p in out.resolve().parents if p.exists()), None)
    if probe is None or not os.access(probe, os.W_OK | os.X_OK):
        fail(f"cannot start: --out {out} is not writable")


def _roots(paths: list[str]) -> list:
    """The run's roots: URLs as given, local paths made absolute (a Dask worker has another directory)."""
    from ..core.ingest import as_root

    return [as_root(p) for p in paths]


def check_cluster(settings: Settings, *, reach: bool = False) -> None:
    """With a Dask address, the ``dask`` extra must be installed (and with ``reach`` the scheduler must
    answer, before the run starts its Prefect): one line and exit 4 otherwise."""
    if not settings.dask_address:
        return
    from models.errors import ClusterError

    from ..cluster import connected, require_distributed

    try:
        require_distributed()
        if reach:
            with connected(settings.dask_address):
                pass
    except ClusterError as exc:
        fail(f"cannot start: {exc.detail}")


def _run(paths: list[str], out: Path, settings: Settings, force: bool, allow_shrink: bool = False,
         keys: list[str] | None = None) -> int:
    from ..core.ingest import is_url

    roots = _roots(paths)
    missing = [str(p) for p in roots if not is_url(p) and not p.exists() and not p.is_symlink()]
    if missing:
        console.print(f"[red]cannot start:[/red] no such path: {', '.join(missing)}")
        return ExitCode.CANNOT_START
    out = Path(os.path.abspath(out))
    _check_out(out)
    check_cluster(settings, reach=True)
    prefect_env()
    from .. import faults
    from ..serve import configured_api_url, start_embedded, use_embedded, use_running_server, without_heartbeats

    with clear_failures("cannot start", out):
        faults.check_open_files(settings.workers)
        faults.check_prefect_api(configured_api_url())
    server = use_running_server()  # said with the summary, so a failure stays one line
    if not configured_api_url():  # the embedded server, its database under PREFECT_HOME
        with clear_failures("cannot start", out):
            faults.check_prefect_home()
    embedded = start_embedded()  # starts while this process imports the flow
    try:
        from ..pipeline import preload, run_archive
    except Exception as exc:  # an environment problem, not an input problem
        console.print(f"[red]cannot start:[/red] Prefect is unavailable: {exc}")
        return ExitCode.CANNOT_START
    preload()
    try:
        from ..pipeline import graceful_stop

        with clear_failures("run failed", out), graceful_stop(out), faults.prefect_logs_to_file(out):
            _ready(embedded, use_embedded)
            with without_heartbeats(embedded):
                summary = run_archive(roots, out, settings, force=force, show_progress=sys.stderr.isatty(),
                                      allow_shrink=allow_shrink, keys=keys)
    except BaseException as exc:  # Ctrl-C twice, or a signal Prefect turned into TerminationSignal
        if not isinstance(exc, KeyboardInterrupt) and type(exc).__name__ != "TerminationSignal":
            raise
        fail("interrupted: the run is marked interrupted in the ledger; run again to finish", ExitCode.INTERRUPTED)
    if summary.status is RunStatus.INTERRUPTED:
        fail(f"interrupted: run {summary.run_id} stopped after {summary.counts.files} files, all "
             "recorded in the ledger; run again to finish", ExitCode.INTERRUPTED)
    console.print(f"using {server}")
    _print_summary(summary)
    return ExitCode.QUARANTINED if summary.counts.quarantined_any else ExitCode.OK


def _ready(embedded, use_embedded) -> None:
    """Wait for the embedded server (when this run started one); one line and exit 4 if it fails."""
    try:
        use_embedded(embedded)
    except RuntimeError as exc:
        fail(f"cannot start: Prefect's embedded server: {exc}")


@app.command()
def run(
    paths: Annotated[list[str], typer.Argument(
        help="Files, folders or zip exports: local paths or URLs (s3://, gcs://, file://; see docs/scale-out.md).")],
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
    source_tz: Annotated[str | None, typer.Option(help="Zone of timestamps without one (default UTC).")] = None,
    runtime_identity: Annotated[str | None, typer.Option(help="This AI's provider:name@version (rule A2).")] = None,
    format: Annotated[str | None, typer.Option("--format", help="Force a grammar (see `formats`).")] = None,
    secrets_policy: Annotated[str | None, typer.Option(help="redact | report | off")] = None,
    workers: Annotated[int | None, typer.Option(help="Worker processes.")] = None,
    dask_address: Annotated[str | None, typer.Option(help="Run shards on this Dask scheduler.")] = None,
    force: Annotated[bool, typer.Option(help="Reprocess inputs the ledger says are unchanged.")] = False,
    allow_shrink: Annotated[bool, typer.Option(
        "--allow-shrink", help="Let a document replace an accepted one it shrinks past the mass latch "
        "(recorded in the ledger and the revision note).")] = False,
) -> None:
    """Reconstruct every session found under PATHS into OUT."""
    settings = load_settings(config, source_tz=source_tz, runtime_identity=runtime_identity, format=format,
                             secrets_policy=secrets_policy, workers=workers, dask_address=dask_address)
    if settings.format:
        from models.errors import RegistryError
        from parsers import registry

        try:
            registry.get(settings.format)
        except RegistryError as exc:
            fail(f"invalid --format: {exc.detail}", ExitCode.USAGE)
    raise typer.Exit(_run(paths, out, settings, force, allow_shrink))


@app.command()
def rerun(
    failed: Annotated[bool, typer.Option("--failed", help="Only inputs that failed or were quarantined.")] = True,
    run_id: Annotated[str | None, typer.Option("--run", help="Which run (default the latest).")] = None,
    out: OutOpt = Path("output"),
    config: ConfigOpt = None,
) -> None:
    """Reprocess the inputs of a run that failed or were quarantined (nothing else), under the
    keys they had: the same roots are walked, only the failed inputs are processed."""
    settings = load_settings(config)
    with read_ledger(out, config) as ledger:
        run_id = known_run(ledger, run_id, out)
        sources = ledger.quarantine.failed_sources(run_id) if failed else []
        args = orjson.loads(ledger.runs.get(run_id).args)
    if not sources:
        console.print(f"nothing to rerun in run {run_id}")
        raise typer.Exit(ExitCode.OK)
    console.print(f"rerunning {len(sources)} inputs of run {run_id}")
    raise typer.Exit(_run(list(args["paths"]), out, settings, force=True,
                          keys=[s.source_key for s in sources]))


@app.command()
def status(out: OutOpt = Path("output"), config: ConfigOpt = None,
           limit: Annotated[int, typer.Option(help="How many runs.")] = 10, as_json: JsonOpt = False) -> None:
    """Recent runs and their counts."""
    with read_ledger(out, config) as ledger:
        view = views.StatusView(runs=[_run_row(r) for r in ledger.runs.recent(limit)],
                                documents_without_source=_counts(ledger.revisions.flags().values()))
    views.show(view, view.runs, views.RunRow, as_json, title="Runs")
    if view.documents_without_source and not as_json:
        console.print("documents kept without their source: "
                      + ", ".join(f"{mark} {n}" for mark, n in sorted(view.documents_without_source.items())))


def _run_row(r: RunRecord) -> views.RunRow:
    return views.RunRow(**{f: getattr(r, f) for f in views.RunRow.__dataclass_fields__ if f != "seconds"},
                        seconds=round(r.seconds or 0.0, 3))


def _counts(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


@app.command()
def quarantine(out: OutOpt = Path("output"), config: ConfigOpt = None,
               run_id: Annotated[str | None, typer.Option("--run", help="Which run (default the latest).")] = None,
               as_json: JsonOpt = False) -> None:
    """Quarantined inputs and sessions of a run (default the latest) with their reasons."""
    with read_ledger(out, config) as ledger:
        if run_id is not None:
            known_run(ledger, run_id, out)
        view = _quarantine_view(run_id or ledger.runs.latest_id(), ledger.quarantine.of_run(run_id))
    if view.quarantined or as_json:
        views.show(view, view.quarantined, views.QuarantineRow, as_json, title="Quarantined")
    else:
        console.print("nothing quarantined")


def _quarantine_view(run_id: str | None, rows: list[QuarantineEntry]) -> views.QuarantineView:
    return views.QuarantineView(run_id=run_id, quarantined=[views.QuarantineRow(
        what=q.what, source_key=q.source_key, source_path=q.source_path,
        session_id=q.session_id, reasons=q.reasons, detail=q.detail) for q in rows])


@app.command()
def formats(as_json: JsonOpt = False, markdown: Annotated[bool, typer.Option(
        "--markdown", help="docs/formats.md, generated.")] = False) -> None:
    """The registered grammars, each with an example of its input."""
    from parsers import registry

    if markdown:
        sys.stdout.write(registry.formats_markdown())
        return
    view = views.FormatsView(grammars=[
        views.GrammarRow(name=g.name, version=g.version, kind="json" if g.structured else "text",
                         description=g.description, example=g.example) for g in registry.all_grammars()])
    views.show(view, view.grammars, views.GrammarRow, as_json, title="Grammars")


@app.command()
def schema(out: Annotated[Path | None, typer.Option("--out")] = None) -> None:
    """Print (or write) the JSON Schema of the session document."""
    from models.document import json_schema

    data = orjson.dumps(json_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    if out:
        with clear_failures(f"cannot write {out}"):
            out.write_bytes(data)
    else:
        sys.stdout.buffer.write(data)


def _register_command_groups() -> None:
    """Commands kept in their own modules (audit trail, operations) add themselves to ``app``."""
    from . import browse, links, ops, trail

    for commands in (trail, ops, browse, links):
        commands.register(app)


_register_command_groups()
