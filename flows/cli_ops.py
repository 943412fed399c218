"""Operations commands: ``serve`` runs the flow on a schedule in this process (Prefect serve)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def serve_parameters(paths: list[Path], out: Path, settings_overrides: dict) -> dict:
    """The flow parameters a scheduled run gets (plain values, as Prefect stores them)."""
    return {"paths": [str(p.resolve()) for p in paths], "out": str(out.resolve()),
            "settings": settings_overrides, "force": False, "show_progress": False}


def register(app: typer.Typer) -> None:
    """Add this module's commands to the ``reconstruct`` app."""

    @app.command()
    def serve(
        paths: Annotated[list[Path], typer.Argument(help="Files, folders or zip exports to reconstruct each time.")],
        out: Annotated[Path, typer.Option("--out", "-o")] = Path("output"),
        cron: Annotated[str, typer.Option(help="When to run (cron, in --timezone).")] = "0 2 * * *",
        timezone: Annotated[str, typer.Option(help="Time zone of the cron schedule.")] = "UTC",
        name: Annotated[str, typer.Option(help="Deployment name.")] = "reconstruct-nightly",
        config: Annotated[Path | None, typer.Option("--config")] = None,
    ) -> None:
        """Serve the archive flow on a cron schedule until stopped (Ctrl-C). Each run is incremental:
        unchanged inputs are skipped, so a nightly run only pays for what changed."""
        from flows.cli import load_settings, prefect_env

        settings = load_settings(config)
        prefect_env()
        from prefect.schedules import Cron

        from flows.pipeline import reconstruct_archive, task_runner

        overrides = settings.model_dump(mode="json", exclude_defaults=True)
        flow = reconstruct_archive.with_options(task_runner=task_runner(settings))
        flow.serve(
            name=name,
            schedules=[Cron(cron, timezone=timezone)],
            parameters=serve_parameters(paths, out, overrides),
            description=f"reconstruct {', '.join(map(str, paths))} into {out}",
            tags=["reconstruct"],
            enforce_parameter_schema=False,
        )
