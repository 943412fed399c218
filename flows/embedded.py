"""The embedded Prefect server's own process: uvicorn serving Prefect's app, which ends itself when
the run that launched it is gone.

A run stops its embedded server on the way out (``flows.serve.EmbeddedServer.stop``), but a run
killed outright (SIGKILL, the out-of-memory killer, a lost terminal session) runs no code on the
way out, and its server, in a session of its own, would live on holding a port and Prefect's
database. So the server's process watches its parent: once it is re-parented, it stops itself as
``stop`` would (SIGTERM, then a hard exit after a grace period).

Usage (from ``EmbeddedServer.launch``): ``python -m flows.embedded PARENT_PID UVICORN_ARGS...``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

WATCH_SECONDS = 0.5
GRACE_SECONDS = 10.0


def watch(parent: int, every: float = WATCH_SECONDS, grace: float = GRACE_SECONDS) -> None:
    """Return only when this process is no longer ``parent``'s child: then SIGTERM itself, and exit
    hard if that has not ended it after ``grace`` seconds."""
    while os.getppid() == parent:
        time.sleep(every)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(grace)
    os._exit(1)


def main(argv: list[str]) -> None:
    parent, uvicorn_args = int(argv[0]), argv[1:]
    threading.Thread(target=watch, args=(parent,), name="parent-watch", daemon=True).start()
    from uvicorn.main import main as uvicorn_main

    uvicorn_main(uvicorn_args, prog_name="uvicorn")


if __name__ == "__main__":
    main(sys.argv[1:])
