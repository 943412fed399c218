"""Where documents and quarantine records go under the output root (the shard makes its writes
durable together through audit.files.Batch: atomic, never outside the root).

Layout under the output root (documented in docs/output.md):

- ``sessions/<platform>/<key id>/<sessionId>.json``: the document of a session key (#15:
  ``<platform>:<key id>``, the same conversation from every export of it), each key in its own
  folder, so an id-less session (``999.json``, rule C1) never shares a file;
- ``quarantine/<source key>/session-<n>.json`` or ``quarantine/<source key>/file.json``: what the
  gate or ingest refused, with every reason (these are not session documents);
- ``ledger.sqlite``: the run ledger.

Both parts of the key pass through the same safe mapping as session ids (normalizers.ids), so
nothing from the input can name a path outside the root. Quarantine records stay by source:
``<source key>`` is the input's path below its root, prefixed by the root's name; a part ending in
``.json`` gets ``.d`` appended as a folder name, so no folder matches ``*.json``. Outputs of the
layout before keys (``sessions/<source key>/...``, ``legacy_relpath``) are moved to their key's
address when that key's document is written, as recorded revisions (flows/core/shard.py).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from normalizers.ids import NO_ID, safe_path_part


def folder(source_key: str) -> str:
    """The output folder of a source: its key, with ``.d`` after any part ending in ``.json``, so
    that no folder looks like a JSON file to tools that glob ``*.json`` (conversations.json.d/)."""
    return "/".join(p + ".d" if p.lower().endswith(".json") else p for p in source_key.split("/"))


def document_relpath(session_key: str, session_id: str) -> str:
    """The address of a session key's document: ``sessions/<platform>/<key id>/<sessionId>.json``."""
    platform, _, ident = session_key.partition(":")
    return f"sessions/{safe_path_part(platform)}/{safe_path_part(ident)}/{session_id}.json"


def legacy_relpath(source_key: str, session_id: str, ordinal: int) -> str:
    """Where the layout before keys put a session's document (by the file it came from)."""
    if session_id == NO_ID:
        return f"sessions/{folder(source_key)}/unidentified-{ordinal}/{NO_ID}.json"
    return f"sessions/{folder(source_key)}/{session_id}.json"


def quarantine_relpath(source_key: str, ordinal: int | None) -> str:
    leaf = "file.json" if ordinal is None else f"session-{ordinal}.json"
    return f"quarantine/{folder(source_key)}/{leaf}"


def key_quarantine_relpath(session_key: str) -> str:
    """The quarantine record of a key whose merge failed (its earlier document stays)."""
    platform, _, ident = session_key.partition(":")
    return f"quarantine/keys/{safe_path_part(platform)}/{safe_path_part(ident)}/merge.json"


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


def clean_temporaries(root: Path) -> int:
    """Remove temporary files a killed run left behind; returns how many."""
    removed = 0
    for sub in ("sessions", "quarantine", ".revisions", "datasets", ".spool"):
        base = root / sub
        if base.is_dir():
            for tmp in base.rglob(".*.tmp"):
                tmp.unlink(missing_ok=True)
                removed += 1
    return removed
