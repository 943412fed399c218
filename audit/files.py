"""Durable file writes under an output root: atomic replacement, never outside the root.

Shared by the documents (flows/emit.py), the revision store and the datasets, so it lives here,
below ``flows``.
"""

from __future__ import annotations

import os
from pathlib import Path


class PathEscape(ValueError):
    """A computed output path would leave the output root (a bug guard: ids are made safe first)."""


def resolve_inside(root: Path, relpath: str) -> Path:
    """The absolute path of ``relpath`` under ``root``, refusing anything that escapes it."""
    base = root.resolve()
    target = (base / relpath).resolve()
    if target != base and base not in target.parents:
        raise PathEscape(f"{relpath!r} escapes the output root")
    return target


def atomic_write(path: Path, data: bytes) -> bool:
    """Write through a temporary file in the same folder, fsync, then rename over the target.

    Returns False (and writes nothing) when the file already holds exactly these bytes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return True
