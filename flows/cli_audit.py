"""Audit-trail commands: export of the audit datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to the ``reconstruct`` app."""

    @app.command()
    def export(
        out: Annotated[Path, typer.Option("--out", "-o", help="Output root of the runs.")] = Path("output"),
        format: Annotated[str, typer.Option("--format", help="parquet | csv | jsonl")] = "parquet",
        to: Annotated[Path | None, typer.Option("--to", help="Folder to write into (default OUT/datasets).")] = None,
    ) -> None:
        """Write sessions and turns tables (one row per session document and per interaction)."""
        from flows.datasets import write

        if format not in ("parquet", "csv", "jsonl"):
            typer.echo(f"unknown format {format!r}: parquet, csv or jsonl", err=True)
            raise typer.Exit(2)
        for path in write(out, format, to):
            typer.echo(str(path))
