"""Faults of the environment turned into one line and an exit code: the one place that knows them.

A full disk, an output gone read-only, a damaged ledger, Prefect out of reach, too few file
descriptors: none is a bug and none is an input's doing, so each ends the command with exit 4 and
one line on stderr naming the fault, never a traceback. The traceback goes to a log file under the
output root (``OUT/logs/``, or the system's temporary folder when the output cannot take it), and
the line names that file. ``fault_of`` recognises the exceptions these faults raise, wherever they
come from (the file system, SQLite, Prefect's HTTP client) and however they were chained;
``verdict`` is the line and the exit code. A run's own ending status asks ``fault_of`` too
(flows/pipeline.py: a fault ends a run ``failed``, anything else ``crashed``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import logging
import os
import re
import sqlite3
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from audit.ledger import sqlite_reason
from models.errors import EnvironmentFault, Reason

LOG_FOLDER = "logs"

_ERRNO_REASONS = {
    errno.ENOSPC: Reason.DISK_FULL,
    errno.EDQUOT: Reason.DISK_FULL,
    errno.EROFS: Reason.OUTPUT_READ_ONLY,
    errno.EACCES: Reason.OUTPUT_READ_ONLY,
    errno.EPERM: Reason.OUTPUT_READ_ONLY,
    errno.EMFILE: Reason.TOO_MANY_OPEN_FILES,
    errno.ENFILE: Reason.TOO_MANY_OPEN_FILES,
    errno.EIO: Reason.OUTPUT_IO,
}
_WHAT = {
    Reason.DISK_FULL: "disk full",
    Reason.OUTPUT_READ_ONLY: "output not writable",
    Reason.OUTPUT_IO: "the output's file system failed",
    Reason.FILE_SYSTEM: "file system error",
    Reason.LEDGER_CORRUPT: "ledger damaged",
    Reason.LEDGER_UNUSABLE: "ledger cannot be opened or written",
    Reason.PREFECT_UNAVAILABLE: "Prefect unavailable",
    Reason.PREFECT_HOME: "Prefect home not writable",
    Reason.TOO_MANY_OPEN_FILES: "too many open files (EMFILE)",
}
_NEXT = {
    Reason.DISK_FULL: "free space and run again (the inputs written are recorded and skipped)",
    Reason.OUTPUT_READ_ONLY: "make the output writable and run again",
    Reason.OUTPUT_IO: "check the device and run again",
    Reason.LEDGER_CORRUPT: "move it aside or restore a copy (a new ledger reads every input again; "
                           "the documents stay, see docs/faults.md)",
    Reason.TOO_MANY_OPEN_FILES: "raise it (ulimit -n 1024) and run again",
    Reason.LEDGER_UNUSABLE: "check that its folder is writable and has space, then run again",
}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, then what caused it, then what it happened during (each once)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def fault_of(exc: BaseException) -> EnvironmentFault | None:
    """The environment fault behind ``exc`` (anywhere in its chain), or None for anything else."""
    for link in _chain(exc):
        fault = _one(link)
        if fault is not None:
            return fault
    return None


def _one(exc: BaseException) -> EnvironmentFault | None:
    """``exc`` itself as a fault: an ``EnvironmentFault`` (the ledger's errors are) as it is, a file
    system, SQLite or Prefect client error by its errno, message or class."""
    if isinstance(exc, EnvironmentFault):
        return exc
    if isinstance(exc, OSError) and not _prefect_unreachable(exc):
        where = exc.filename if isinstance(exc.filename, str | os.PathLike) else None
        reason = _ERRNO_REASONS.get(_errno_of(exc), Reason.FILE_SYSTEM)
        return EnvironmentFault(reason, exc.strerror or str(exc), path=str(where) if where else None)
    if _from_polars_io(exc):  # polars (Rust) says the errno only in its message: "(os error 30)"
        reason = _ERRNO_REASONS.get(int(_RUST_ERRNO.search(str(exc)).group(1)), Reason.FILE_SYSTEM)
        return EnvironmentFault(reason, str(exc))
    if isinstance(exc, sqlite3.Error):
        reason = sqlite_reason(exc)
        return EnvironmentFault(reason, f"SQLite: {exc}") if reason else None
    if _prefect_unreachable(exc):
        return EnvironmentFault(Reason.PREFECT_UNAVAILABLE, f"at {_url(exc)}: {exc or type(exc).__name__}")
    return None


_STOPS = {Reason.DISK_FULL: errno.ENOSPC, Reason.OUTPUT_READ_ONLY: errno.EROFS}


def stops_writes(exc: BaseException) -> tuple[int, str] | None:
    """(errno, what) when ``exc`` is a full or read-only output refusing a write (a shard then stops and
    returns what it wrote, as for ``ENOSPC``: flows/core/shard.py), else None. SQLite says it only in words."""
    fault = fault_of(exc)
    if fault is None or fault.reason not in _STOPS:
        return None
    return _STOPS[fault.reason], fault.detail


def _errno_of(exc: OSError) -> int | None:
    """The errno of an OSError, also of one raised by Rust code (polars) that has it only in its
    message, as "(os error 30)"."""
    if exc.errno is not None:
        return exc.errno
    found = _RUST_ERRNO.search(str(exc))
    return int(found.group(1)) if found else None


_RUST_ERRNO = re.compile(r"\(os error (\d+)\)")


def _from_polars_io(exc: BaseException) -> bool:
    """A polars error that is an I/O error underneath (a Parquet part written to a full or read-only
    output raises ``ComputeError``, not ``OSError``)."""
    return type(exc).__module__.startswith("polars") and _RUST_ERRNO.search(str(exc)) is not None


def _url(exc: BaseException) -> str:
    """The URL an httpx error was about (its request's), else the configured API's."""
    try:
        return str(exc.request.url)
    except (AttributeError, RuntimeError):  # httpx raises RuntimeError when the request is unset
        return os.environ.get("PREFECT_API_URL", "the Prefect API")


def _prefect_unreachable(exc: BaseException) -> bool:
    """Prefect's client could not reach its API (httpx's transport errors: refused, timed out, reset)."""
    try:
        import httpx
    except ImportError:  # Prefect not installed: nothing of it can fail
        return False
    return isinstance(exc, httpx.TransportError)


def line_of(fault: EnvironmentFault, log: Path | None = None) -> str:
    """The one line for ``fault``: what failed, where, what to do, and where the traceback is."""
    what = _WHAT.get(fault.reason, fault.reason.value)
    parts = [f"{what}: {fault.detail}" + (f" ({fault.path})" if fault.path else "")]
    if fault.reason in _NEXT:
        parts.append(_NEXT[fault.reason])
    if log is not None:
        parts.append(f"details in {log}")
    return "; ".join(parts).replace("\n", " ")


def verdict(exc: BaseException, out: Path | None) -> tuple[str, int] | None:
    """The one line and the exit code for an exception that is an environment fault (its traceback
    written to a log first), or None: not a fault, the caller lets it propagate."""
    from .exits import ExitCode  # the command line's (typer): not imported by the workers, which ask stops_writes

    fault = fault_of(exc)
    if fault is None:
        return None
    line = line_of(fault, write_log(exc, out))
    notes = getattr(exc, "__notes__", ())
    if any(note.startswith(IN_FLIGHT_UNRECORDED) for note in notes):
        line += "; the ledger could not record every document written (the next run records them)"
    kept = next((note[len(KEPT):] for note in notes if note.startswith(KEPT)), None)
    if kept is not None:
        line += f"; the ledger could not record the run's end either: kept in {kept}, the next run records it"
    elif any(note.startswith(UNRECORDED) for note in notes):
        line += "; the ledger could not record the run's end either (the next run marks it interrupted)"
    return line, ExitCode.CANNOT_START


UNRECORDED = "the ledger could not record the run's end"
"""The note flows/pipeline.py adds to a run's exception when even its ``failed`` status could not be
written (an output gone read-only holds the ledger too)."""
KEPT = "the run's end is kept outside the output in "
"""The note flows/pipeline.py adds when that end was kept in a file outside OUT (``keep_end``)."""
IN_FLIGHT_UNRECORDED = "the ledger could not record what the shards in flight wrote"
"""The note flows/pipeline.py adds when the rows of a shard that finished at the fault could not be
recorded: its documents are on disk, and the next run records them without writing them again."""


@dataclass(frozen=True, slots=True)
class KeptEnd:
    """How a run ended when its ledger could not take it (an output gone read-only holds the ledger
    too), kept outside OUT until a run can write that ledger again (flows/pipeline.py)."""

    ledger: str  # the ledger's absolute path
    run_id: str
    status: str  # the status the run should have had: failed, for a fault
    finished_at: str
    seconds: float
    why: str  # the fault's line, without the log


def _kept_folders() -> list[Path]:
    """Where ends are kept: the user's state folder (XDG_STATE_HOME, else ~/.local/state), else the
    system's temporary folder; never under OUT, which is what failed."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return [Path(state) / "reconstruct" / KEPT_FOLDER, Path(tempfile.gettempdir()) / f"reconstruct-{KEPT_FOLDER}"]


KEPT_FOLDER = "unrecorded-ends"


def _kept_prefix(ledger: str) -> str:
    return hashlib.sha256(ledger.encode()).hexdigest()[:16]


def keep_end(end: KeptEnd) -> Path | None:
    """Write ``end`` to a file of its own outside OUT (written whole, synced, renamed into place); its
    path, or None when no folder could take it."""
    data = orjson.dumps(asdict(end), option=orjson.OPT_INDENT_2)
    for folder in _kept_folders():
        target = folder / f"{_kept_prefix(end.ledger)}-{end.run_id}.json"
        temporary = target.with_name(f".{target.name}.tmp")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with temporary.open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            temporary.replace(target)
            return target
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
    return None


def kept_ends(ledger: Path) -> list[tuple[Path, KeptEnd]]:
    """The ends kept for the ledger at ``ledger`` (each with its file), oldest run first; a file that
    cannot be read as one is left where it is."""
    name = os.path.abspath(ledger)
    found: list[tuple[Path, KeptEnd]] = []
    for folder in _kept_folders():
        for path in sorted(folder.glob(f"{_kept_prefix(name)}-*.json")) if folder.is_dir() else []:
            try:
                end = KeptEnd(**orjson.loads(path.read_bytes()))
            except (OSError, orjson.JSONDecodeError, TypeError):
                continue
            if end.ledger == name:
                found.append((path, end))
    return sorted(found, key=lambda item: item[1].run_id)


def log_path(out: Path | None) -> Path:
    """This command's log file: under OUT/logs, or the temporary folder without OUT (one per process:
    Prefect's log of a failed run and the traceback of its fault end in the same file)."""
    base = out / LOG_FOLDER if out is not None else Path(tempfile.gettempdir())
    return base / f"reconstruct-{_stamp()}.log"


@functools.cache
def _stamp() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{os.getpid()}"


def write_log(exc: BaseException, out: Path | None) -> Path | None:
    """The traceback of ``exc`` in a log under OUT (else under the temporary folder: OUT may be the
    full or read-only file system); its path, or None when neither could be written."""
    text = "".join(traceback.format_exception(exc))
    for path in dict.fromkeys([log_path(out), log_path(None)]):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(text)
            return path
        except OSError:
            continue
    return None


class _QuietFileHandler(logging.FileHandler):
    """A log file that never prints its own failure to stderr (the output may be full or read-only)."""

    def _open(self):
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()

    def emit(self, record: logging.LogRecord) -> None:
        try:  # opening the file is outside logging's own guard
            super().emit(record)
        except OSError:
            self.handleError(record)

    def handleError(self, record: logging.LogRecord) -> None:
        self.close()


@contextmanager
def prefect_logs_to_file(out: Path) -> Iterator[Path]:
    """Inside the block, Prefect's console log (its ERROR lines and tracebacks for a failed flow or
    task run) goes to a file under OUT instead of stderr, which keeps its one line; the file is
    created only if something is logged."""
    from prefect.logging.handlers import PrefectConsoleHandler

    path = log_path(out)
    handler = _QuietFileHandler(path, delay=True, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    swapped = []
    for logger in [logging.getLogger(), *(logging.getLogger(n) for n in logging.root.manager.loggerDict)]:
        for old in [h for h in getattr(logger, "handlers", []) if isinstance(h, PrefectConsoleHandler)]:
            logger.removeHandler(old)
            logger.addHandler(handler)
            swapped.append((logger, old))
    try:
        yield path
    finally:
        for logger, old in swapped:
            logger.removeHandler(handler)
            logger.addHandler(old)
        handler.close()


FILES_BASE, FILES_PER_WORKER = 64, 4
"""File descriptors a run needs: measured, a run with 2 workers fails below 40 and with 8 below 56
(docs/faults.md); below the need Prefect's event-loop thread dies and the run hangs."""


def check_open_files(workers: int) -> None:
    """Raise the soft limit on open files to what a run needs when the hard limit allows; else an
    EnvironmentFault naming the limit (before anything starts: past it the run would hang)."""
    import resource

    need = FILES_BASE + FILES_PER_WORKER * workers
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    if hard == resource.RLIM_INFINITY or hard >= need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        return
    raise EnvironmentFault(Reason.TOO_MANY_OPEN_FILES,
                           f"the limit is {soft} (ulimit -n) and a run with {workers} workers needs {need}")


PREFECT_API_PATIENCE = 30.0
"""Seconds a configured Prefect API that listens is given to answer its health check before a run: a
server loaded by other flows can take seconds. An address where nothing listens fails in about 2 s."""


def check_prefect_api(api_url: str | None, patience: float = PREFECT_API_PATIENCE) -> None:
    """A configured Prefect API must answer before the run starts (else Prefect fails inside the flow)."""
    from .serve import answers

    if api_url and not answers(api_url, patience):
        raise EnvironmentFault(Reason.PREFECT_UNAVAILABLE, f"no answer at {api_url} (PREFECT_API_URL)")


def check_prefect_home() -> None:
    """The embedded server keeps its database under PREFECT_HOME: it must be a folder this process
    can write, or the server fails to start with hundreds of lines of its own."""
    from prefect.settings import PREFECT_HOME

    home = Path(PREFECT_HOME.value())
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=home, prefix=".write-probe-"):
            pass
    except OSError as exc:
        raise EnvironmentFault(Reason.PREFECT_HOME, f"{home}: {exc.strerror or exc} (PREFECT_HOME)") from None
