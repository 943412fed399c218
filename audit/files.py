"""Durable file writes under an output root: atomic replacement, never outside the root.

Shared by the documents (flows/core/emit.py), the revision store and the datasets, so it lives here,
below ``flows``.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable
from pathlib import Path

from models.errors import Reason, ReconstructError

_write_guard: list[Callable[[], None]] = []


def guard_writes(check: Callable[[], None]) -> None:
    """Have ``check`` run before every batch of writes in this process is made durable and visible
    (a worker's: it ends the worker once its run is gone, flows/core/lifeline.py)."""
    _write_guard[:] = [check]


def _guarded() -> None:
    for check in _write_guard:
        check()


class PathEscape(ReconstructError):
    """A computed output path would leave the output root (a bug guard: ids are made safe first)."""

    def __init__(self, relpath: str) -> None:
        super().__init__(Reason.PATH_ESCAPE, f"{relpath!r} escapes the output root", path=relpath)


def resolve_inside(root: Path, relpath: str) -> Path:
    """The absolute path of ``relpath`` under ``root``, refusing anything that escapes it."""
    base = os.path.realpath(root)
    target = os.path.realpath(os.path.join(base, relpath))
    if target != base and not target.startswith(base.rstrip("/") + "/"):
        raise PathEscape(relpath)
    return Path(target)


def same_bytes(path: Path, data: bytes | Path) -> bool:
    """True when ``path`` already holds exactly ``data`` (bytes, or the content of a file)."""
    try:
        size = path.stat().st_size
        if isinstance(data, Path):
            return size == data.stat().st_size and path.read_bytes() == data.read_bytes()
        return size == len(data) and path.read_bytes() == data
    except (FileNotFoundError, NotADirectoryError):
        return False


def temporary_for(path: Path) -> Path:
    """The temporary a write of ``path`` goes through: hidden, in the same folder (so the rename is
    atomic), named after the process (parallel writers never share one) and removed by
    ``clean_temporaries`` when a killed run leaves it behind."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


SYNCFS_FILES = 16
"""A batch of this many files is made durable by one ``syncfs`` per file system (before the renames
and after), not an fsync per file and per folder: on many small documents the fsyncs are most of
a run's time, and one flush of the file system covers every file and folder entry in it."""


@functools.cache
def _syncfs():
    """Linux's ``syncfs(2)``, or None where the C library has none (then files are fsynced one by one)."""
    try:
        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None


def syncfs(paths: dict[int, Path]) -> None:
    """Flush each file system once (``paths``: its device -> a path on it); raises OSError as fsync would."""
    call = _syncfs()
    for _, path in sorted(paths.items()):
        fd = os.open(path, os.O_RDONLY)
        try:
            if call(fd) != 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), str(path))
        finally:
            os.close(fd)


def fsync_folders(folders) -> None:
    """Make renames and links in these folders durable: one fsync per folder."""
    for folder in sorted(set(folders)):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


