"""The ledger's error, and what SQLite's words say failed: the environment, never an input."""

from __future__ import annotations

import sqlite3

from models.errors import EnvironmentFault, Reason


class LedgerError(EnvironmentFault):
    """The ledger is missing, corrupt, newer than this version, or cannot be written: the environment
    failed the command, never an input; the reason code says how (``sqlite_reason``)."""


# SQLite says what failed only in words; these are its fixed messages (sqlite3.c, sqlite3ErrStr)
SQLITE_REASONS = {
    "database or disk is full": Reason.DISK_FULL,
    "attempt to write a readonly database": Reason.OUTPUT_READ_ONLY,
    "disk I/O error": Reason.OUTPUT_IO,
    "unable to open database file": Reason.LEDGER_UNUSABLE,
    "database disk image is malformed": Reason.LEDGER_CORRUPT,
    "file is not a database": Reason.LEDGER_CORRUPT,
}


def sqlite_reason(exc: sqlite3.Error) -> Reason | None:
    """The environment fault a SQLite error names, or None (a bug: bad SQL, a constraint)."""
    return next((reason for text, reason in SQLITE_REASONS.items() if text in str(exc)), None)


def unusable(exc: sqlite3.Error, message: str, otherwise: Reason = Reason.LEDGER_UNUSABLE) -> LedgerError:
    """A ``LedgerError`` for a SQLite error met opening or checking the ledger, its reason from SQLite's words."""
    return LedgerError(sqlite_reason(exc) or otherwise, message)
