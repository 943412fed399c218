"""Snapshots of one session merged into one document: a later export of a known chat is a revision.

A *snapshot* is the gated single-snapshot document of a session from one source (``snapshot_of``).
``merge`` makes the document of a session from the SET of its snapshots; nothing depends on the order
they are given in (two with the same source sha256 are one):

- **Order.** Snapshots are ranked oldest to latest by (last message time, message count, sha256): the
  *latest* is the one with the latest last-message time, never the one read last. Ranks decide every
  tie below, so the result is a function of the set.
- **Matching.** Each snapshot's messages are matched, in rank order, to the messages merged so far,
  at most one of a snapshot's messages per merged message: first by the platform's message id where the
  grammar keeps one (``keys.MESSAGE_ID_FIELDS``) and both messages have it; then by author, normalised
  content (``keys.normal_content``: NFC, line ends, whitespace; media placeholders alike) and time within
  ``Settings.snapshot_time_tolerance_seconds`` (default 60 s) after the snapshot's zone shift: the
  whole number of quarter hours (up to 26 h) that most author-and-content pairs agree on (a phone in another
  zone; at least ``SHIFT_EVIDENCE`` of them); finally, where neither has a message id, an unmatched
  message of the same author at the same time (within the tolerance) is the earlier one edited.
- **Union in time order.** Messages unmatched become new merged messages, placed after the message
  their snapshot had before them; the whole is sorted by time (in the latest snapshot's zone frame)
  when every message has one, that placement breaking ties (and deciding the order when not).
- **Per interaction.** The text, source span and fields are the latest snapshot's that holds the
  message; ``snapshots`` lists the snapshots (sha256) that hold it, ``source.sha256`` the one its span
  points into; a message not in the latest snapshot is kept with ``absent``: ``deleted`` when its time
  (or place) lies inside the latest snapshot's range, ``outside_range`` when before or after it; an
  edited message keeps its earlier texts in ``editHistory`` with the snapshots that had them.
- **Envelope.** The latest snapshot's, with ``ByggLogg.snapshots`` (each snapshot's path, sha256, time
  range, count, zone shift), the redactions and session record of every snapshot renumbered to the
  merged ordinals, and coverage partial when any snapshot's is, the reason naming the snapshot.
- **Reconciliation.** One row per snapshot, in rank order: expected (the source's own message counter
  where the grammar records one, else its independent turn count), reconstructed, and, against the
  snapshots ranked before it, new, unchanged, edited, and absent (known before, not in it).

A single snapshot is returned as its own document, byte for byte.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import orjson
import polars as pl

from models.settings import Settings
from parsers.memory import paused_gc

from .keys import (
    KEY_MESSAGES,
    MAX_SHIFT_SECONDS,
    MESSAGE_ID_FIELDS,
    SHIFT_STEP_SECONDS,
    Message,
    Scope,
    content_hashes,
    id_space,
    index_print,
    is_system,
    session_key,
)

SHIFT_EVIDENCE = 3
"""How many messages must agree on a zone shift other than none (all of a snapshot with fewer)."""
TABLE_SCHEMA = {"ordinal": pl.Int64, "msg_id": pl.String, "author": pl.String, "kind": pl.String,
                "date": pl.String, "hash": pl.String, "line": pl.String}
RECONCILIATION_SCHEMA = {"key": pl.String, "source_sha256": pl.String, "expected": pl.Int64,
                         "reconstructed": pl.Int64, "new": pl.Int64, "unchanged": pl.Int64,
                         "absent": pl.Int64, "edited": pl.Int64}
MAPPING_SCHEMA = {"source_sha256": pl.String, "ordinal": pl.Int64, "merged_ordinal": pl.Int64}
_ISO = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One session's document from one source, as a table: ``head`` is the document without its
    interactions; ``table`` has a row per interaction (``TABLE_SCHEMA``: the match columns and ``line``,
    the interaction's compact JSON)."""

    key: str
    source_sha256: str
    head: dict
    table: pl.DataFrame


