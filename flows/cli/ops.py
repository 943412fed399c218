"""Operations commands: ``serve`` runs the flow on a schedule against a real Prefect server until
stopped; ``alerts`` installs the automation that notifies on a bad run (flows/alerts.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def serve_parameters(paths: list[str], out: Path, settings_overrides: dict) -> dict:
    """The flow parameters a scheduled run gets (plain values, as Prefect stores them; the settings
    this run differs from the defaults by, ``dask_address`` among them)."""
    from ..core.ingest import as_root

    return {"paths": [str(as_root(p)) for p in paths], "out": str(out.resolve()),
            "settings": settings_overrides, "force": False, "show_progress": False}


def register(app: typer.Typer) -> None:
    """Add this module's commands to the ``reconstruct`` app."""

    @app.command()
    def serve(
        paths: Annotated[list[str], typer.Argument(
            help="Files, folders or zip exports to reconstruct each time: local paths or URLs (s3://, ...).")],
        out: Annotated[Path, typer.Option("--out", "-o")] = Path("output"),
        cron: Annotated[str | None, typer.Option(help="When to run (cron, in --timezone); default 0 2 * * *.")] = None,
        interval: Annotated[float | None, typer.Option(help="Run every this many seconds instead of a cron.")] = None,
        timezone: Annotated[str, typer.Option(help="Time zone of the schedule.")] = "UTC",
        name: Annotated[str, typer.Option(help="Deployment name.")] = "reconstruct-nightly",
        prefect_home: Annotated[Path | None, typer.Option(
            help="Database folder of the Prefect server started here (default OUT/.prefect).")] = None,
        port: Annotated[int, typer.Option(help="Port of the local Prefect server.")] = 4200,
        config: Annotated[Path | None, typer.Option("--config")] = None,
        dask_address: Annotated[str | None, typer.Option(help="Run each run's shards on this Dask scheduler.")] = None,
    ) -> None:
        """Run the archive flow on a schedule until stopped (Ctrl-C or SIGTERM). Uses PREFECT_API_URL, else
        a Prefect server at 127.0.0.1:PORT, else starts one (and stops it on exit). Each run is
        incremental: unchanged inputs are skipped. One run at a time: a run due while the last still
        runs is cancelled."""
        from ..core.ingest import is_url
        from ..exits import ExitCode
        from .app import check_cluster, console, load_settings, prefect_env

        if cron and interval:
            console.print("[red]give --cron or --interval, not both[/red]")
            raise typer.Exit(ExitCode.USAGE)
        missing = [p for p in paths if not is_url(p) and not Path(p).exists()]
        if missing:
            console.print(f"[red]cannot start:[/red] no such path: {', '.join(missing)}")
            raise typer.Exit(ExitCode.CANNOT_START)
        settings = load_settings(config, dask_address=dask_address)
        check_cluster(settings)
        prefect_env()
        from ..serve import ServePlan
        from ..serve import serve as serve_plan

        plan = ServePlan(name=name, parameters=serve_parameters(paths, out, settings.model_dump(
            mode="json", exclude_defaults=True)), cron=None if interval else (cron or "0 2 * * *"),
            timezone=timezone, interval=interval, description=f"reconstruct {', '.join(map(str, paths))} into {out}")
        try:
            serve_plan(plan, prefect_home or out / ".prefect", port, say=console.print)
        except RuntimeError as exc:
            console.print(f"[red]cannot start:[/red] {exc}")
            raise typer.Exit(ExitCode.CANNOT_START) from None

    @app.command()
    def alerts(
        webhook: Annotated[str | None, typer.Option(
            help="POST each alert as JSON {subject, body} to this URL.")] = None,
        block: Annotated[str | None, typer.Option(
            help="Notify through this saved notification block instead (TYPE/NAME, e.g. slack-webhook/ops).")] = None,
    ) -> None:
        """Install (or replace) the automation that notifies when a run quarantines anything, crashes or is
        interrupted, on the Prefect server PREFECT_API_URL (or 127.0.0.1:4200) names."""
        from ..exits import ExitCode
        from .app import console, prefect_env

        if bool(webhook) == bool(block):
            console.print("[red]give --webhook URL or --block TYPE/NAME[/red]")
            raise typer.Exit(ExitCode.USAGE)
        prefect_env()
        from .. import alerts as alerting
        from ..serve import use_running_server

        where = use_running_server()
        try:
            block_id = alerting.webhook_block(webhook) if webhook else alerting.existing_block(block)
            automation_id = alerting.install(block_id)
        except Exception as exc:  # no server, no such block: the operator must know it is not installed
            console.print(f"[red]alerts not installed:[/red] {exc}")
            raise typer.Exit(ExitCode.CANNOT_START) from None
        console.print(f"automation {alerting.AUTOMATION_NAME!r} ({automation_id}) installed on {where}")
