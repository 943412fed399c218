"""SQL over the current tables with DuckDB: sessions, turns, quarantine, runs, reconciliation, revisions.

Each table is a view: over OUT/datasets/current/<table>.parquet when the published files hold the
ledger's state (``audit.current.published``), else over the tables built from the ledger in memory
(nothing is written: the output root is only read). DuckDB's SQLite scanner would need an extension
download, so the ledger's tables reach DuckDB as Arrow (through Python's sqlite3 and polars).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import polars as pl

from models.errors import AuditError, Reason

from . import current, publication
from .ledger import Ledger


def _quoted(path: Path) -> str:
    return "'" + str(path.resolve()).replace("'", "''") + "'"


def view_statements(files: dict[str, list[Path]]) -> list[str]:
    """The statements that define the views over published files (also what a DuckDB shell runs)."""
    return [f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet([{', '.join(map(_quoted, paths))}]);"
            for name, paths in files.items()]


class Catalog:
    """An in-memory DuckDB connection with the six views (``close`` when done)."""

    def __init__(self, out_root: Path, ledger: Ledger) -> None:
        self.con = duckdb.connect(":memory:")
        self.con.execute("SET TimeZone = 'UTC'")  # timestamps shown as stored, whatever the machine's zone
        self.con.execute("SET parquet_metadata_cache = true")  # a view reads many bucket files: their footers once
        self.con.execute("SET enable_progress_bar = false")  # a long scan prints nothing on the server's console
        self._scratch: tempfile.TemporaryDirectory | None = None
        files = publication.published(out_root, ledger)
        if files is None:  # built from the ledger, written outside OUT (DuckDB reads Arrow only with pyarrow)
            self._scratch = tempfile.TemporaryDirectory(prefix="reconstruct-query-")
            files = {}
            for name, frame in current.build(out_root, ledger).items():
                files[name] = [Path(self._scratch.name) / f"{name}.parquet"]
                frame.write_parquet(files[name][0])
        self.fresh = self._scratch is None
        for statement in view_statements(files):
            self.con.execute(statement)

    def run(self, sql: str, params: list | None = None) -> pl.DataFrame:
        """The answer to one SQL statement (AuditError ``query_error`` when DuckDB refuses it)."""
        try:
            cursor = self.con.execute(sql, params or [])
            if cursor.description is None:
                return pl.DataFrame()
            names = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        except duckdb.Error as exc:
            raise AuditError(Reason.QUERY, str(exc).splitlines()[0]) from exc
        if not rows:
            return pl.DataFrame(schema=dict.fromkeys(names, pl.Null))
        return pl.DataFrame(rows, schema=names, orient="row", infer_schema_length=None, strict=False)

    def close(self) -> None:
        self.con.close()
        if self._scratch is not None:
            self._scratch.cleanup()