@dataclass(frozen=True, slots=True)
class Merged:
    """The merged document (gate-ready, encode with normalizers.encode), one reconciliation row per
    snapshot (``RECONCILIATION_SCHEMA``) and where each snapshot's interaction went
    (``MAPPING_SCHEMA``: its ordinal in its snapshot -> its ordinal in the merged document)."""

    document: dict
    reconciliation: pl.DataFrame
    mapping: pl.DataFrame


def _message_id(item: dict[str, Any], fields: tuple[str, ...], space: str) -> str | None:
    """The platform's message id, within its id space (``<space>|<id>``: Telegram's private chats and
    basic groups number messages per account, so an id means nothing in another account's export)."""
    extra = item.get("sourceFields") or {}
    for name in fields:
        value = extra.get(name)
        if value not in (None, ""):
            return f"{space}|{value}"
    return None


def _lines(document: bytes, interactions: list[dict[str, Any]]) -> list[str]:
    """Each interaction's compact JSON: the document's own lines in its one layout (normalizers/encode:
    an interaction per line, the envelope indented), else each encoded again."""
    lines = [line.rstrip(b",").decode() for line in document.split(b"\n") if line.startswith(b'{"ordinal":')]
    if len(lines) == len(interactions):
        return lines
    return [orjson.dumps(item).decode() for item in interactions]


def snapshot_of(document: bytes) -> Snapshot:
    """A snapshot from a gated document's bytes."""
    with paused_gc():
        doc = orjson.loads(document)
        history = doc["artifacts"]["Chatthistorik"]
        interactions = history["interactions"]
        head = {**doc, "artifacts": {**doc["artifacts"], "Chatthistorik": {**history, "interactions": []}}}
        log = doc["artifacts"]["ByggLogg"]
        fields = MESSAGE_ID_FIELDS.get(log["grammar"]["id"], ())
        key = log.get("sessionKey") or _key_of(doc, interactions)
        space = id_space(key)
        table = pl.DataFrame({
            "ordinal": [item["ordinal"] for item in interactions],
            "msg_id": [_message_id(item, fields, space) for item in interactions],
            "author": [item["speakerName"] for item in interactions],
            "kind": [item["kind"] for item in interactions],
            "date": [item.get("date") for item in interactions],
            "hash": content_hashes([item["content"] for item in interactions], [item["kind"] for item in interactions]),
            "line": _lines(document, interactions),
        }, schema=TABLE_SCHEMA)
    return Snapshot(key, log["source"]["sha256"], head, table)


def _key_of(doc: dict[str, Any], interactions: list[dict[str, Any]]) -> str:
    """The key of a document written before keys were recorded."""
    log = doc["artifacts"]["ByggLogg"]
    earliest = [Message(i["speakerName"], i.get("date"), i["content"], i["kind"]) for i in interactions
                if not is_system(i["kind"])][:KEY_MESSAGES]
    scope = Scope.of(log["source"]["sha256"], log.get("sourceMeta") or {})
    raw = log.get("sessionIdRaw") or (None if log["sessionIdSource"].startswith("none") else doc["sessionId"])
    return session_key(log["grammar"]["id"], raw, log["sessionIdSource"],
                       doc["artifacts"]["Chatthistorik"].get("title"), earliest, scope)[0]


def snapshot_prints(snapshot: Snapshot) -> list[str]:
    """The index prints of a snapshot's messages that are not system lines, in order (``keys.index_print``;
    what the ledger's index keeps of a scoped session, for ``keys.evidence``)."""
    t = snapshot.table
    return [index_print(a, d, h) for a, d, h, k in zip(t["author"], t["date"], t["hash"], t["kind"], strict=True)
            if not is_system(k)]


# --- ranking -------------------------------------------------------------------------------------

def _range(snapshot: Snapshot) -> tuple[str | None, str | None]:
    dates = snapshot.table.get_column("date").drop_nulls()
    return (dates.min(), dates.max()) if len(dates) else (None, None)


def _ranked(snapshots: Sequence[Snapshot]) -> list[Snapshot]:
    """The distinct snapshots (by source sha256), oldest to latest (module docstring)."""
    by_sha: dict[str, Snapshot] = {}
    for s in snapshots:
        seen = by_sha.get(s.source_sha256)
        if seen is None or orjson.dumps(s.head) < orjson.dumps(seen.head):
            by_sha[s.source_sha256] = s
    return sorted(by_sha.values(), key=lambda s: (_range(s)[1] or "", s.table.height, s.source_sha256))


