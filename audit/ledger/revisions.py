"""The revision index of the output documents (seed 001; the blobs live under OUT/.revisions), and
the marks on documents kept on disk that lost their source."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from models.status import DocumentMark

from .rows import RevisionRecord, RevisionRow, fetch

MOVED_TO = "moved to "  # the note that ends a moved document's history at its old path (#15)


class Revisions:
    """The revisions and document marks of one ledger."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def add(self, rows: Iterable[RevisionRow], run_id: str | None = None) -> list[tuple[str, int]]:
        """Append each row as the next revision of its document unless the index already ends with
        that sha256; returns (output_path, rev) of what was appended.

        A document with no history whose file held other bytes before (written before the store
        existed) gets those as v0 first, so every replaced content stays reachable.
        """
        added = []
        with self.db:
            for r in rows:
                last = self.db.execute("SELECT rev, sha256 FROM revisions WHERE output_path=? ORDER BY rev DESC "
                                       "LIMIT 1", (r.output_path,)).fetchone()
                if last is not None and last[1] == r.sha256 and not r.note.startswith(MOVED_TO):
                    continue
                rev = 0 if last is None else last[0] + 1
                note = r.note or "rerun"
                if last is None and r.previous_sha256 and r.previous_sha256 != r.sha256:
                    self.db.execute("INSERT INTO revisions VALUES (?,?,?,?,?,?)",
                                    (r.output_path, 0, r.previous_sha256, "init|found before the revision store",
                                     r.ts, None))
                    rev = 1
                elif last is None:
                    note = f"init|{r.note}" if r.note else "init"
                self.db.execute("INSERT INTO revisions VALUES (?,?,?,?,?,?)",
                                (r.output_path, rev, r.sha256, note, r.ts, run_id))
                added.append((r.output_path, rev))
        return added

    def history(self, output_path: str | None = None) -> list[RevisionRecord]:
        """Revisions of one document (or all), oldest first, in (output_path, rev) order."""
        where, args = ("WHERE output_path=?", (output_path,)) if output_path is not None else ("", ())
        return fetch(self.db, RevisionRecord, f"SELECT output_path, rev, sha256, note, ts, run_id FROM revisions "
                     f"{where} ORDER BY output_path, rev", args)

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM revisions").fetchone()[0]

    def latest(self) -> dict[str, str]:
        """output_path -> sha256 of its newest revision, for the documents that are still at their path
        (a document moved to its key's address ends its old path's history with "moved to ...")."""
        rows = self.db.execute("SELECT output_path, sha256 FROM revisions r WHERE rev = "
                               "(SELECT MAX(rev) FROM revisions WHERE output_path=r.output_path) "
                               "AND note NOT LIKE ?", (MOVED_TO + "%",)).fetchall()
        return dict(rows)

    def mark(self, run_id: str, rows: Iterable[tuple[str, str, DocumentMark, str]]) -> None:
        """Flag documents (output_path, source_key, mark, detail) that stay on disk but lost their source."""
        with self.db:
            self.db.executemany("INSERT INTO marks VALUES (?,?,?,?,?)",
                                [(run_id, p, k, str(m), d) for p, k, m, d in rows])

    def flags(self) -> dict[str, DocumentMark]:
        """output_path -> mark, for documents marked after the last run that wrote them."""
        rows = self.db.execute(
            "SELECT m.output_path, m.mark FROM marks m JOIN runs r ON r.run_id = m.run_id WHERE NOT EXISTS ("
            "SELECT 1 FROM sessions s JOIN runs w ON w.run_id = s.run_id WHERE s.output_path = m.output_path "
            "AND s.output_sha256 IS NOT NULL AND w.rowid >= r.rowid) ORDER BY r.rowid").fetchall()
        return {path: DocumentMark(mark) for path, mark in rows}
