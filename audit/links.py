"""Possible links between session keys, and a person's say on them (#25): a repository over the ledger.

Two exports whose evidence of being one conversation falls short of proof (normalizers/keys.py) stay
two documents, and the pair is recorded in ``links`` with the evidence; ``reconstruct sessions
--links`` lists them. A person decides with ``reconstruct sessions link A B`` (the same conversation:
merged) or ``unlink A B`` (two conversations: never merged, even on proof); each decision is a row of
``link_decisions`` with who, when and why, the latest for a pair wins, and ``forget`` (decision
``undecided``) reverts to the evidence. Runs read the decisions when they resolve keys
(flows/snapshots.resolve).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from audit.ledger import Ledger


class Decision(enum.StrEnum):
    """A person's say on a pair of keys."""

    SAME = "same"
    DIFFERENT = "different"
    UNDECIDED = "undecided"


def pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


@dataclass(slots=True)
class Decisions:
    """The latest decision of each pair a person decided."""

    same: list[tuple[str, str]] = field(default_factory=list)
    different: set[tuple[str, str]] = field(default_factory=set)

    def split(self, a: str, b: str) -> bool:
        return pair(a, b) in self.different


def decisions(ledger: Ledger) -> Decisions:
    out = Decisions()
    rows = ledger.db.execute("SELECT key_a, key_b, decision FROM link_decisions d WHERE rowid = "
                             "(SELECT MAX(rowid) FROM link_decisions e WHERE e.key_a=d.key_a AND e.key_b=d.key_b) "
                             "ORDER BY key_a, key_b").fetchall()
    for a, b, decision in rows:
        if decision == Decision.SAME:
            out.same.append((a, b))
        elif decision == Decision.DIFFERENT:
            out.different.add((a, b))
    return out


@dataclass(frozen=True, slots=True)
class Say:
    """A person's decision on a pair of keys: who, when and why."""

    a: str
    b: str
    decision: Decision
    who: str
    at: str
    why: str


def decide(ledger: Ledger, say: Say) -> None:
    """Record a person's decision on a pair (the latest wins; nothing is overwritten); both keys are
    merged again by the next run (``pending``)."""
    ka, kb = pair(say.a, say.b)
    with ledger.db:
        ledger.db.execute("INSERT INTO link_decisions VALUES (?,?,?,?,?,?)",
                          (ka, kb, say.decision.value, say.who, say.at, say.why))
        ledger.db.executemany("INSERT OR IGNORE INTO link_pending VALUES (?)", [(ka,), (kb,)])


def pending(ledger: Ledger) -> list[str]:
    """The keys a person's decision touched since the last run, cleared (the run merges them again)."""
    with ledger.db:
        keys = [k for (k,) in ledger.db.execute("SELECT session_key FROM link_pending ORDER BY 1")]
        ledger.db.execute("DELETE FROM link_pending")
    return keys


def record_possible(ledger: Ledger, found: Iterable[tuple[str, str, str]], said: Decisions,
                    run_id: str | None = None) -> list[str]:
    """Record possible links (a, b, evidence) no person has decided; returns the keys that gained one."""
    decided = set(said.same) | said.different
    gained: set[str] = set()
    with ledger.db:
        for a, b, why in found:
            ka, kb = pair(a, b)
            if (ka, kb) in decided:
                continue
            cur = ledger.db.execute("INSERT OR IGNORE INTO links VALUES (?,?,?,?)", (ka, kb, why, run_id))
            if cur.rowcount:
                gained.update((ka, kb))
    return sorted(gained)


def possible(ledger: Ledger, keys: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The possible links (of these keys, or all) with the latest decision on each, in key order."""
    rows = ledger.db.execute(
        "SELECT l.key_a, l.key_b, l.evidence, (SELECT decision FROM link_decisions d WHERE d.key_a=l.key_a "
        "AND d.key_b=l.key_b ORDER BY rowid DESC LIMIT 1) FROM links l ORDER BY 1, 2").fetchall()
    wanted = None if keys is None else set(keys)
    return [{"a": a, "b": b, "evidence": e, "decision": d or Decision.UNDECIDED.value} for a, b, e, d in rows
            if wanted is None or a in wanted or b in wanted]


def possibly_same(ledger: Ledger, key: str) -> list[dict[str, str]]:
    """A key's undecided possible links, as its document records them (``ByggLogg.possiblySame``)."""
    return [{"key": r["b"] if r["a"] == key else r["a"], "evidence": r["evidence"]}
            for r in possible(ledger, [key]) if r["decision"] == Decision.UNDECIDED]


def linked_keys(ledger: Ledger, keys: Iterable[str]) -> set[str]:
    """Which of these keys have a possible link (their documents carry it: the merge writes them)."""
    wanted = set(keys)
    if not wanted:
        return set()
    rows = ledger.db.execute("SELECT key_a, key_b FROM links").fetchall()
    return {k for pair_ in rows for k in pair_ if k in wanted}
