"""The ledger: one SQLite connection, opened (and upgraded) once, and the repositories over it.

Only the flow's main process writes to it (shards return their records), so there is one writer.
``Ledger`` owns the connection, its journal mode, its integrity check and its disk reserve; what is
read and written goes through its repositories (``ledger.runs.start(...)``, ``ledger.quarantine.of_run()``),
each a small class over the same connection and one family of tables of ``schema``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from models.errors import Reason

from . import schema
from .aliases import Aliases
from .errors import LedgerError, unusable
from .inputs import Inputs
from .links import Links
from .meta import Meta
from .quarantine import Quarantine
from .revisions import Revisions
from .runs import Runs
from .sessions import Sessions
from .snapshots import Snapshots

if TYPE_CHECKING:
    from models.settings import Settings

JOURNAL_MODE = "PERSIST"
"""A rollback journal kept between transactions, not WAL. WAL's index is a shared memory map of
``ledger.sqlite-shm``, and a write through a map the file system can no longer back (an output
gone read-only or away) kills the process with SIGBUS instead of returning an error; a rollback
journal is read and written with plain calls, so such a fault is an error the run can record. PERSIST
keeps the journal's blocks between transactions, so the last small writes of a run that filled the
disk (its status) reuse them (docs/faults.md has the measurements)."""
RESERVE_BYTES = 1 << 20
"""Space held beside the ledger and given back when the disk fills, so the rows of what was written
and the run's ``failed`` status still fit."""


class Ledger:
    """A connection to the ledger, and its repositories as attributes."""

    runs: Runs
    inputs: Inputs
    sessions: Sessions
    quarantine: Quarantine
    revisions: Revisions
    snapshots: Snapshots
    aliases: Aliases
    links: Links
    meta: Meta

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        """Open (and upgrade) the ledger; ``read_only`` opens an existing one for reading only,
        which works on a read-only output and never creates or migrates anything."""
        self.path = path
        self.read_only = read_only
        if read_only:
            if not path.is_file():
                raise LedgerError(Reason.LEDGER_UNUSABLE, f"no ledger at {path}: nothing has run into {path.parent}")
            self._open_read_only()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, timeout=30)
            try:
                self._prepare()
            except sqlite3.DatabaseError as exc:
                self.db.close()
                raise unusable(exc, f"ledger {path} cannot be used: {exc}") from None
        self._repositories()

    def _repositories(self) -> None:
        db = self.db
        self.runs, self.inputs, self.sessions = Runs(db), Inputs(db), Sessions(db)
        self.quarantine, self.revisions, self.snapshots = Quarantine(db), Revisions(db), Snapshots(db)
        self.aliases, self.links, self.meta = Aliases(db), Links(db), Meta(db)

    def _prepare(self, patience: float = 30.0) -> None:
        """The journal mode (``JOURNAL_MODE``) and the schema. Switching the journal mode is refused at
        once, without waiting, while another process opens or closes the same ledger, so a lock here
        is waited out; so is an I/O error that a switch racing another process's switch back can report (seen when two
        processes create one ledger together). Past ``patience`` the error is raised."""
        deadline = time.monotonic() + patience
        while True:
            try:
                self.db.execute(f"PRAGMA journal_mode={JOURNAL_MODE}")
                self.db.execute("PRAGMA synchronous=NORMAL")
                schema.migrate(self.db, self.path)
                return
            except sqlite3.OperationalError as exc:
                if not any(w in str(exc) for w in ("locked", "disk I/O error")) or time.monotonic() > deadline:
                    raise
                if self.db.in_transaction:
                    self.db.rollback()
                time.sleep(0.05)

    def _open_read_only(self) -> None:
        self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            version = schema.version(self.db)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise unusable(exc, f"ledger {self.path} cannot be read: {exc}") from None
        if version < schema.SCHEMA_VERSION and os.access(self.path.parent, os.W_OK):
            self.db.close()
            Ledger(self.path).close()  # an older ledger is upgraded first, when it can be
            self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
            version = schema.version(self.db)
        if version != schema.SCHEMA_VERSION:
            self.db.close()
            raise LedgerError(Reason.LEDGER_UNUSABLE, f"ledger {self.path} has schema {version}, this version "
                              f"reads {schema.SCHEMA_VERSION}; a run upgrades it")

    def check(self) -> None:
        """``PRAGMA quick_check`` (every page and index, not the cross-checks): a damaged ledger is
        refused at the start of a run, naming the file, instead of failing somewhere inside it."""
        try:
            problems = [row[0] for row in self.db.execute("PRAGMA quick_check(5)")]
        except sqlite3.DatabaseError as exc:
            raise unusable(exc, f"ledger {self.path} is damaged: {exc}", Reason.LEDGER_CORRUPT) from exc
        if problems != ["ok"]:
            raise LedgerError(Reason.LEDGER_CORRUPT, f"ledger {self.path} is damaged: {'; '.join(problems)}")

    def reserve_path(self) -> Path:
        return self.path.with_name(f"{self.path.name}-reserve")

    def hold_reserve(self) -> None:
        """Hold ``RESERVE_BYTES`` beside the ledger (once; nothing when the disk has no room for it)."""
        path = self.reserve_path()
        if path.exists():
            return
        try:
            with path.open("wb") as fh:
                fh.truncate(0)
                fh.write(bytes(RESERVE_BYTES))
                fh.flush()
                os.fsync(fh.fileno())
        except OSError:
            path.unlink(missing_ok=True)

    def release_reserve(self) -> None:
        """Give the reserve back to the file system (at a fault: the ledger's last writes need it)."""
        with contextlib.suppress(OSError):
            self.reserve_path().unlink(missing_ok=True)

    def close(self) -> None:
        if not self.read_only:
            try:  # back to a rollback journal when no one else reads: then read-only opens create no files
                self.db.execute("PRAGMA busy_timeout=0")
                self.db.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.OperationalError:
                pass  # another connection is open; it is left in WAL mode
        self.db.close()


def ledger_path_for(out_root: Path, settings: Settings) -> Path:
    """Where the ledger of an output root lives (``settings.ledger_path`` or OUT/ledger.sqlite)."""
    return settings.ledger_path or (out_root / "ledger.sqlite")
