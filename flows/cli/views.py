"""What the read commands print: typed rows, shown as a table or as one JSON document.

A command builds its rows once (frozen dataclasses) and hands them to ``show``: ``--json`` prints the
whole view as one JSON document on stdout (sorted keys, the field names below, documented in
docs/cli.md); otherwise the fields marked as columns become a table on a terminal, or tab-separated
lines when stdout is not one. No cell is ever cut, and columns marked ``key`` (ids and paths a user
pastes back) are not even wrapped: a table that cannot fit the terminal so is shown as one record per row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from audit.ledger import KeyCounts, SnapshotSummary

JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON document on stdout instead of a table.")]


def column(header: str, *, key: bool = False, width: int | None = None):
    """A field shown as a table column; ``key``: an id or a path, never cut; ``width``: cut longer text
    (the table only: JSON has it whole)."""
    return field(metadata={"header": header, "key": key, "width": width})


@dataclass(frozen=True, slots=True)
class RunRow:
    run_id: str = column("run", key=True)
    started_at: str = column("started")
    status: str = column("status")
    files: int = column("files")
    files_skipped: int = column("skipped")
    files_quarantined: int = column("q. files")
    sessions_ok: int = column("ok")
    sessions_partial: int = column("partial")
    sessions_quarantined: int = column("q. sess.")
    seconds: float = column("secs")


@dataclass(frozen=True, slots=True)
class StatusView:
    runs: list[RunRow]
    documents_without_source: dict[str, int]


@dataclass(frozen=True, slots=True)
class QuarantineRow:
    what: str = column("what")
    source_key: str = column("source key", key=True)
    source_path: str = column("source", key=True)
    session_id: str | None = column("session", key=True)
    reasons: tuple[str, ...] = column("reasons")
    detail: str | None = column("detail", width=300)


@dataclass(frozen=True, slots=True)
class QuarantineView:
    run_id: str | None
    quarantined: list[QuarantineRow]


@dataclass(frozen=True, slots=True)
class GrammarRow:
    name: str = column("name", key=True)
    version: str = column("version")
    kind: str = column("kind")
    description: str = column("description")
    example: str = column("example")


@dataclass(frozen=True, slots=True)
class FormatsView:
    grammars: list[GrammarRow]


@dataclass(frozen=True, slots=True)
class RevisionRow:
    rev: str = column("rev", key=True)
    ts: str = column("ts")
    note: str = column("note")
    sha256: str = column("sha256", key=True)


@dataclass(frozen=True, slots=True)
class HistoryView:
    document: str
    revisions: list[RevisionRow]


@dataclass(frozen=True, slots=True)
class MatchRow:
    path: str = column("path", key=True)
    key: str | None = column("key", key=True)
    session_id: str | None = column("session", key=True)


@dataclass(frozen=True, slots=True)
class MatchesView:
    session: str
    matches: list[MatchRow]


@dataclass(frozen=True, slots=True)
class VerifyView:
    checked: int
    problems: list[str]


@dataclass(frozen=True, slots=True)
class PossibleLink:
    """Another key that is possibly the same conversation (evidence short of proof; ``reconstruct link``)."""

    key: str
    evidence: str


@dataclass(frozen=True, slots=True)
class SessionRow:
    key: str
    path: str
    session_id: str | None
    status: str
    snapshots: list[SnapshotSummary]
    counts: KeyCounts
    possibly_same: list[PossibleLink]


@dataclass(frozen=True, slots=True)
class LinkLine:
    """One table line of ``sessions``' possible links."""

    key: str = column("key", key=True)
    other: str = column("possibly the same as", key=True)
    evidence: str = column("evidence")


@dataclass(frozen=True, slots=True)
class SnapshotLine:
    """One table line of ``sessions``: a session key and one of its snapshots."""

    key: str = column("key", key=True)
    path: str = column("path", key=True)
    snapshot: str = column("snapshot", key=True)
    sha256: str = column("sha256")
    first: str = column("first")
    last: str = column("last")
    messages: str = column("messages")
    counts: str = column("new/unchanged/absent/edited")


@dataclass(frozen=True, slots=True)
class SessionsView:
    sessions: list[SessionRow]


def dumps(view: Any) -> str:
    """One JSON document (sorted keys, two-space indent) and a newline."""
    return orjson.dumps(dataclasses.asdict(view), option=JSON_OPTIONS).decode() + "\n"


def show(view: Any, rows: Sequence[Any], kind: type, as_json: bool, title: str | None = None) -> None:
    """``view`` as one JSON document, or its ``rows`` (``kind``: a dataclass with columns) as a table."""
    if as_json:
        typer.echo(dumps(view), nl=False)
        return
    fields = dataclasses.fields(kind)
    cells = [[_cell(getattr(r, f.name), f.metadata["width"]) for f in fields] for r in rows]
    show_rows([f.metadata["header"] for f in fields], cells, title, keys=[f.metadata["key"] for f in fields])


def _cell(value: Any, width: int | None) -> str:
    if value is None:
        return "-"
    text = ",".join(map(str, value)) if isinstance(value, tuple) else f"{value:.2f}" if isinstance(value, float) \
        else str(value)
    return text[:width] if width else text


def show_rows(headers: list[str], rows: list[list[str]], title: str | None = None,
              keys: list[bool] | None = None) -> None:
    """A table on a terminal wide enough to show it without cutting a word (else one record per row, a
    field a line); tab-separated lines with a header when stdout is not a terminal (grep-able)."""
    out = Console()
    if not out.is_terminal:  # typer, not rich: rich would expand the tabs into spaces
        for row in [headers, *rows]:
            typer.echo("\t".join(" ".join(str(c).split("\n")) for c in row))
        return
    keys = keys or [False] * len(headers)
    columns = [[header, *(str(r[i]) for r in rows)] for i, header in enumerate(headers)]
    widths = _fit([_min_width(c, key) for c, key in zip(columns, keys, strict=True)],
                  [max(len(line) for cell in c for line in cell.split("\n")) for c in columns],
                  out.width - 3 * len(headers) - 1)
    if widths is None:
        _records(out, headers, rows, title)
        return
    table = Table(title=title)
    for header, width, key in zip(headers, widths, keys, strict=True):
        table.add_column(header, no_wrap=key, width=width)
    for row in rows:
        table.add_row(*[str(c) for c in row])
    out.print(table)


def _fit(least: list[int], most: list[int], room: int) -> list[int] | None:
    """Column widths that fit ``room``: each its widest cell, narrowed (the one with most to spare first)
    down to its least; None when even the least widths do not fit."""
    if sum(least) > room:
        return None
    widths = list(most)
    while sum(widths) > room:
        i = max(range(len(widths)), key=lambda k: widths[k] - least[k])
        widths[i] -= 1
    return widths


def _min_width(cells: list[str], key: bool) -> int:
    """The narrowest a column may be: its longest value when it is an id or a path, else its longest word."""
    if key:
        return max(len(c) for c in cells)
    return max(len(word) for text in cells for word in text.split() or [""])


def _records(out: Console, headers: list[str], rows: list[list[str]], title: str | None) -> None:
    """Rows too wide for the terminal: one block per row, ``header  value`` a line, values never cut."""
    if title:
        out.print(title, markup=False, highlight=False)
    pad = max(len(h) for h in headers)
    for row in rows:
        out.print()
        for header, cell in zip(headers, row, strict=True):
            out.print(f"{header:<{pad}}  {cell}", markup=False, highlight=False, soft_wrap=True)
