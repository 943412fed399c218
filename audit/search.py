"""Word search over the ``terms`` index: the documents holding every word of a query, intersected rarest first.

A query's words are looked up whole in ``terms`` (one row per word and document, sorted by word). The
plan counts each word's documents first (its document frequency: a few row groups of the sorted index),
then starts from the rarest word's documents and keeps, word by word in rising frequency, those the
next word also holds, so that a word found in most sessions (``agent`` in ``agent 7``) only ever
filters the few documents the rarer words left. A word no document holds ends the search at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import current

Run = Callable[[str, list[Any]], list[dict[str, Any]]]
"""Runs one SQL statement with its parameters over the current tables (``audit.query.Catalog.run``'s rows)."""


def words(q: str) -> list[str]:
    """The words of a query as the index holds them: lowercased runs of word characters, each once."""
    return list(dict.fromkeys(re.findall(current.WORD, q.lower())))


@dataclass(frozen=True, slots=True)
class Plan:
    """The words in the order they are intersected (rarest first) and their document frequencies."""

    order: tuple[str, ...]
    frequency: dict[str, int]

    @classmethod
    def of(cls, frequency: dict[str, int], wanted: Sequence[str]) -> Plan:
        """Rarest first, ties by the word (a word the index lacks has frequency 0, so comes first)."""
        found = {w: frequency.get(w, 0) for w in wanted}
        return cls(tuple(sorted(found, key=lambda w: (found[w], w))), found)

    @property
    def empty(self) -> bool:
        """Some word is in no document: nothing matches, nothing to intersect."""
        return any(n == 0 for n in self.frequency.values())


def frequencies(run: Run, wanted: Sequence[str]) -> dict[str, int]:
    """Each word's number of documents in the index (``terms`` holds a word once per document)."""
    if not wanted:
        return {}
    marks = ", ".join("?" * len(wanted))
    rows = run(f"SELECT term, count(*) AS n FROM terms WHERE term IN ({marks}) GROUP BY term", list(wanted))
    return {r["term"]: r["n"] for r in rows}


def matching(run: Run, q: str) -> list[str] | None:
    """The output paths of the documents that hold every word of ``q`` (None: ``q`` has no word)."""
    wanted = words(q)
    if not wanted:
        return None
    plan = Plan.of(frequencies(run, wanted), wanted)
    if plan.empty:
        return []
    first, *rest = plan.order
    found = [r["output_path"] for r in run("SELECT output_path FROM terms WHERE term = ?", [first])]
    for word in rest:
        if not found:
            break
        found = [r["output_path"] for r in run(
            "SELECT output_path FROM terms WHERE term = ? AND output_path IN (SELECT unnest(?::VARCHAR[]))",
            [word, found])]
    return sorted(found)

