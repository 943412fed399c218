"""The ``reconstruct`` command line.

Exit codes: 0 every session was written (ok or partial) and no input was quarantined;
3 the run finished but something was quarantined (see ``reconstruct quarantine``);
4 the run could not start or the environment failed it (bad path or output, bad configuration, the
ledger, the disk or Prefect unavailable), always as one line; 130 the run was interrupted (Ctrl-C,
SIGTERM) and is marked so in the ledger; 2 the command line itself was wrong.
"""

from __future__ import annotations

import os
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.table import Table

from models.errors import ReconstructError
from models.settings import Settings

EXIT_OK, EXIT_USAGE, EXIT_QUARANTINED, EXIT_CANNOT_START, EXIT_INTERRUPTED = 0, 2, 3, 4, 130

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

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="TOML config file (default ./reconstruct.toml).")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output root.")]


def prefect_env() -> None:
    """Embedded Prefect, offline: no telemetry, a patient start-up for a fresh database."""
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    # said once, as one line, by flows.faults.check_prefect_home: not as a warning at Prefect's import
    warnings.filterwarnings("ignore", message="Failed to create the Prefect home directory")


def fail(message: str, code: int = EXIT_CANNOT_START):
    """One line on stderr naming the problem, then exit (4 unless told)."""
    console.print(message.replace("\n", " "), markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def load_settings(config: Path | None, **flags) -> Settings:
    try:
        return Settings.load(config, **flags)
    except ReconstructError as exc:
        fail(f"invalid configuration: {exc}")


@contextmanager
def clear_failures(what: str, out: Path | None = None):
    """Faults of the environment (the ledger, the disk, the output folder, Prefect, limits) end as
    one line and exit 4 instead of a traceback (flows/faults.py; the traceback goes to a log under
    ``out``); anything else propagates."""
    from . import faults

    try:
        yield
    except Exception as exc:
        found = faults.verdict(exc, out)
        if found is None:
            raise
        fail(f"{what}: {found[0]}", found[1])


def read_ledger(out: Path, config: Path | None):
    """The ledger of OUT opened read-only (works on a read-only output); one line and exit 4
    when there is none, it is corrupt or it is newer than this version."""
    from audit.ledger import Ledger, LedgerError, ledger_path_for

    path = ledger_path_for(out, load_settings(config))
    try:
        return Ledger(path, read_only=True)
    except LedgerError as exc:
        fail(f"cannot read: {exc}")


def _print_summary(summary: dict) -> None:
    c = summary["counts"]
    console.print(
        f"run {summary['run_id']}: {c['files']} files ({c['files_skipped']} skipped, "
        f"{c['files_quarantined']} quarantined, {c['files_companion']} companions); sessions "
        f"ok {c['sessions_ok']}, partial {c['sessions_partial']}, quarantined {c['sessions_quarantined']}; "
        f"{summary['seconds']:.2f} s"
    )
    if summary["quarantined"]:
        _quarantine_table(summary["quarantined"])


def show_rows(headers: list[str], rows: list[list[str]], title: str | None = None) -> None:
    """A table on a terminal; tab-separated lines with a header otherwise (grep-able, log-friendly)."""
    out = Console()
    if not out.is_terminal:
        for row in [headers, *rows]:
            out.print("\t".join(str(c).replace("\n", " ") for c in row), soft_wrap=True, markup=False,
                      highlight=False)
        return
    table = Table(*headers, title=title)
    for row in rows:
        table.add_row(*[str(c) for c in row])
    out.print(table)


def _quarantine_table(rows: list[dict]) -> None:
    show_rows(["what", "source", "session", "reasons", "detail"],
              [[q["what"], q["source_path"], q["session_id"] or "-", q["reasons"], (q["detail"] or "")[:300]]
               for q in rows], title="Quarantined")


def _check_out(out: Path) -> None:
    """The output root must be a folder this process can write (or create)."""
    if out.exists() and not out.is_dir():
        fail(f"cannot start: --out {out} is a file, not a folder")
    probe = out if out.exists() else next((p for p in out.resolve().parents if p.exists()), None)
    if probe is None or not os.access(probe, os.W_OK | os.X_OK):
        fail(f"cannot start: --out {out} is not writable")


def _run(paths: list[Path], out: Path, settings: Settings, force: bool, allow_shrink: bool = False,
         keys: list[str] | None = None) -> int:
    missing = [str(p) for p in paths if not p.exists() and not p.is_symlink()]
    if missing:
        console.print(f"[red]cannot start:[/red] no such path: {', '.join(missing)}")
        return EXIT_CANNOT_START
    _check_out(out)
    prefect_env()
    from flows import faults
    from flows.serve import configured_api_url, start_embedded, use_embedded, use_running_server, without_heartbeats

    with clear_failures("cannot start", out):
        faults.check_open_files(settings.workers)
        faults.check_prefect_api(configured_api_url())
    server = use_running_server()  # said with the summary, so a failure stays one line
    if not configured_api_url():  # the embedded server, its database under PREFECT_HOME
        with clear_failures("cannot start", out):
            faults.check_prefect_home()
    embedded = start_embedded()  # starts while this process imports the flow
    try:
        from flows.pipeline import run_archive
    except Exception as exc:  # an environment problem, not an input problem
        console.print(f"[red]cannot start:[/red] Prefect is unavailable: {exc}")
        return EXIT_CANNOT_START
    try:
        from flows.pipeline import graceful_stop

        with clear_failures("run failed", out), graceful_stop(out), faults.prefect_logs_to_file(out):
            _ready(embedded, use_embedded)
            with without_heartbeats(embedded):
                summary = run_archive(paths, out, settings, force=force, show_progress=sys.stderr.isatty(),
                                      allow_shrink=allow_shrink, keys=keys)
    except BaseException as exc:  # Ctrl-C twice, or a signal Prefect turned into TerminationSignal
        if not isinstance(exc, KeyboardInterrupt) and type(exc).__name__ != "TerminationSignal":
            raise
        fail("interrupted: the run is marked interrupted in the ledger; run again to finish", EXIT_INTERRUPTED)
    if summary.get("status") == "interrupted":
        fail(f"interrupted: run {summary['run_id']} stopped after {summary['counts']['files']} files, all "
             "recorded in the ledger; run again to finish", EXIT_INTERRUPTED)
    console.print(f"using {server}")
    _print_summary(summary)
    c = summary["counts"]
    return EXIT_QUARANTINED if (c["files_quarantined"] or c["sessions_quarantined"]) else EXIT_OK


def _ready(embedded, use_embedded) -> None:
    """Wait for the embedded server (when this run started one); one line and exit 4 if it fails."""
    try:
        use_embedded(embedded)
    except RuntimeError as exc:
        fail(f"cannot start: Prefect's embedded server: {exc}")


@app.command()
def run(
    paths: Annotated[list[Path], typer.Argument(help="Files, folders or zip exports.")],
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
            console.print(f"[red]cannot start:[/red] {exc.detail}")
            raise typer.Exit(EXIT_CANNOT_START) from None
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
    ledger = read_ledger(out, config)
    try:
        run_id = run_id or ledger.latest_run_id()
        if run_id is None or not ledger.has_run(run_id):
            fail(f"cannot rerun: no run {run_id!r} in the ledger of {out}")
        sources = ledger.failed_sources(run_id) if failed else []
        args = orjson.loads(ledger.run(run_id)["args"])
    finally:
        ledger.close()
    if not sources:
        console.print(f"nothing to rerun in run {run_id}")
        raise typer.Exit(EXIT_OK)
    console.print(f"rerunning {len(sources)} inputs of run {run_id}")
    raise typer.Exit(_run([Path(r) for r in args["paths"]], out, settings, force=True,
                          keys=[s["source_key"] for s in sources]))


@app.command()
def status(out: OutOpt = Path("output"), config: ConfigOpt = None,
           limit: Annotated[int, typer.Option(help="How many runs.")] = 10) -> None:
    """Recent runs and their counts."""
    ledger = read_ledger(out, config)
    try:
        rows = ledger.runs(limit)
        flags = _counts(ledger.flags().values())
    finally:
        ledger.close()
    show_rows(["run", "started", "status", "files", "skipped", "files_quarantined", "ok", "partial",
               "sessions_quarantined", "seconds"],
              [[r["run_id"], r["started_at"], r["status"], r["files"], r["files_skipped"], r["files_quarantined"],
                r["sessions_ok"], r["sessions_partial"], r["sessions_quarantined"], f"{r['seconds'] or 0:.2f}"]
               for r in rows], title="Runs")
    if flags:
        console.print("documents kept without their source: "
                      + ", ".join(f"{mark} {n}" for mark, n in sorted(flags.items())))


def _counts(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


@app.command()
def quarantine(out: OutOpt = Path("output"), config: ConfigOpt = None,
               run_id: Annotated[str | None, typer.Option("--run")] = None) -> None:
    """Quarantined inputs and sessions of a run (default the latest) with their reasons."""
    ledger = read_ledger(out, config)
    try:
        if run_id is not None and not ledger.has_run(run_id):
            fail(f"no run {run_id!r} in the ledger of {out}")
        rows = ledger.quarantined(run_id)
    finally:
        ledger.close()
    if not rows:
        console.print("nothing quarantined")
    else:
        _quarantine_table(rows)


@app.command()
def formats() -> None:
    """The registered grammars, each with an example of its input."""
    from parsers import registry

    show_rows(["name", "version", "kind", "description", "example"],
              [[g.name, g.version, "json" if g.structured else "text", g.description, g.example]
               for g in registry.all_grammars()], title="Grammars")


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
    from flows import cli_audit, cli_ops

    cli_audit.register(app)
    cli_ops.register(app)


_register_command_groups()
