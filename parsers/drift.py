"""Format drift: keys, content types and message types a grammar does not know, counted, never dropped.

A grammar notes each unknown thing it meets with the JSON pointer where it first appeared and
hands the tally on in ``ParsedSession.meta["formatDrift"]``; the document, the ledger and the
report show it. A message of an unknown type still becomes an interaction with the text it holds.
"""

from __future__ import annotations

from collections.abc import Iterable


class Drift:
    """A tally of unknown things per category (``key``, ``contentType``, ``messageType``...)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, list] = {}

    def note(self, category: str, value: str, pointer: str) -> None:
        key = f"{category}:{value}"
        entry = self._seen.get(key)
        if entry is None:
            self._seen[key] = [1, pointer]
        else:
            entry[0] += 1

    def unknown_keys(self, record: dict, known: Iterable[str] | frozenset[str], pointer: str) -> None:
        """Note every key of ``record`` outside ``known``."""
        for key in record:
            if key not in known:
                self.note("key", str(key), pointer)

    def __bool__(self) -> bool:
        return bool(self._seen)

    def as_meta(self) -> dict[str, dict[str, object]]:
        """``{"category:value": {"count": n, "first": pointer}}`` in a stable order."""
        return {k: {"count": n, "first": p} for k, (n, p) in sorted(self._seen.items())}
