"""The ``reconstruct`` command with a fault injected into the atomic writer (audit/files.py), for the
fault tests.

``python -m tests.hardening.faultinject ERRNO AFTER run ...`` makes every document write after the
first AFTER fail with ERRNO (ENOSPC: a full disk; EROFS: an output gone read-only).

``python -m tests.hardening.faultinject readonly AFTER run ...`` is EROFS after AFTER documents with a
ledger gone read-only too: SQLite refuses the run's ``failed`` status, as on an output a file system
remounted read-only.

``python -m tests.hardening.faultinject inflight DIR run ... --workers 2`` sets up, in the pool's
workers, two shards in flight at once, in this order and without any timing: the shard whose first
input is named ``b…`` writes its documents, says so (``DIR/b-landed``) and then waits until the run
has recorded an ``a…`` input before it returns; the shard whose first input is named ``a…`` waits for
``DIR/b-landed``, then writes one document and meets ENOSPC at the next. So the ``b`` shard is in
flight, its documents on disk, when the run learns of the full disk.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import sqlite3
import sys
import time
from pathlib import Path

from audit.files import Batch

INFLIGHT = "FAULTINJECT_INFLIGHT"
PATIENCE = 120.0  # a wait that never ends would hang the test; past it the shard goes on regardless


def inject(code: int, after: int) -> None:
    real, seen = Batch.stage, []

    def failing(self, target, data, mode=0o644):
        if "sessions" in target.parts:
            seen.append(target)
            if len(seen) > after:
                raise OSError(code, os.strerror(code), str(target))
        return real(self, target, data, mode)

    Batch.stage = failing


def read_only_ledger() -> None:
    """The ledger refuses a run's failed status as SQLite does on a read-only file system."""
    from audit.ledger import Ledger, LedgerError
    from audit.ledger.runs import Runs
    from models.errors import Reason
    from models.status import RunStatus

    real, opened, refused = Runs.finish, Ledger.__init__, []

    def finish(self, run_id, finished_at, status, seconds):
        if status is RunStatus.FAILED:
            refused.append(run_id)
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return real(self, run_id, finished_at, status, seconds)

    def open_(self, path, *, read_only=False):
        if refused and not read_only:  # from then on the ledger cannot be opened for writing either
            raise LedgerError(Reason.OUTPUT_READ_ONLY,
                              f"ledger {path} cannot be used: attempt to write a readonly database") \
                from sqlite3.OperationalError("attempt to write a readonly database")
        opened(self, path, read_only=read_only)

    Runs.finish, Ledger.__init__ = finish, open_


def _wait_for(done, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not done():
        if time.monotonic() > deadline:
            print(f"faultinject: gave up waiting for {what}", file=sys.stderr)
            return
        time.sleep(0.05)


def _recorded_a(ledger_path: Path) -> bool:
    """Whether the run has recorded an input of the ``a`` shard."""
    try:
        db = sqlite3.connect(f"file:{ledger_path}?mode=ro", uri=True, timeout=30)
        try:
            return db.execute("SELECT 1 FROM files WHERE source_key LIKE '%/a%' LIMIT 1").fetchone() is not None
        finally:
            db.close()
    except sqlite3.Error:
        return False


def _in_flight(folder: Path) -> None:
    """In a pool worker: the two shards of the ``inflight`` scenario (see the module's doc)."""
    import flows.core.shard

    real = flows.core.shard.run_shard
    landed = folder / "b-landed"

    def run_shard(refs, out_root, settings, **kwargs):
        first = refs[0].name.rsplit("/", 1)[-1] if refs else ""
        if first.startswith("b"):
            result = real(refs, out_root, settings, **kwargs)
            landed.touch()
            _wait_for(lambda: _recorded_a(kwargs["ledger_path"]), "the a shard's rows")
            return result
        if first.startswith("a"):
            _wait_for(landed.exists, "the b shard's documents")
            restore = Batch.stage
            inject(errno.ENOSPC, 1)
            try:
                return real(refs, out_root, settings, **kwargs)
            finally:
                Batch.stage = restore
        return real(refs, out_root, settings, **kwargs)

    flows.core.shard.run_shard = run_shard


def _preload_in_workers() -> None:
    """The pool's workers are forked from a fork server that imports only what it preloads: this
    module joins the list, and sets the scenario up there when imported."""
    from flows import pool

    real = pool.LocalPool._new

    def _new(self):
        executor = real(self)
        multiprocessing.get_context("forkserver").set_forkserver_preload(["flows.core.shard", __name__])
        return executor

    pool.LocalPool._new = _new


def main() -> None:
    name, arg, *args = sys.argv[1:]
    if name == "inflight":
        os.environ[INFLIGHT] = arg  # read by this module in the fork server (below)
        _preload_in_workers()
    elif name == "readonly":
        inject(errno.EROFS, int(arg))
        read_only_ledger()
    else:
        inject(getattr(errno, name), int(arg))
    from flows.cli.app import app

    sys.argv = ["reconstruct", *args]
    app()


if __name__ == "__main__":
    main()
elif os.environ.get(INFLIGHT):  # imported by the fork server (the command itself runs this as __main__)
    _in_flight(Path(os.environ[INFLIGHT]))
