"""Sessions by key in a shard (#15): which sessions a shard writes itself and which wait for the merge.

A shard stages its sessions as today, but before any document is written it asks the ledger about all
of their keys at once: it *claims* them for the run (the first shard to claim a key is its one writer)
and reads which snapshots (source sha256) earlier runs indexed. A key the shard holds with one
session whose source is the only snapshot known is written as today (its document is its snapshot's
blob: the revision store keeps it, nothing else is written). Any other session is *deferred*: its
single-snapshot document is kept as a blob of the revision store and its key is merged after the
shards (flows/core/merge.py), from the set of snapshots the ledger indexes, so the document of a key
depends on that set only, never on run order or on which shard met which file first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from audit import revisions
from audit.datasets import StreamedRows
from audit.ledger import MOVED_TO, Ledger, RevisionRow, SnapshotRow
from audit.ledger.links import Decisions
from normalizers.keys import chat_of, column_index_prints, evidence, identities, printed, resolvable

from . import lifeline

_LIST = b'"interactions": ['
_CLOSE = b"\n      ]"  # the interactions' closing bracket (normalizers/encode.py's layout)


def envelope(encoded: bytes) -> dict[str, Any]:
    """A document's envelope (its interactions left out) read from its bytes without parsing the
    interaction lines: they hold no raw line end, so the list ends at the first line that closes it."""
    start = encoded.find(_LIST) + len(_LIST)
    if encoded[start:start + 1] == b"]":
        return orjson.loads(encoded)
    end = encoded.find(_CLOSE, start)
    return orjson.loads(encoded[:start] + b"]" + encoded[end + len(_CLOSE):])


def key_of(s) -> str | None:
    """The session key (``ByggLogg.sessionKey``) of a staged session, None when it has no document to
    write; a session's envelope is read from its bytes once and kept as its ``document``."""
    if s.encoded is None and s.spool is None:
        return None
    if s.document is None:  # a streamed conversation's document is in its spool file (one conversation: small)
        s.document = envelope(s.encoded if s.encoded is not None else Path(s.spool).read_bytes())
    return s.document["artifacts"]["ByggLogg"]["sessionKey"]


def source_sha(s) -> str:
    return s.document["artifacts"]["ByggLogg"]["source"]["sha256"]


def times(s) -> tuple[str | None, str | None]:
    """(earliest, latest) message time of a staged session, from its dataset rows when it has them."""
    rows = getattr(s, "rows", None)
    if rows is None:
        return None, None
    turns = rows.turns
    dates = [d for d in (turns["date"] if isinstance(turns, dict) else turns.get_column("date").to_list())
             if d] if _has_dates(turns) else []
    return (min(dates), max(dates)) if dates else (None, None)


def _has_dates(turns) -> bool:
    return "date" in turns if isinstance(turns, dict) else "date" in turns.columns


def snapshot_row(key: str, s, blob_sha: str) -> SnapshotRow:
    """The ledger's index row of a session's snapshot (``blob_sha``: its single-snapshot document)."""
    first, last = times(s)
    source = s.document["artifacts"]["ByggLogg"]["source"]
    return SnapshotRow(key, source["sha256"], source["path"], blob_sha, first, last, s.interactions)


@dataclass(slots=True)
class Plan:
    """What a shard does with its keyed sessions: the keys it writes itself, the ones it defers."""

    write: set[str]
    defer: set[str]


def plan(keyed: dict[str, list[str]], ledger_path: Path | None, run_id: str | None, shard: str) -> Plan:
    """Claim the shard's keys (``keyed``: each key's sessions, as their source sha256) and read their
    known snapshots, in one transaction and one query per 500 keys; a key is written here when this
    shard holds it, met it once, and no other source of it is known."""
    owners: dict[str, str] = {}
    known: dict[str, set[str]] = {}
    linked: set[str]
    if ledger_path is not None and ledger_path.is_file() and keyed:
        ledger = Ledger(ledger_path)
        try:
            run_id = run_id or ledger.runs.running()  # a runner that does not pass it: the run in progress
            lifeline.check()  # a worker whose run is gone claims nothing
            owners = ledger.snapshots.claim(run_id, shard, keyed) if run_id else {}
            known = ledger.snapshots.shas(keyed)
            linked = ledger.links.linked_keys([k for k in keyed if is_scoped(k)])
        finally:
            ledger.close()
    else:
        linked = set()
    write, defer = set(), set()
    for key, sources in keyed.items():
        mine = owners.get(key, shard) == shard
        # a key with a possible link is written by the merge, which records the link in its document
        alone = len(sources) == 1 and known.get(key, set()) <= {sources[0]} and key not in linked
        (write if mine and alone else defer).add(key)
    return Plan(write, defer)