class Batch:
    """The writes of one shard, made durable together: every file goes to its temporary first, then
    all temporaries are fsynced, then renamed over their targets, then each touched folder is
    fsynced once (not once per file). A crash before the renames leaves only temporaries, which the
    next run removes; a crash after leaves whole files: never a half-written one.

    A file may be given as bytes or as a finished temporary file in its target's folder (a large
    document spooled by the worker), which is renamed into place as it is.
    """

    def __init__(self) -> None:
        self._staged: dict[Path, Path] = {}  # target -> its temporary, in staging order
        self._removals: list[Path] = []
        self._folders: set[Path] = set()  # made (or found) once per batch, not once per file
        self._made: set[Path] = set()  # folders this batch made itself: empty but for its own files
        self._devices: dict[int, Path] = {}  # file system -> a staged file on it (for syncfs)

    def __len__(self) -> int:
        return len(self._staged)

    def _make(self, folder: Path) -> None:
        """Make ``folder`` once per batch. Under a folder this batch made or found, that is one call
        (a new session's folder under its input's); else the folder and its parents, the parent then
        known too."""
        if folder in self._folders:
            return
        if folder.parent in self._folders:
            try:
                os.mkdir(folder)
                self._made.add(folder)
            except FileExistsError:
                if not folder.is_dir():
                    raise
        else:
            folder.mkdir(parents=True, exist_ok=True)
            self._folders.add(folder.parent)
        self._folders.add(folder)

    def stage(self, target: Path, data: bytes | Path, mode: int = 0o644) -> Path:
        """Put ``data`` in ``target``'s temporary (not yet fsynced or visible), with permissions
        ``mode``; returns the temporary."""
        folder = target.parent
        if folder not in self._folders:
            self._make(folder.parent)
            self._make(folder)
        earlier = self._staged.pop(target, None)
        if earlier is not None and earlier != data:  # staged twice: the last one wins
            earlier.unlink(missing_ok=True)
        if isinstance(data, Path):
            data.chmod(mode)
            self._devices.setdefault(data.stat().st_dev, data)
            self._staged[target] = data
            return data
        tmp = temporary_for(target)
        if folder not in self._made:  # a folder made by this batch holds no temporary a killed process left
            tmp.unlink(missing_ok=True)  # one a killed process of the same pid left, perhaps read-only
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                self._devices.setdefault(os.fstat(fd).st_dev, tmp)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self._staged[target] = tmp
        return tmp

    def stage_changed(self, target: Path, data: bytes) -> bool:
        """Stage ``data`` unless ``target`` already holds it; True when staged."""
        if same_bytes(target, data):
            return False
        self.stage(target, data)
        return True

    def remove_after(self, path: Path) -> None:
        """Remove ``path`` (if present) once the staged files are in place."""
        self._removals.append(path)

    def _whole_file_systems(self) -> bool:
        """Whether this batch is flushed by ``syncfs`` (large enough, and the call exists)."""
        return len(self._staged) >= SYNCFS_FILES and _syncfs() is not None

    def sync(self) -> None:
        """fsync every staged temporary (their bytes are durable before any of them is visible);
        a large batch flushes its file systems once instead."""
        _guarded()
        if self._whole_file_systems():
            syncfs({dev: path.parent for dev, path in self._devices.items()})
            return
        for tmp in self._staged.values():
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def publish(self, extra_folders=()) -> list[Path]:
        """Rename every staged temporary over its target, make the removals, then fsync each touched
        folder (and ``extra_folders``) once; returns the targets, in staging order."""
        _guarded()
        whole = self._whole_file_systems()
        done = []
        for target, tmp in self._staged.items():
            os.replace(tmp, target)
            done.append(target)
        self._staged.clear()
        folders = set(extra_folders)
        if not whole:
            folders |= {t.parent for t in done}
        for path in self._removals:
            try:
                path.unlink()
                folders.add(path.parent)
            except (FileNotFoundError, NotADirectoryError):
                pass
        self._removals.clear()
        if whole:  # the renames' folders are on the staged files' file systems; the others' are looked up
            devices = {**{os.stat(f).st_dev: f for f in folders}, **{d: p.parent for d, p in self._devices.items()}}
            syncfs(devices)
        else:
            fsync_folders(folders)
        self._devices.clear()
        return done

    def commit(self) -> list[Path]:
        self.sync()
        return self.publish()

    def abandon(self) -> None:
        """Drop what is staged (the temporaries go; the targets stay as they were)."""
        for tmp in self._staged.values():
            tmp.unlink(missing_ok=True)
        self._staged.clear()
        self._removals.clear()
        self._devices.clear()


def atomic_write(path: Path, data: bytes) -> bool:
    """Write one file through a temporary in the same folder, fsync, rename, fsync the folder.

    Returns False (and writes nothing) when the file already holds exactly these bytes.
    """
    batch = Batch()
    if not batch.stage_changed(path, data):
        return False
    try:
        batch.commit()
    except BaseException:
        batch.abandon()
        raise
    return True
