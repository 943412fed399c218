"""The gate's check of a merged document: every snapshot's message in exactly one merged interaction.

Run beside validators.gate.check (which checks the merged document as any other) on what
normalizers.snapshots.merge returned:

- every interaction of every snapshot maps to exactly one merged interaction, and no merged
  interaction holds two of one snapshot's;
- each merged interaction's ``snapshots`` names exactly the snapshots that map to it;
- the reconciliation adds up: per snapshot new + unchanged + edited = reconstructed, and with absent
  they make the distinct messages of the snapshots up to it; the new ones of all make the document.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from models.errors import Reason
from normalizers.snapshots import Merged, Snapshot

from .gate import GateFailure

_WHERE = "$.artifacts.Chatthistorik.interactions"


def check_merged(merged: Merged, snapshots: Sequence[Snapshot]) -> list[GateFailure]:
    """The failures of the merge's accounting (empty when it holds)."""
    out: list[GateFailure] = []
    interactions = merged.document["artifacts"]["Chatthistorik"]["interactions"]
    distinct = {s.source_sha256: s.table.height for s in snapshots}
    _check_mapping(merged.mapping, distinct, len(interactions), out)
    if len(distinct) > 1:
        _check_provenance(merged.mapping, interactions, out)
    _check_counts(merged.reconciliation, len(interactions), out)
    return out


def _fail(out: list[GateFailure], path: str, message: str) -> None:
    out.append(GateFailure(Reason.SNAPSHOT_MERGE, path, message))


def _check_mapping(mapping: pl.DataFrame, distinct: dict[str, int], count: int, out: list[GateFailure]) -> None:
    for sha, height in sorted(distinct.items()):
        ordinals = mapping.filter(pl.col("source_sha256") == sha)
        if sorted(ordinals["ordinal"].to_list()) != list(range(1, height + 1)):
            _fail(out, _WHERE, f"snapshot {sha[:12]}: its {height} interactions are not each merged exactly once")
        if ordinals["merged_ordinal"].n_unique() != ordinals.height:
            _fail(out, _WHERE, f"snapshot {sha[:12]}: two of its interactions merged into one")
    extra = set(mapping["source_sha256"].unique().to_list()) - set(distinct)
    if extra:
        _fail(out, _WHERE, f"interactions of unknown snapshots: {sorted(extra)}")
    merged = set(mapping["merged_ordinal"].to_list())
    if merged != set(range(1, count + 1)):
        _fail(out, _WHERE, f"{count} merged interactions, {len(merged)} reached from the snapshots")


def _check_provenance(mapping: pl.DataFrame, interactions: list[dict], out: list[GateFailure]) -> None:
    holders = mapping.group_by("merged_ordinal").agg(pl.col("source_sha256").sort())
    by_ordinal = dict(zip(holders["merged_ordinal"].to_list(), holders["source_sha256"].to_list(), strict=True))
    for n, item in enumerate(interactions, 1):
        if sorted(item.get("snapshots") or []) != by_ordinal.get(n, []):
            _fail(out, f"{_WHERE}[{n - 1}].snapshots", "does not name the snapshots that hold it")


def _check_counts(reconciliation: pl.DataFrame, count: int, out: list[GateFailure]) -> None:
    seen = 0
    for row in reconciliation.iter_rows(named=True):
        sha = row["source_sha256"][:12]
        if row["new"] + row["unchanged"] + row["edited"] != row["reconstructed"]:
            _fail(out, "$reconciliation", f"snapshot {sha}: new + unchanged + edited != reconstructed")
        seen += row["new"]
        if row["new"] + row["unchanged"] + row["edited"] + row["absent"] != seen:
            _fail(out, "$reconciliation", f"snapshot {sha}: its messages and the absent ones are not all known")
    if seen != count:
        _fail(out, "$reconciliation", f"{seen} new messages in all, {count} merged interactions")