# --- matching ------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Row:
    rank: int
    index: int
    msg_id: str | None
    author: str
    hash: str
    seconds: int | None
    line: str


@dataclass(slots=True)
class _Cluster:
    """One merged message: its members by snapshot rank, and its place."""

    members: dict[int, _Row]
    place: tuple
    seconds: int | None
    msg_id: str | None

    @property
    def rep(self) -> _Row:
        return self.members[max(self.members)]


@dataclass(slots=True)
class _State:
    clusters: list[_Cluster] = field(default_factory=list)
    shifts: list[int] = field(default_factory=list)  # seconds, whole quarter hours
    tolerance: int = 60


def _rows(snapshot: Snapshot, rank: int) -> list[_Row]:
    t = snapshot.table
    seconds = t.select(pl.col("date").str.to_datetime(_ISO, time_zone="UTC").dt.epoch("s"))["date"]
    return [_Row(rank, i, mid, author, h, at, line)
            for i, (mid, author, h, at, line) in enumerate(zip(
                t["msg_id"], t["author"], t["hash"], seconds, t["line"], strict=True))]


def _shift(rows: list[_Row], state: _State) -> int:
    """The whole quarter hours (in seconds) that most author-and-content pairs between a snapshot and
    the merged messages agree on (0 when none do; ties: the smallest shift)."""
    known: dict[tuple[str, str], list[int]] = {}
    for c in state.clusters:
        if c.seconds is not None:
            rep = c.rep
            known.setdefault((rep.author, rep.hash), []).append(c.seconds)
    votes: dict[int, int] = {}
    for row in rows:
        if row.seconds is None:
            continue
        for seconds in known.get((row.author, row.hash), ()):
            delta = row.seconds - seconds
            step = round(delta / SHIFT_STEP_SECONDS) * SHIFT_STEP_SECONDS
            if abs(step) <= MAX_SHIFT_SECONDS and abs(delta - step) <= state.tolerance:
                votes[step] = votes.get(step, 0) + 1
    if not votes:
        return 0
    best = min(votes, key=lambda h: (-votes[h], abs(h), h))
    # a shift needs a few agreeing messages: one "ok" met hours apart in another range is no evidence
    timed = sum(row.seconds is not None for row in rows)
    return best if best == 0 or votes[best] >= min(SHIFT_EVIDENCE, timed) else 0


def _close(a: int | None, b: int | None, tolerance: int) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tolerance


def _match(rows: list[_Row], state: _State, rank: int) -> list[_Cluster | None]:
    """For each row of a snapshot, the merged message it is (None: a new one)."""
    shift = state.shifts[rank]
    matched: list[_Cluster | None] = [None] * len(rows)
    taken: set[int] = set()
    times = [None if r.seconds is None else r.seconds - shift for r in rows]
    by_id = {c.msg_id: c for c in state.clusters if c.msg_id is not None}
    for i, row in enumerate(rows):
        c = by_id.get(row.msg_id) if row.msg_id is not None else None
        if c is not None and id(c) not in taken:
            matched[i] = c
            taken.add(id(c))
    _match_by(rows, times, state, matched, taken, lambda r: (r.author, r.hash), _both_ids, timed=False)
    _match_by(rows, times, state, matched, taken, lambda r: r.author, _any_id, timed=True)
    return matched


def _both_ids(a: _Row, c: _Cluster) -> bool:
    """Both have ids of one id space (then the ids already said whether they are one message)."""
    return a.msg_id is not None and c.msg_id is not None and _space(a.msg_id) == _space(c.msg_id)


def _space(msg_id: str) -> str:
    return msg_id.partition("|")[0]


def _any_id(a: _Row, c: _Cluster) -> bool:
    return a.msg_id is not None or c.msg_id is not None


