"""Audit-trail commands: history, revert, verify, diff, apply-diff, export, report."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to the ``reconstruct`` app."""