def keep_snapshot(out_root: Path, s) -> str:
    """Keep a deferred session's single-snapshot document as a blob of the revision store; its sha256."""
    if s.spool is not None:
        revisions.keep(out_root, Path(s.spool), s.spool_sha256)
        Path(s.spool).unlink(missing_ok=True)
        if s.turns is not None:
            s.turns.discard()
        return s.spool_sha256
    return revisions.store(out_root, s.encoded)


def move_here(trail, rel: str, olds: list[str]) -> str:
    """Move documents to ``rel`` as recorded revisions: each old path's history ends with "moved to
    <rel>" (its bytes stay in the store), the file goes once the batch is in place; returns the note
    for ``rel`` ("" when nothing moves)."""
    moved = []
    for old in olds:
        target = trail.resolve(old)
        with open(target, "rb") as fh:
            sha = hashlib.file_digest(fh, "sha256").hexdigest()
        revisions.keep(trail.out_root, target, sha)
        trail.batch.remove_after(target)
        trail.revisions.append(RevisionRow(old, sha, f"{MOVED_TO}{rel}", revisions.now()))
        moved.append(old)
    return "; ".join(f"moved from {old}" for old in moved)


def others_in_folder(out_root: Path, rel: str) -> list[str]:
    """Documents of the same key under another file name (its session id changed with its latest
    snapshot, or a renamed file), which the key's document replaces."""
    folder = (out_root / rel).parent
    if not folder.is_dir():
        return []
    base = rel.rsplit("/", 1)[0]
    return sorted(f"{base}/{p.name}" for p in folder.iterdir() if p.suffix == ".json" and f"{base}/{p.name}" != rel
                  and not p.name.startswith("."))


def is_scoped(key: str | None) -> bool:
    """Whether a key is scoped by its export or account (normalizers/keys.py), which the index of
    message prints resolves on proof."""
    return resolvable(key)


def aliases(ledger_path: Path | None, keys: set[str]) -> dict[str, str]:
    """The keys these id-less keys were resolved to by earlier runs (one query for them all)."""
    if not keys or ledger_path is None or not ledger_path.is_file():
        return {}
    ledger = Ledger(ledger_path, read_only=True)
    try:
        return ledger.aliases.of(keys)
    finally:
        ledger.close()


@dataclass(frozen=True, slots=True)
class Prints:
    """A scoped session's index prints, for the ledger's index (``resolve``); ``title`` is the chat it
    may be one of (``keys.chat_of``: its id, or its title)."""

    key: str
    grammar: str
    title: str
    prints: list[str]


PRINT_BATCH = 512
"""Sessions whose messages are printed as one column (``prints_in_batches``)."""

PRINT_MESSAGES = 65_536
"""Messages printed as one column at most (``prints_all``): a session holding more (a streamed chat of a
million turns) is printed a piece at a time, so a shard's memory is bounded by a piece, not a session."""


def prints_in_batches(items: Iterable[tuple[str | None, Any]], size: int = PRINT_BATCH) -> Iterator[Prints | None]:
    """``prints_all`` of (key, session) pairs, ``size`` sessions at a time, in order (a shard's sessions
    are printed as a few columns, never all of a large shard's streamed documents read at once)."""
    items = iter(items)
    while chunk := list(islice(items, size)):
        yield from prints_all(chunk, PRINT_MESSAGES)


