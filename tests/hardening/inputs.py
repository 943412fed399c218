"""Hostile inputs of the second reliability round, built into a folder (never stored).

Each builder writes its files into ``folder`` and returns what the ledger must say of each input it
made: ``{source path below the folder: (file status, reason or None)}``. The tests run them one by one
and all at once.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from tests.hardening.corpus import GOOD_TRANSCRIPT

Expected = dict[str, tuple[str, str | None]]


def transcript(n: int) -> bytes:
    return GOOD_TRANSCRIPT.replace("s-1", f"s-{n}").encode()


def entry_offset(path: Path, member: str) -> int:
    """Where an entry's compressed data starts in a zip."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    with open(path, "rb") as fh:
        fh.seek(info.header_offset + 26)
        name_len, extra_len = int.from_bytes(fh.read(2), "little"), int.from_bytes(fh.read(2), "little")
    return info.header_offset + 30 + name_len + extra_len


def patch(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset:offset + len(data)] = data
    path.write_bytes(bytes(raw))


def corrupt_deflate_zip(folder: Path) -> Expected:
    """Twelve transcripts, one of whose deflate streams is damaged (an invalid block type: zlib.error)."""
    path = folder / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(12):
            zf.writestr(f"chat{i:02d}.txt", transcript(100 + i) + b"User: and some more words\n" * 5)
    patch(path, entry_offset(path, "chat05.txt"), b"\x07")  # BFINAL=1, BTYPE=11: reserved, invalid
    expected: Expected = {f"export.zip/chat{i:02d}.txt": ("ok", None) for i in range(12)}
    expected["export.zip/chat05.txt"] = ("quarantined", "archive_corrupt")
    return expected


def symlink_loops(folder: Path) -> Expected:
    """A link to itself and two links to each other."""
    os.symlink("self-loop.txt", folder / "self-loop.txt")
    os.symlink("loop-b.txt", folder / "loop-a.txt")
    os.symlink("loop-a.txt", folder / "loop-b.txt")
    return {name: ("quarantined", "symlink_loop") for name in ("self-loop.txt", "loop-a.txt", "loop-b.txt")}


def good_input(folder: Path) -> Expected:
    (folder / "good.txt").write_bytes(transcript(1))
    return {"good.txt": ("ok", None)}