def _match_by(rows: list[_Row], times: list[int | None], state: _State, matched: list[_Cluster | None],
              taken: set[int], key, ids_differ, timed: bool) -> None:
    """Match the unmatched rows to unmatched merged messages with the same ``key`` and a close time,
    in order; ``ids_differ`` excludes pairs that their message ids already tell apart; ``timed``: only
    rows with a time (an edit is told by its time; without one, two texts are two messages)."""
    candidates: dict[Any, list[_Cluster]] = {}
    for c in state.clusters:
        if id(c) not in taken:
            candidates.setdefault(key(c.rep), []).append(c)
    for i, row in enumerate(rows):
        if matched[i] is not None or (timed and times[i] is None):
            continue
        for c in candidates.get(key(row), ()):
            if id(c) not in taken and not ids_differ(row, c) and _close(times[i], c.seconds, state.tolerance):
                matched[i] = c
                taken.add(id(c))
                break


def _absorb(snapshot: Snapshot, rank: int, state: _State) -> None:
    """Match a snapshot's messages and add it: matched rows join their message, the others are new,
    each placed after the message before it in the snapshot."""
    rows = _rows(snapshot, rank)
    state.shifts.append(_shift(rows, state) if rank else 0)
    matched = _match(rows, state, rank) if rank else [None] * len(rows)
    # a new message's place: just after the last message its snapshot shares (siblings in a gap by rank,
    # then by their order in the snapshot); before all when it shares none before it
    anchor: tuple = () if rank == 0 else ((-1, 0),)
    shift = state.shifts[rank]
    for row, cluster in zip(rows, matched, strict=True):
        if cluster is None:
            seconds = None if row.seconds is None else row.seconds - shift
            cluster = _Cluster({}, (*anchor, (rank, row.index)), seconds, row.msg_id)
            state.clusters.append(cluster)
        else:
            anchor = cluster.place
            cluster.msg_id = cluster.msg_id or row.msg_id
        cluster.members[rank] = row


def _ordered(clusters: list[_Cluster]) -> list[_Cluster]:
    if all(c.seconds is not None for c in clusters):
        return sorted(clusters, key=lambda c: (c.seconds, c.place))
    return sorted(clusters, key=lambda c: c.place)


# --- the merged document -------------------------------------------------------------------------

def merge(snapshots: Sequence[Snapshot], settings: Settings) -> Merged:
    """The document of a session from the set of its snapshots (module docstring)."""
    ranked = _ranked(snapshots)
    if not ranked:
        raise ValueError("merge needs at least one snapshot")
    with paused_gc():
        state = _State(tolerance=settings.snapshot_time_tolerance_seconds)
        for rank, snapshot in enumerate(ranked):
            _absorb(snapshot, rank, state)
        clusters = _ordered(state.clusters)
        document = _single(ranked[0]) if len(ranked) == 1 else _document(ranked, clusters, state)
        return Merged(document, _reconciliation(ranked, clusters), _mapping(ranked, clusters))


def _single(snapshot: Snapshot) -> dict[str, Any]:
    doc = copy.deepcopy(snapshot.head)
    doc["artifacts"]["Chatthistorik"]["interactions"] = [orjson.loads(line) for line in snapshot.table["line"]]
    return doc


def _moved(date: str, seconds: int) -> str:
    moved = datetime.fromisoformat(date.replace("Z", "+00:00")) - timedelta(seconds=seconds)
    return moved.strftime(_ISO)


def _interaction(cluster: _Cluster, ordinal: int, ranked: list[Snapshot], state: _State,
                 absent: str | None) -> dict[str, Any]:
    rep = cluster.rep
    item = orjson.loads(rep.line)
    item["ordinal"] = ordinal
    shift = state.shifts[rep.rank] - state.shifts[-1]
    if shift and item.get("date"):
        item["date"] = _moved(item["date"], shift)
    item["source"]["sha256"] = ranked[rep.rank].source_sha256
    item["snapshots"] = [ranked[r].source_sha256 for r in sorted(cluster.members)]
    if absent:
        item["absent"] = absent
    history: dict[str, dict[str, Any]] = {}
    for r in sorted(cluster.members):
        row = cluster.members[r]
        if row.hash != rep.hash:
            entry = history.setdefault(row.hash, {"content": orjson.loads(row.line)["content"], "snapshots": []})
            entry["snapshots"].append(ranked[r].source_sha256)
    if history:
        item["editHistory"] = list(history.values())
    return item