def prints_all(items: list[tuple[str | None, Any]], limit: int = PRINT_MESSAGES) -> list[Prints | None]:
    """The index prints of staged sessions (None where the key is not scoped or the session has no
    messages to read), their messages printed as columns of at most ``limit`` messages
    (``keys.column_index_prints``, ``_Column``): read a piece at a time (``_message_pieces``), each
    session's prints the concatenation of its pieces' (a print is one message's, whatever column holds it)."""
    column = _Column(limit)
    found: list[list[str] | None] = []
    for key, s in items:
        pieces = _message_pieces(s, limit) if key is not None and is_scoped(key) else None
        own: list[str] | None = None if pieces is None else []
        for cols in pieces or ():
            column.add(cols, own)
        found.append(own)
    column.flush()
    return [None if own is None else _prints(key, s.document, own)
            for (key, s), own in zip(items, found, strict=True)]


def _prints(key: str, doc: dict, own: list[str]) -> Prints:
    return Prints(key, doc["artifacts"]["ByggLogg"]["grammar"]["id"],
                  chat_of(key, doc["artifacts"]["Chatthistorik"].get("title")), own)


class _Column:
    """Message pieces gathered into one column of at most ``limit`` messages and printed when full, each
    piece's prints appended to the list of the session it belongs to."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.flat: list[list] = [[], [], [], []]
        self.owners: list[tuple[list[str], int]] = []

    def add(self, cols: list[list], own: list[str]) -> None:
        for at in range(0, len(cols[0]), self.limit):
            part = [c[at:at + self.limit] for c in cols] if len(cols[0]) > self.limit else cols
            if len(self.flat[0]) + len(part[0]) > self.limit:
                self.flush()
            for column, values in zip(self.flat, part, strict=True):
                column.extend(values)
            self.owners.append((own, printed(part[3])))

    def flush(self) -> None:
        if not self.owners:
            return
        prints = iter(column_index_prints(*self.flat))
        for own, n in self.owners:
            own.extend(islice(prints, n))
        self.flat, self.owners = [[], [], [], []], []


def _message_pieces(s, limit: int = PRINT_MESSAGES) -> Iterator[list[list]] | None:
    """(speakers, dates, contents, kinds) of a staged session's messages, a piece at a time, None when it
    has neither dataset rows nor a streamed document: its rows (one piece), else the row pieces its
    ranges wrote (a streamed text), else its streamed document's lines."""
    rows = getattr(s, "rows", None)
    if rows is not None:
        turns = rows.turns
        return iter([[turns[c] if isinstance(turns, dict) else turns.get_column(c).to_list()
                      for c in ("speaker_name", "date", "content", "kind")]])
    if s.spool is not None and isinstance(s.turns, StreamedRows) and all(p.is_file() for p in s.turns.files()):
        return _pieces(s.turns, limit)
    if s.spool is not None and Path(s.spool).is_file():
        return _spooled(Path(s.spool), limit)
    return None


_PIECE_COLUMNS = ("speaker_key", "date", "content", "kind")


def _pieces(rows: StreamedRows, limit: int = PRINT_MESSAGES) -> Iterator[list[list]]:
    """(speakers, dates, contents, kinds) of a streamed session from its dataset row pieces (Arrow IPC,
    in session order), each speaker key named from the session's speaker table: the values its
    document's lines hold (tests/flows checks it), read a piece at a time, at most ``limit`` rows of it
    as Python values at once, with no JSON parsed."""
    keys = list(rows.speakers)
    names = [rows.speakers[k]["speakerName"] for k in keys]
    for piece in rows.files():
        frame = pl.read_ipc(piece, columns=list(_PIECE_COLUMNS)).with_columns(
            pl.col("speaker_key").replace_strict(keys, names, return_dtype=pl.String))
        for part in frame.iter_slices(limit):
            yield [part.get_column(name).to_list() for name in _PIECE_COLUMNS]


