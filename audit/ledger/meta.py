"""The ledger's own key-value notes (``meta``): its schema version, the revision index's size, a
run's unpublished tables."""

from __future__ import annotations

import sqlite3


class Meta:
    """The ``meta`` table of one ledger."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set(self, key: str, value: str) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
