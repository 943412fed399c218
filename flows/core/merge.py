"""The merge phase of a run (#15), without Prefect: the deferred session keys of a group, each merged
from every snapshot the ledger indexes for it and written as a new revision at the key's address.

A key is deferred by a shard when it has two or more snapshots (flows/core/snapshots.py). After the shards,
the run hands its deferred keys to this function in groups (one task per group, never per key); it
reads the snapshots' blobs, merges them (normalizers/snapshots.py: a function of the set, so the
document is the same whatever the order the files were met in), gates the merged document and stages
it through the audit trail (atomic, the earlier revision kept, the mass latch as for any document).
A key whose merge fails is quarantined with its reason and the earlier document stays.
"""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl

from audit import revisions
from audit.datasets import DocumentRows, part_name
from audit.ledger import Ledger, ReconciliationRow, SessionRow, SnapshotRecord
from audit.trail import ShardTrail
from models.errors import Reason
from models.settings import Settings
from models.status import SessionStatus
from normalizers.encode import encode_document
from normalizers.snapshots import merge, snapshot_of
from validators import gate
from validators.snapshots import check_merged

from . import emit, snapshots
from .shard import ShardResult, _committed, _latch_mass, _mass


def merge_keys(keys: list[str], out_root: Path, settings: Settings, *, ledger_path: Path,
               run_id: str | None = None, allow_shrink: bool = False) -> ShardResult:
    """Merge and write the documents of these keys; returns their ledger rows like a shard's."""
    ledger = Ledger(ledger_path, read_only=True)
    try:
        known = ledger.snapshots.of(keys)
        aliased = ledger.aliases.documents(keys)
        linked = {key: ledger.links.possibly_same(key) for key in keys}
    finally:
        ledger.close()
    trail = ShardTrail(out_root)
    result = ShardResult(part=part_name("\0merge\0" + (keys[0] if keys else "")))
    try:
        for key in keys:
            _merge_key(key, known.get(key, []), trail, result, settings, allow_shrink, aliased.get(key, []),
                       linked[key])
    except BaseException:
        trail.abandon()
        raise
    return _committed(trail, result)


def _merge_key(key: str, rows: list[SnapshotRecord], trail: ShardTrail, result: ShardResult, settings: Settings,
               allow_shrink: bool, aliased: list[str], linked: list[dict[str, str]]) -> None:
    started = time.perf_counter()
    try:
        doc, encoded, table = _merged(key, trail.out_root, rows, settings, linked)
    except Exception as exc:  # any failure of one key's merge: that key is quarantined, the run goes on
        _failed(key, rows, f"{type(exc).__name__}: {exc}", trail, result, started)
        return
    rel = emit.document_relpath(key, doc["sessionId"])
    target = trail.resolve(rel)
    old = target.read_bytes() if target.is_file() else None
    interactions = doc["artifacts"]["Chatthistorik"]["interactions"]
    mass = _Mass(len(interactions), sum(len(i["content"]) for i in interactions))
    note = f"merged {len(rows)} snapshots"
    if old is not None and old != encoded:
        latched = _latch_mass(_mass(old), mass, settings.mass_latch_threshold)
        if latched and not allow_shrink:
            _failed(key, rows, latched, trail, result, started, Reason.MASS_LATCH)
            return
        if latched:
            note = f"{note}; allow-shrink: {latched}"
    olds = [p for p in aliased if p != rel and (trail.out_root / p).is_file()]
    moved = snapshots.move_here(trail, rel, olds + snapshots.others_in_folder(trail.out_root, rel))
    note = "; ".join(x for x in (note, moved) if x)
    sha, changed = trail.document(rel, encoded, old, note=note, rows=DocumentRows.of(doc), target=target)
    result.written += changed
    result.unchanged += not changed
    history = doc["artifacts"]["Chatthistorik"]
    status = SessionStatus.PARTIAL if history.get("coverage") == "partial" else SessionStatus.OK
    result.sessions.append(SessionRow(
        key, 0, doc["sessionId"], doc["artifacts"]["ByggLogg"].get("sessionIdRaw"), status, [],
        f"merged from {len(rows)} snapshots", rel, sha, mass.interactions,
        doc["artifacts"]["ai_protocol_performance"]["sourceTurnCount"], mass.characters,
        round(time.perf_counter() - started, 6), session_key=key))
    result.reconciliation.extend(_reconciliation(key, table))


class _Mass:
    """What the mass latch compares (interactions and content characters of a document)."""

    __slots__ = ("characters", "interactions")

    def __init__(self, interactions: int, characters: int) -> None:
        self.interactions, self.characters = interactions, characters


def _merged(key: str, out_root: Path, rows: list[SnapshotRecord], settings: Settings,
            linked: list[dict[str, str]]) -> tuple[dict, bytes, pl.DataFrame]:
    """The merged document of a key's snapshots, gated, with its reconciliation table. A snapshot
    resolved to the key on proof (another export of the conversation) carries its own key: the
    document says the key it is kept under, and the keys that are possibly the same conversation."""
    if not rows:
        raise ValueError("no snapshot of this key is indexed")
    snaps = [snapshot_of(revisions.get_blob(out_root, r.blob_sha256)) for r in rows]
    merged = merge(snaps, settings)
    doc = merged.document
    log = doc["artifacts"]["ByggLogg"]
    if log.get("sessionKey") != key:
        log["sessionKeySource"] = (f"{log.get('sessionKeySource')}; another export of the session "
                                   f"{key}, proved by the message-print index")
        log["sessionKey"] = key
    if linked:
        log["possiblySame"] = linked
    encoded = encode_document(doc)
    turns = doc["artifacts"]["ai_protocol_performance"]["sourceTurnCount"]
    failures = [*gate.check(doc, encoded, turns).failures, *check_merged(merged, snaps)]
    if failures:
        raise ValueError("the merged document fails the gate: " + "; ".join(
            f"{f.reason.value} at {f.path}: {f.message}" for f in failures[:5]))
    return doc, encoded, merged.reconciliation


def _reconciliation(key: str, table: pl.DataFrame) -> list[ReconciliationRow]:
    return [ReconciliationRow(key, r["source_sha256"], r.get("expected"), r["reconstructed"], r["new"],
                              r["unchanged"], r["absent"], r["edited"]) for r in table.iter_rows(named=True)]


def _failed(key: str, rows: list[SnapshotRecord], detail: str, trail: ShardTrail, result: ShardResult, started: float,
            reason: Reason = Reason.SNAPSHOT_MERGE) -> None:
    """A key whose merge failed: its earlier document stays; a quarantine record says why."""
    record = emit.key_quarantine_relpath(key)
    trail.batch.stage_changed(trail.resolve(record), emit.quarantine_record({
        "status": SessionStatus.QUARANTINED, "sessionKey": key, "reasons": [reason.value], "detail": detail,
        "snapshots": [{"sha256": r.source_sha256, "path": r.source_path} for r in rows]}))
    result.sessions.append(SessionRow(
        key, 0, key, None, SessionStatus.QUARANTINED, [reason.value], detail, record, None, 0, 0, 0,
        round(time.perf_counter() - started, 6), session_key=key))