def _absence(clusters: list[_Cluster], latest: int) -> list[str | None]:
    """Per merged message (in order): None when the latest snapshot holds it, else deleted or
    outside_range by its time against the latest's range (or its place, without times)."""
    inside = [i for i, c in enumerate(clusters) if latest in c.members]
    dated = all(c.seconds is not None for c in clusters)
    if dated and inside:
        low, high = (min(clusters[i].seconds for i in inside), max(clusters[i].seconds for i in inside))
    out: list[str | None] = []
    for i, c in enumerate(clusters):
        if latest in c.members:
            out.append(None)
        elif not inside:
            out.append("outside_range")
        elif dated:
            out.append("deleted" if low <= c.seconds <= high else "outside_range")
        else:
            out.append("deleted" if inside[0] < i < inside[-1] else "outside_range")
    return out


def _document(ranked: list[Snapshot], clusters: list[_Cluster], state: _State) -> dict[str, Any]:
    latest = len(ranked) - 1
    absence = _absence(clusters, latest)
    interactions = [_interaction(c, n, ranked, state, absence[n - 1]) for n, c in enumerate(clusters, 1)]
    where = {(r, row.index + 1): n for n, c in enumerate(clusters, 1) for r, row in c.members.items()}
    doc = copy.deepcopy(ranked[latest].head)
    history = doc["artifacts"]["Chatthistorik"]
    history["interactions"] = interactions
    log = doc["artifacts"]["ByggLogg"]
    log["snapshots"] = [_snapshot_record(s, r, state, latest) for r, s in enumerate(ranked)]
    log["redactions"] = _redactions(ranked, where)
    log["sessionRecord"] = _session_record(ranked, where)
    _coverage(history, ranked)
    _performance(doc, interactions, log["redactions"], ranked)
    _created(doc, interactions)
    return doc


def _hours(seconds: int) -> int | float:
    """A shift in hours: whole where it is (5), else in quarters (5.5 for India)."""
    return seconds // 3600 if seconds % 3600 == 0 else seconds / 3600


def _snapshot_record(snapshot: Snapshot, rank: int, state: _State, latest: int) -> dict[str, Any]:
    first, last = _range(snapshot)
    log = snapshot.head["artifacts"]["ByggLogg"]
    record = {"sha256": snapshot.source_sha256, "path": log["source"]["path"], "first": first, "last": last,
              "interactions": snapshot.table.height,
              "timeShiftHours": _hours(state.shifts[rank] - state.shifts[latest]),
              "latest": rank == latest}
    reason = snapshot.head["artifacts"]["Chatthistorik"].get("coverageReason")
    if reason:
        record["coverageReason"] = reason
    return record


def _renumbered(entries: list[dict[str, Any]], rank: int, where: dict[tuple[int, int], int]) -> list[dict]:
    out = []
    for e in entries:
        turn = e.get("turn")
        out.append({**e, "turn": where.get((rank, turn), 0)} if isinstance(turn, int) and turn > 0 else dict(e))
    return out


