"""Possible links between session keys, and a person's say on them (#25): the ``links``,
``link_decisions`` and ``link_pending`` tables.

Two exports whose evidence of being one conversation falls short of proof (normalizers/keys.py) stay
two documents, and the pair is recorded in ``links`` with the evidence; ``reconstruct sessions
--links`` lists them. A person decides with ``reconstruct sessions link A B`` (the same conversation:
merged) or ``unlink A B`` (two conversations: never merged, even on proof); each decision is a row of
``link_decisions`` with who, when and why, the latest for a pair wins, and ``forget`` (decision
``undecided``) reverts to the evidence. Runs read the decisions when they resolve keys
(flows/snapshots.resolve). ``Ledger.links`` is this repository.
"""

from __future__ import annotations

import enum
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field


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


@dataclass(frozen=True, slots=True)
class Say:
    """A person's decision on a pair of keys: who, when and why."""

    a: str
    b: str
    decision: Decision
    who: str
    at: str
    why: str


@dataclass(frozen=True, slots=True)
class PossibleLink:
    """A pair of keys that may be one conversation, the evidence, and the latest decision on it."""

    a: str
    b: str
    evidence: str
    decision: Decision


class Links:
    """The possible links and decisions of one ledger."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def decisions(self) -> Decisions:
        """The latest decision of each pair a person decided."""
        out = Decisions()
        rows = self.db.execute("SELECT key_a, key_b, decision FROM link_decisions d WHERE rowid = "
                               "(SELECT MAX(rowid) FROM link_decisions e WHERE e.key_a=d.key_a AND e.key_b=d.key_b) "
                               "ORDER BY key_a, key_b").fetchall()
        for a, b, decision in rows:
            if decision == Decision.SAME:
                out.same.append((a, b))
            elif decision == Decision.DIFFERENT:
                out.different.add((a, b))
        return out

    def decide(self, say: Say) -> None:
        """Record a person's decision on a pair (the latest wins; nothing is overwritten); both keys are
        merged again by the next run (``pending``)."""
        ka, kb = pair(say.a, say.b)
        with self.db:
            self.db.execute("INSERT INTO link_decisions VALUES (?,?,?,?,?,?)",
                            (ka, kb, say.decision.value, say.who, say.at, say.why))
            self.db.executemany("INSERT OR IGNORE INTO link_pending VALUES (?)", [(ka,), (kb,)])

    def pending(self) -> list[str]:
        """The keys a person's decision touched since the last run, cleared (the run merges them again)."""
        with self.db:
            keys = [k for (k,) in self.db.execute("SELECT session_key FROM link_pending ORDER BY 1")]
            self.db.execute("DELETE FROM link_pending")
        return keys

    def record_possible(self, found: Iterable[tuple[str, str, str]], said: Decisions,
                        run_id: str | None = None) -> list[str]:
        """Record possible links (a, b, evidence) no person has decided; returns the keys that gained one."""
        decided = set(said.same) | said.different
        gained: set[str] = set()
        with self.db:
            for a, b, why in found:
                ka, kb = pair(a, b)
                if (ka, kb) in decided:
                    continue
                cur = self.db.execute("INSERT OR IGNORE INTO links VALUES (?,?,?,?)", (ka, kb, why, run_id))
                if cur.rowcount:
                    gained.update((ka, kb))
        return sorted(gained)

    def possible(self, keys: Iterable[str] | None = None) -> list[PossibleLink]:
        """The possible links (of these keys, or all) with the latest decision on each, in key order."""
        rows = self.db.execute(
            "SELECT l.key_a, l.key_b, l.evidence, (SELECT decision FROM link_decisions d WHERE d.key_a=l.key_a "
            "AND d.key_b=l.key_b ORDER BY rowid DESC LIMIT 1) FROM links l ORDER BY 1, 2").fetchall()
        wanted = None if keys is None else set(keys)
        return [PossibleLink(a, b, e, Decision(d or Decision.UNDECIDED)) for a, b, e, d in rows
                if wanted is None or a in wanted or b in wanted]

    def possibly_same(self, key: str) -> list[dict[str, str]]:
        """A key's undecided possible links, as its document records them (``ByggLogg.possiblySame``)."""
        return [{"key": r.b if r.a == key else r.a, "evidence": r.evidence}
                for r in self.possible([key]) if r.decision == Decision.UNDECIDED]

    def linked_keys(self, keys: Iterable[str]) -> set[str]:
        """Which of these keys have a possible link (their documents carry it: the merge writes them)."""
        wanted = set(keys)
        if not wanted:
            return set()
        rows = self.db.execute("SELECT key_a, key_b FROM links").fetchall()
        return {k for pair_ in rows for k in pair_ if k in wanted}
