"""Aliases of session keys: the message prints of id-less sessions, and the keys resolved to another
(an id-less session found to be another's continuation), with their snapshots and documents."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

import orjson

from .rows import chunks, marks


class Aliases:
    """The prints and aliases of one ledger."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def add_prints(self, rows: Iterable[tuple[str, str, str, list[str]]]) -> None:
        """The message prints of id-less sessions (key, grammar, title, prints), the longest kept."""
        with self.db:
            self.db.executemany(
                "INSERT INTO prints VALUES (?,?,?,?) ON CONFLICT (session_key) DO UPDATE SET prints=excluded.prints "
                "WHERE length(excluded.prints) > length(prints.prints)",
                [(k, g, t, orjson.dumps(p).decode()) for k, g, t, p in rows])

    def prints(self, chats: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[tuple[str, list[str]]]]:
        """(grammar, title) -> [(key, prints)] of the known id-less sessions of these chats, in key order."""
        found: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}
        for grammar, title in sorted(set(chats)):
            for key, prints in self.db.execute("SELECT session_key, prints FROM prints WHERE grammar=? AND title=? "
                                               "ORDER BY session_key", (grammar, title)):
                found.setdefault((grammar, title), []).append((key, orjson.loads(prints)))
        return found

    def of(self, keys: Iterable[str]) -> dict[str, str]:
        """key -> the key it was resolved to (an id-less session found to be another's continuation)."""
        found: dict[str, str] = {}
        for chunk in chunks(keys):
            found.update(self.db.execute(
                f"SELECT session_key, canonical FROM aliases WHERE session_key IN ({marks(chunk)})", chunk).fetchall())
        return found

    def add(self, key: str, canonical: str) -> None:
        """Resolve ``key`` to ``canonical``: its snapshots become the canonical key's (one per source
        sha256), and keys resolved to it before follow."""
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO snapshots SELECT ?, source_sha256, source_path, blob_sha256, "
                            "first_at, last_at, messages, run_id FROM snapshots WHERE session_key=?", (canonical, key))
            self.db.execute("DELETE FROM snapshots WHERE session_key=?", (key,))
            self.db.execute("UPDATE aliases SET canonical=? WHERE canonical=?", (canonical, key))
            self.db.execute("INSERT OR REPLACE INTO aliases VALUES (?, ?)", (key, canonical))

    def remove(self, key: str, sources: Iterable[str]) -> None:
        """Undo ``add`` for ``key``: the snapshots of these sources (sha256) go back to it."""
        with self.db:
            canonical = self.db.execute("SELECT canonical FROM aliases WHERE session_key=?", (key,)).fetchone()
            if canonical is None:
                return
            for sha in sources:
                self.db.execute("UPDATE OR IGNORE snapshots SET session_key=? WHERE session_key=? AND source_sha256=?",
                                (key, canonical[0], sha))
            self.db.execute("DELETE FROM aliases WHERE session_key=?", (key,))

    def documents(self, keys: Iterable[str]) -> dict[str, list[str]]:
        """canonical key -> the document paths its aliases were written at (to be moved to its own)."""
        found: dict[str, list[str]] = {}
        for chunk in chunks(keys):
            for canonical, path in self.db.execute(
                    "SELECT a.canonical, s.output_path FROM aliases a JOIN sessions s ON s.session_key=a.session_key "
                    f"WHERE a.canonical IN ({marks(chunk)}) AND s.output_sha256 IS NOT NULL "
                    "AND s.output_path LIKE 'sessions/%' GROUP BY a.canonical, s.output_path ORDER BY 1, 2", chunk):
                found.setdefault(canonical, []).append(path)
        return found