def _distinct(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries without repeats, by turn (stable: a snapshot's own order within a turn)."""
    seen: set[bytes] = set()
    out = []
    for e in sorted(entries, key=lambda e: e.get("turn", 0) if isinstance(e.get("turn"), int) else 0):
        b = orjson.dumps(e, option=orjson.OPT_SORT_KEYS)
        if b not in seen:
            seen.add(b)
            out.append(e)
    return out


def _redactions(ranked: list[Snapshot], where: dict[tuple[int, int], int]) -> list[dict[str, Any]]:
    entries = []
    for r in reversed(range(len(ranked))):  # the latest's first: its envelope is the document's
        entries.extend(_renumbered(ranked[r].head["artifacts"]["ByggLogg"]["redactions"], r, where))
    return _distinct(entries)


def _session_record(ranked: list[Snapshot], where: dict[tuple[int, int], int]) -> dict[str, list]:
    out: dict[str, list] = {}
    for r in reversed(range(len(ranked))):
        for name, entries in ranked[r].head["artifacts"]["ByggLogg"]["sessionRecord"].items():
            out.setdefault(name, []).extend(_renumbered(entries, r, where))
    return {name: _distinct(entries) for name, entries in out.items()}


def _coverage(history: dict[str, Any], ranked: list[Snapshot]) -> None:
    """Partial when any snapshot is, each reason naming its snapshot."""
    reasons = []
    for s in ranked:
        reason = s.head["artifacts"]["Chatthistorik"].get("coverageReason")
        if reason:
            path = s.head["artifacts"]["ByggLogg"]["source"]["path"]
            reasons.append(f"snapshot {s.source_sha256[:12]} ({path}): {reason}")
    history.pop("coverage", None)
    history.pop("coverageReason", None)
    if reasons:
        history["coverage"] = "partial"
        history["coverageReason"] = "; ".join(reasons)


def _missing(snapshot: Snapshot) -> int:
    perf = snapshot.head["artifacts"]["ai_protocol_performance"]
    return max(0, perf["sourceTurnCount"] - perf["interactionCount"])


def _performance(doc: dict[str, Any], interactions: list[dict[str, Any]], redactions: list[dict[str, Any]],
                 ranked: list[Snapshot]) -> None:
    """The counts of the merged interactions: the source's turns are the distinct messages plus
    those a snapshot's own count found and its reconstruction missed."""
    perf = doc["artifacts"]["ai_protocol_performance"]
    count = len(interactions)
    counted = count + sum(_missing(s) for s in ranked)
    perf["sourceTurnCount"] = counted
    perf["interactionCount"] = count
    perf["coverageRatio"] = round(count / counted, 6) if counted else 1.0
    unknown = {"provider": 0, "name": 0, "version": 0, "turnsWithoutTime": 0}
    for item in interactions:
        for f in ("provider", "name", "version"):
            unknown[f] += item["model"][f] == "unknown"
        unknown["turnsWithoutTime"] += "date" not in item
    perf["unknownFields"] = unknown
    by_type: dict[str, int] = {}
    for r in redactions:
        by_type[r["type"]] = by_type.get(r["type"], 0) + 1
    perf["redactions"] = {**perf["redactions"], "total": len(redactions), "byType": by_type}


def _created(doc: dict[str, Any], interactions: list[dict[str, Any]]) -> None:
    """A session dated by its earliest turn is dated by the earliest merged one."""
    if doc["artifacts"]["ByggLogg"]["createdAtSource"] != "earliest turn time":
        return
    dates = [i["date"] for i in interactions if i.get("date")]
    if dates:
        doc["createdAt"] = min(dates)


# --- reconciliation and mapping ------------------------------------------------------------------

def _expected(snapshot: Snapshot) -> int:
    log = snapshot.head["artifacts"]["ByggLogg"]
    declared = (log.get("sourceMeta") or {}).get("declaredMessageCount")
    if isinstance(declared, int):
        return declared
    return snapshot.head["artifacts"]["ai_protocol_performance"]["sourceTurnCount"]


def _reconciliation(ranked: list[Snapshot], clusters: list[_Cluster]) -> pl.DataFrame:
    rows = []
    for r, s in enumerate(ranked):
        new = unchanged = edited = absent = 0
        for c in clusters:
            earlier = [k for k in c.members if k < r]
            if r not in c.members:
                absent += bool(earlier)
            elif not earlier:
                new += 1
            elif c.members[max(earlier)].hash == c.members[r].hash:
                unchanged += 1
            else:
                edited += 1
        rows.append({"key": ranked[-1].key, "source_sha256": s.source_sha256, "expected": _expected(s),
                     "reconstructed": s.table.height, "new": new, "unchanged": unchanged, "absent": absent,
                     "edited": edited})
    return pl.DataFrame(rows, schema=RECONCILIATION_SCHEMA)


def _mapping(ranked: list[Snapshot], clusters: list[_Cluster]) -> pl.DataFrame:
    rows = [(ranked[r].source_sha256, row.index + 1, n)
            for n, c in enumerate(clusters, 1) for r, row in sorted(c.members.items())]
    rows.sort()
    return pl.DataFrame(rows, schema=MAPPING_SCHEMA, orient="row")
