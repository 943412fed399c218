"""Sessions by key in a shard (#15): which sessions a shard writes itself and which wait for the merge.

A shard stages its sessions as today, but before any document is written it asks the ledger about all
of their keys at once: it *claims* them for the run (the first shard to claim a key is its one writer)
and reads which snapshots (source sha256) earlier runs indexed. A key the shard holds with one
session whose source is the only snapshot known is written as today (its document is its snapshot's
blob: the revision store keeps it, nothing else is written). Any other session is *deferred*: its
single-snapshot document is kept as a blob of the revision store and its key is merged after the
shards (flows/merge.py), from the set of snapshots the ledger indexes, so the document of a key
depends on that set only, never on run order or on which shard met which file first.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from audit import revisions
from audit.files import resolve_inside
from audit.ledger import MOVED_TO, Ledger, RevisionRow, SnapshotRow
from normalizers.keys import KEY_MESSAGES, content_hash, continues, key_title, print_of

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


def plan(keyed: dict[str, list[tuple[Any, Any]]], ledger_path: Path | None, run_id: str | None,
         shard: str) -> Plan:
    """Claim the shard's keys and read their known snapshots, in one transaction and one query per
    500 keys; a key is written here when this shard holds it, met it once, and no other source of
    it is known."""
    owners: dict[str, str] = {}
    known: dict[str, set[str]] = {}
    if ledger_path is not None and ledger_path.is_file() and keyed:
        ledger = Ledger(ledger_path)
        try:
            run_id = run_id or ledger.running_run()  # a runner that does not pass it: the run in progress
            lifeline.check()  # a worker whose run is gone claims nothing
            owners = ledger.claim(run_id, shard, keyed) if run_id else {}
            known = ledger.snapshot_shas(keyed)
        finally:
            ledger.close()
    write, defer = set(), set()
    for key, sessions in keyed.items():
        mine = owners.get(key, shard) == shard
        alone = len(sessions) == 1 and known.get(key, set()) <= {source_sha(sessions[0][1])}
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
        target = resolve_inside(trail.out_root, old)
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


def is_idless(key: str | None) -> bool:
    """Whether a key is a fingerprint (normalizers/keys.py), which the message-print index resolves."""
    return key is not None and ":fp-" in key


def aliases(ledger_path: Path | None, keys: set[str]) -> dict[str, str]:
    """The keys these id-less keys were resolved to by earlier runs (one query for them all)."""
    if not keys or ledger_path is None or not ledger_path.is_file():
        return {}
    ledger = Ledger(ledger_path, read_only=True)
    try:
        return ledger.aliases_of(keys)
    finally:
        ledger.close()


@dataclass(frozen=True, slots=True)
class Prints:
    """An id-less session's message prints, for the ledger's index (``resolve``)."""

    key: str
    grammar: str
    title: str
    prints: list[str]


def prints_of(key: str, s) -> Prints | None:
    """The prints of a staged id-less session from its dataset rows (None without them: a streamed
    document is not read back for this)."""
    rows = getattr(s, "rows", None)
    if not is_idless(key) or rows is None:
        return None
    turns = rows.turns
    cols = [turns[c] if isinstance(turns, dict) else turns.get_column(c).to_list()
            for c in ("speaker_name", "date", "content", "kind")]
    prints = [print_of(a, d, content_hash(c, k)) for a, d, c, k in zip(*cols, strict=True)]
    doc = s.document
    return Prints(key, doc["artifacts"]["ByggLogg"]["grammar"]["id"],
                  key_title(doc["artifacts"]["Chatthistorik"].get("title")), prints)


def resolve(found: list[Prints], ledger: Ledger) -> list[str]:
    """Index the run's id-less prints and resolve continuations (the main process, after the shards):
    a key whose earliest prints lie in another of the same grammar and title (or the other's in it)
    is the same chat, and all such keys become the one whose snapshots start earliest (then the
    smallest key), whatever the order they were met in. Returns the keys to merge."""
    ledger.add_prints([(p.key, p.grammar, p.title, p.prints) for p in found])
    links = UnionFind()
    chats: dict[tuple[str, str], list[Prints]] = {}
    for p in found:
        chats.setdefault((p.grammar, p.title), []).append(p)
    for chat, mine in sorted(chats.items()):
        _link(mine, ledger.prints([chat]).get(chat, []), ledger, links)
    merged = []
    for members in links.groups():
        starts = ledger.snapshots_of(members)
        canonical = min(members, key=lambda k: (min((r["first_at"] or "" for r in starts.get(k, [])),
                                                    default="\uffff"), k))
        for k in sorted(members - {canonical}):
            ledger.add_alias(k, canonical)
        merged.append(canonical)
    return sorted(merged)


def _link(mine: list[Prints], known: list[tuple[str, list[str]]], ledger: Ledger, links: UnionFind) -> None:
    """Link the run's sessions of one chat (grammar and title) to the known ones they continue or that
    continue them; only keys sharing a print are compared (one query per chat, not per session)."""
    resolved = ledger.aliases_of(k for k, _ in known)
    holders: dict[str, set[int]] = {}  # print -> the known sessions holding it
    firsts: dict[str, set[int]] = {}  # print -> the known sessions starting with it
    for i, (_, prints) in enumerate(known):
        for x in prints:
            holders.setdefault(x, set()).add(i)
        if prints:
            firsts.setdefault(prints[0], set()).add(i)
    for p in sorted(mine, key=lambda p: p.key):
        # it continues one holding its earliest prints; one starting inside it continues it
        near = set().union(*(holders.get(x, set()) for x in p.prints[:KEY_MESSAGES]),
                           *(firsts.get(x, set()) for x in p.prints))
        for i in sorted(near):
            other, prints = resolved.get(known[i][0], known[i][0]), known[i][1]
            if other != p.key and (continues(p.prints, prints) or continues(prints, p.prints)):
                links.union(p.key, other)


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
