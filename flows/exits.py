"""Exit codes of the ``reconstruct`` command line: one table that every command follows.

docs/cli.md prints the same table (a test holds the two together); a failure is always one line
on stderr naming the problem, never a traceback.
"""

from __future__ import annotations

from contextlib import contextmanager
from enum import IntEnum

import typer

from models.errors import ConfigError, Reason, ReconstructError


class ExitCode(IntEnum):
    """What a command's exit status means, whichever command it is."""

    OK = 0
    PROBLEM = 1
    USAGE = 2
    QUARANTINED = 3
    CANNOT_START = 4
    NOT_FOUND = 5
    AMBIGUOUS = 6
    INTERRUPTED = 130


MEANING: dict[ExitCode, str] = {
    ExitCode.OK: "done: the run wrote every session (ok or partial) and quarantined nothing; a read command "
    "found what it was asked for",
    ExitCode.PROBLEM: "the command ran and found or refused something: `verify` found a mismatch; `revert` or "
    "`apply-diff` refused (confirmation not typed, the diff does not apply, the document changed on disk)",
    ExitCode.USAGE: "the command line or the configuration is wrong: an unknown command or option, a bad flag "
    "value (`--format nope`, `--source-tz Mars/Olympus`), a misspelled or invalid setting in the config file "
    "or a `RECONSTRUCT_*` variable, a `--config` file that is missing or not TOML, a malformed revision name",
    ExitCode.QUARANTINED: "`run` or `rerun` finished but quarantined an input or a session (`reconstruct "
    "quarantine` lists them)",
    ExitCode.CANNOT_START: "the environment failed the command: an input path that does not exist, `--out` "
    "a file, read-only or a symbolic-link loop, no ledger under `--out` (nothing has run there) or a corrupt one, "
    "a full disk, Prefect unavailable, a file that cannot be read, nothing under `--out` to `export`",
    ExitCode.NOT_FOUND: "what the command line names is not there: an unknown `--run` id, `--key`, document, "
    "session id or revision",
    ExitCode.AMBIGUOUS: "a session id names several documents: the matches are listed on stdout (path, key, "
    "session id); give one of their paths",
    ExitCode.INTERRUPTED: "`run` was interrupted (Ctrl-C, SIGTERM) and is marked so in the ledger; run again "
    "to finish",
}

# Reason codes of errors a command can end with, and the exit code each one means.
REASON_EXIT: dict[Reason, ExitCode] = {
    Reason.INVALID_CONFIG: ExitCode.USAGE,
    Reason.UNKNOWN_GRAMMAR: ExitCode.USAGE,
    Reason.REVISION_SYNTAX: ExitCode.USAGE,
    Reason.UNKNOWN_DOCUMENT: ExitCode.NOT_FOUND,
    Reason.UNKNOWN_REVISION: ExitCode.NOT_FOUND,
    Reason.AMBIGUOUS_DOCUMENT: ExitCode.AMBIGUOUS,
    Reason.DOCUMENT_CHANGED: ExitCode.PROBLEM,
    Reason.STORE_CORRUPT: ExitCode.PROBLEM,
    Reason.DIFF_CHECKSUM: ExitCode.PROBLEM,
    Reason.QUERY: ExitCode.USAGE,
    Reason.NOT_FOUND: ExitCode.NOT_FOUND,
    # the environment (EnvironmentFault, the ledger's LedgerError): the command cannot start or go on
    Reason.DISK_FULL: ExitCode.CANNOT_START,
    Reason.OUTPUT_READ_ONLY: ExitCode.CANNOT_START,
    Reason.OUTPUT_IO: ExitCode.CANNOT_START,
    Reason.FILE_SYSTEM: ExitCode.CANNOT_START,
    Reason.LEDGER_CORRUPT: ExitCode.CANNOT_START,
    Reason.LEDGER_UNUSABLE: ExitCode.CANNOT_START,
    Reason.PREFECT_UNAVAILABLE: ExitCode.CANNOT_START,
    Reason.PREFECT_HOME: ExitCode.CANNOT_START,
    Reason.TOO_MANY_OPEN_FILES: ExitCode.CANNOT_START,
    Reason.CLUSTER_UNAVAILABLE: ExitCode.CANNOT_START,
}


def fail(message: str, code: ExitCode) -> typer.Exit:
    """Say one line on stderr naming the problem and stop with ``code``."""
    typer.echo(" ".join(message.split("\n")), err=True)
    raise typer.Exit(code)


def exit_for(exc: ReconstructError, otherwise: ExitCode = ExitCode.PROBLEM) -> ExitCode:
    """The exit code an error of the pipeline ends a command with (``otherwise`` unless the table says)."""
    if isinstance(exc, ConfigError):
        return ExitCode.USAGE
    return REASON_EXIT.get(exc.reason, otherwise)


@contextmanager
def one_line(what: str = "", otherwise: ExitCode = ExitCode.PROBLEM):
    """Errors of the pipeline, the ledger and the file system inside the block end the command as one line
    and their exit code (prefixed ``what: `` when given; ``otherwise`` for a reason the table does not
    name) instead of a traceback."""
    prefix = f"{what}: " if what else ""
    try:
        yield
    except ReconstructError as exc:
        fail(prefix + (f"{exc.path}: " if exc.path else "") + exc.detail, exit_for(exc, otherwise))
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        fail(f"{prefix}{exc.strerror or exc}{where}", ExitCode.CANNOT_START)
