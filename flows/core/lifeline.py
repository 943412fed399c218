"""Worker processes end with the run's main process, and never write into the output after it.

A run killed outright (SIGKILL, the out-of-memory killer) runs no code on its way out. Its pool
workers are not its children (the fork server's), so the kernel's parent-death signal
(``PR_SET_PDEATHSIG``) would fire only when the fork server dies, and the fork server and the
resource tracker live as long as a worker holds their pipes: left alone, the workers finish their
shards and write documents that no ledger records. So each worker, as it starts, ties itself to
the run's main process: a thread waits on a ``pidfd`` of that process (Linux 5.3+; elsewhere it
polls the pid) and ends the worker the moment the main process is gone, and every batch of writes
asks ``check`` first (``audit.files.guard_writes``), so a write that races the watcher does not
happen either. Once the workers are gone, the fork server and the resource tracker read the end of
their pipes and exit by themselves.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time

from audit import files

ORPHANED = 70  # the exit status of a worker whose run is gone (nobody reads it but the fork server)
POLL_SECONDS = 0.2  # only where there is no pidfd

_owner: int | None = None
_pidfd: int | None = None


def worker_start(owner: int) -> None:
    """A pool worker's initializer: Ctrl-C is left to the main process, which asks the workers to
    stop between inputs (so what they did is returned and recorded) or, on a second Ctrl-C, kills
    them; and the worker ends with the run's main process ``owner``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tie_to(owner)


def tie_to(owner: int) -> None:
    """Make this process end when process ``owner`` ends (called once, in a worker's initializer)."""
    global _owner, _pidfd
    _owner = owner
    try:
        _pidfd = os.pidfd_open(owner)
    except ProcessLookupError:
        os._exit(ORPHANED)
    except (AttributeError, OSError):  # no pidfd here: the watcher polls
        _pidfd = None
    threading.Thread(target=_watch, name="owner-watch", daemon=True).start()
    files.guard_writes(check)


def owner() -> int:
    """The run's main process: the one this process is tied to, else this process itself."""
    return _owner if _owner is not None else os.getpid()


def alive() -> bool:
    """Whether the process this one is tied to still runs (True when tied to none)."""
    if _owner is None:
        return True
    if _pidfd is not None:
        return not select.select([_pidfd], [], [], 0)[0]
    try:
        os.kill(_owner, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check() -> None:
    """End this process at once if the run it works for is gone (before any write it would make)."""
    if not alive():
        os._exit(ORPHANED)


def _watch() -> None:
    if _pidfd is not None:
        select.select([_pidfd], [], [])
    else:
        while alive():
            time.sleep(POLL_SECONDS)
    os._exit(ORPHANED)
