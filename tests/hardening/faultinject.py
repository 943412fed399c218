"""The ``reconstruct`` command with a fault injected into the atomic writer (audit/files.py), for the
fault tests: ``python -m tests.hardening.faultinject ERRNO AFTER run ...`` makes every document write
after the first AFTER fail with ERRNO (ENOSPC: a full disk; EROFS: an output gone read-only)."""

from __future__ import annotations

import errno
import os
import sys

from audit.files import Batch


def inject(code: int, after: int) -> None:
    real, seen = Batch.stage, []

    def failing(self, target, data, mode=0o644):
        if "sessions" in target.parts:
            seen.append(target)
            if len(seen) > after:
                raise OSError(code, os.strerror(code), str(target))
        return real(self, target, data, mode)

    Batch.stage = failing


def main() -> None:
    name, after, *args = sys.argv[1:]
    inject(getattr(errno, name), int(after))
    from flows.cli import app

    sys.argv = ["reconstruct", *args]
    app()


if __name__ == "__main__":
    main()