def _spooled(path: Path, limit: int = PRINT_MESSAGES) -> Iterator[list[list]]:
    """(speakers, dates, contents, kinds) of a streamed document's interactions (one per line), at most
    ``limit`` at a time."""
    cols: list[list] = [[], [], [], []]
    with open(path, "rb") as fh:
        for line in fh:
            if line.startswith(b'{"ordinal":'):
                item = orjson.loads(line.rstrip(b",\n"))
                for col, value in zip(cols, (item["speakerName"], item.get("date"), item["content"], item["kind"]),
                                      strict=True):
                    col.append(value)
                if len(cols[0]) >= limit:
                    yield cols
                    cols = [[], [], [], []]
    if cols[0]:
        yield cols


@dataclass(frozen=True, slots=True)
class Resolved:
    """What the index decided after the shards: the keys to merge, and the keys whose documents gain
    or lose a "possibly the same conversation" link."""

    merge: list[str]
    linked: list[str]


def resolve(found: list[Prints], ledger: Ledger, tolerance: int = 60) -> Resolved:
    """Index the run's scoped prints and decide which keys are one conversation (the main process,
    after the shards): two keys of the same chat (grammar and id or title) are one on proof
    (``keys.evidence``) or on a person's say (``audit.ledger.links``), never when a person split them; all
    such keys become the one whose snapshots start earliest (then the smallest key), whatever the
    order they were met in. Evidence short of proof is recorded as a possible link."""
    ledger.aliases.add_prints([(p.key, p.grammar, p.title, p.prints) for p in found])
    said = ledger.links.decisions()
    unions = UnionFind()
    possible: list[tuple[str, str, str]] = []
    chats: dict[tuple[str, str], list[Prints]] = {}
    for p in found:
        chats.setdefault((p.grammar, p.title), []).append(p)
    for chat, mine in sorted(chats.items()):
        _link(mine, ledger.aliases.prints([chat]).get(chat, []), ledger, said, unions, possible, tolerance)
    for a, b in said.same:
        unions.union(a, b)
    linked = sorted({*ledger.links.record_possible(possible, said), *ledger.links.pending()})
    met = {p.key for p in found}
    merged = []
    for members in unions.groups():
        starts = ledger.snapshots.of(members)
        canonical = min(members, key=lambda k: (min((r.first_at or "" for r in starts.get(k, [])),
                                                    default="\uffff"), k))
        known = ledger.aliases.of(members)
        new = [k for k in sorted(members - {canonical}) if known.get(k) != canonical]
        for k in new:
            ledger.aliases.add(k, canonical)
        if new or members & met:  # a person's earlier say needs no merge again until its keys are met
            merged.append(canonical)
    return Resolved(sorted(merged), linked)


def _link(mine: list[Prints], known: list[tuple[str, list[str]]], ledger: Ledger, said: Decisions,
          unions: UnionFind, possible: list[tuple[str, str, str]], tolerance: int) -> None:
    """Weigh the run's sessions of one chat against the known ones: proof unites them, suggestive
    evidence is a possible link; a pair a person split stays apart. Only pairs that share a message
    identity are weighed (evidence is made of such pairs; any other says nothing), so a chat of many
    unrelated sessions (id-less transcripts with no title) costs what its shared messages cost, not
    every pair."""
    resolved = ledger.aliases.of(k for k, _ in known)
    holders: dict[str, list[int]] = {}
    for n, (_, prints) in enumerate(known):
        for ident in identities(prints):
            holders.setdefault(ident, []).append(n)
    for p in sorted(mine, key=lambda p: p.key):
        for n in sorted({n for ident in identities(p.prints) for n in holders.get(ident, ())}):
            key, prints = known[n]
            other = resolved.get(key, key)
            if other == p.key or key == p.key or said.split(p.key, other):
                continue
            found = evidence(p.prints, prints, tolerance)
            if found.proof:
                unions.union(p.key, other)
            elif found.possible:
                possible.append((p.key, other, found.describe()))


class UnionFind:
    """Keys linked as one chat."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def root(self, k: str) -> str:
        while self.parent.get(k, k) != k:
            k = self.parent[k]
        return k

    def union(self, a: str, b: str) -> None:
        ra, rb = self.root(a), self.root(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[set[str]]:
        out: dict[str, set[str]] = {}
        for k in self.parent:
            out.setdefault(self.root(k), {self.root(k)}).add(k)
        return [out[r] for r in sorted(out)]
