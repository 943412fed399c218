"""Where documents go and how they are written: atomic, never outside the output root.

Layout under the output root (documented in the README):

- ``sessions/<source key>/<sessionId>.json``: a session whose id comes from the source;
- ``sessions/<source key>/unidentified-<n>/999.json``: the n-th session of a source without an id
  (rule C1), so two id-less sessions never share a file;
- ``quarantine/<source key>/session-<n>.json`` or ``quarantine/<source key>/file.json``: what the
  gate or ingest refused, with every reason (these are not session documents);
- ``ledger.sqlite``: the run ledger.

A source key part ending in ``.json`` gets ``.d`` appended as a folder name
(``sessions/export/conversations.json.d/<id>.json``), so no folder matches ``*.json``.

``<source key>`` is the input's path below its root, prefixed by the root's name, each part passed
through the same safe mapping as session ids (normalizers.ids), so nothing from the input can
name a path outside the root.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from normalizers.ids import NO_ID


class PathEscape(ValueError):
    """A computed output path would leave the output root (a bug guard: ids are made safe first)."""


def folder(source_key: str) -> str:
    """The output folder of a source: its key, with ``.d`` after any part ending in ``.json``, so
    that no folder looks like a JSON file to tools that glob ``*.json`` (conversations.json.d/)."""
    return "/".join(p + ".d" if p.lower().endswith(".json") else p for p in source_key.split("/"))


def document_relpath(source_key: str, session_id: str, ordinal: int) -> str:
    if session_id == NO_ID:
        return f"sessions/{folder(source_key)}/unidentified-{ordinal}/{NO_ID}.json"
    return f"sessions/{folder(source_key)}/{session_id}.json"


def quarantine_relpath(source_key: str, ordinal: int | None) -> str:
    leaf = "file.json" if ordinal is None else f"session-{ordinal}.json"
    return f"quarantine/{folder(source_key)}/{leaf}"


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
    _sync_folder(path.parent)
    return True


def _sync_folder(folder: Path) -> None:
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def place_file(tmp: Path, path: Path) -> bool:
    """Rename a finished, synced temporary document (a streamed session's, flows/spool.py) over the
    target, then sync the folder. The temporary file must be on the output root's file system."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, path)
    _sync_folder(path.parent)
    return True


_INTERACTIONS = b'      "interactions": ['


def document_mass(path: Path) -> tuple[int, int] | None:
    """(interactions, content characters) of a document in the one layout (normalizers.encode), read
    line by line: a streamed document's predecessor is never read whole. None for another layout."""
    count = chars = 0
    inside = False
    with open(path, "rb") as fh:
        for line in fh:
            if not inside:
                if line.rstrip(b"\n") == _INTERACTIONS:
                    inside = True
                elif line.startswith(_INTERACTIONS):
                    return (0, 0) if line.rstrip(b",\n").endswith(b"[]") else None
                continue
            if not line.startswith(b"{"):
                return count, chars
            try:
                item = orjson.loads(line.rstrip(b"\n").removesuffix(b","))
            except orjson.JSONDecodeError:
                return None
            count += 1
            chars += len(item.get("content") or "")
    return None


def quarantine_record(payload: dict) -> bytes:
    """A quarantine record (not a session document: it has no top-level ``artifacts``)."""
    try:
        return orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    except (TypeError, ValueError) as exc:  # the rejected document itself may not serialise
        slim = {k: v for k, v in payload.items() if k != "rejectedDocument"}
        slim["rejectedDocument"] = f"not kept: {exc}"
        return orjson.dumps(slim, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS, default=str) + b"\n"


STOP_FILE = ".interrupt"  # present while a run is asked to stop: shards end after their current input


def request_stop(root: Path) -> None:
    """Ask the run writing into ``root`` to stop after the inputs in progress (Ctrl-C, SIGTERM)."""
    (root / STOP_FILE).touch()


def stop_requested(root: Path) -> bool:
    return (root / STOP_FILE).exists()


def clear_stop(root: Path) -> None:
    (root / STOP_FILE).unlink(missing_ok=True)


def remove_stale(root: Path, relpath: str) -> bool:
    """Remove a quarantine record its input no longer earns (the input was fixed); True if one went."""
    try:
        resolve_inside(root, relpath).unlink()
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


def clean_temporaries(root: Path) -> int:
    """Remove temporary files a killed run left behind; returns how many."""
    removed = 0
    for sub in ("sessions", "quarantine", ".revisions", ".spool"):
        base = root / sub
        if base.is_dir():
            for tmp in base.rglob(".*.tmp"):
                tmp.unlink(missing_ok=True)
                removed += 1
    return removed
