"""The auditor's view: ``query`` (SQL over the current tables) and ``browse`` (a local web application).

Both only read the output root: the ledger is opened read-only and nothing is written under OUT.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..exits import ExitCode

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="TOML config file (default ./reconstruct.toml).")]
OutArg = Annotated[Path, typer.Argument(help="Output root of the runs.")]


def query(
    out: OutArg,
    sql: Annotated[str | None, typer.Argument(help="One SQL statement; without it, how to open a shell.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON rows.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV with a header.")] = False,
    config: ConfigOpt = None,
) -> None:
    """SQL (DuckDB) over sessions, turns, quarantine, runs, reconciliation and revisions."""
    from audit import query as sqlq

    from .app import read_ledger
    from .views import show_rows

    with read_ledger(out, config) as ledger:  # errors end as one line and the exit-code table's code
        if sql is None:
            _shell(out, ledger)
            return
        catalog = sqlq.Catalog(out, ledger)
        if not catalog.fresh:
            typer.echo("the published tables are older than the ledger: answered from tables built from it", err=True)
        try:
            frame = catalog.run(sql)
        finally:
            catalog.close()
    if as_json:
        sys.stdout.write(frame.write_json() + "\n")
    elif as_csv:
        sys.stdout.write(frame.write_csv())
    else:
        show_rows(frame.columns, [["" if v is None else v for v in row] for row in frame.rows()])


def _shell(out: Path, ledger) -> None:
    """Open the duckdb shell on the views when it is installed, else print how to."""
    import os

    from audit import current, publication
    from audit import query as sqlq

    files = publication.published(out, ledger)
    if files is None:
        typer.echo(f"the published tables under {out / current.CURRENT} are older than the ledger (or absent): "
                   "run `reconstruct run` again, or ask here with `reconstruct query OUT \"SELECT ...\"`", err=True)
        raise typer.Exit(ExitCode.PROBLEM)
    init = "\n".join(sqlq.view_statements(files))
    duckdb_cli = shutil.which("duckdb")
    if duckdb_cli is None:
        typer.echo("No duckdb shell on PATH (pip install duckdb-cli, or the duckdb binary). In one, run:\n\n" + init)
        return
    typer.echo(f"opening {duckdb_cli} with the views: {', '.join(files)}", err=True)
    os.execvp(duckdb_cli, [duckdb_cli, "-cmd", init])


def browse(
    out: OutArg,
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1.")] = 8765,
    config: ConfigOpt = None,
) -> None:
    """A local web application over the output root (read-only, loopback only)."""
    import uvicorn

    from audit.browse.app import create_app
    from audit.ledger import ledger_path_for

    from .app import load_settings, open_ledger

    settings = load_settings(config)
    if ledger_path_for(out, settings).is_file():  # checked once, as a run checks it: damaged, one line
        open_ledger(ledger_path_for(out, settings)).close()
    typer.echo(f"browsing {out} at http://127.0.0.1:{port}/ (Ctrl-C to stop)", err=True)
    uvicorn.run(create_app(out, settings, prefect_ui=_prefect_ui()), host="127.0.0.1", port=port,
                log_level="warning")


def _prefect_ui() -> str | None:
    """The Prefect UI's base URL when one is configured (PREFECT_UI_URL or PREFECT_API_URL), for flow-run links."""
    from prefect.settings import get_current_settings

    return get_current_settings().ui_url


def register(app: typer.Typer) -> None:
    app.command()(query)
    app.command()(browse)
