"""The grammar contract: every input format is one subclass in parsers/grammars/."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, BinaryIO, ClassVar

from models.records import ParsedSession, SourceText
from models.settings import Settings


class Grammar(ABC):
    """A format: how to recognise it, split it into sessions and turns, and count its turns.

    ``count_turns`` must count a session's turns from its raw source by a route of its own,
    not by re-running ``parse``: the gate compares the two (coverage check).
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    description: ClassVar[str]
    example: ClassVar[str]
    structured: ClassVar[bool] = False
    """True for JSON exports (detection looks at keys), False for line-oriented text."""
    companion_names: ClassVar[tuple[str, ...]] = ()
    """File names (``users.json``) that are not sessions but context for this format's files: ingest
    records them as companions and hands their text, from the source's folder or its parents, in
    ``SourceText.companions``."""

    streams: ClassVar[bool] = False
    """True when ``parse_stream`` reads a large input incrementally (bounded memory)."""

    def parse_stream(self, fp: BinaryIO, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        """Yield the sessions of a large input read from a binary file object, holding at most one
        session in memory. ``source.text`` is empty; its checksum and size are already known."""
        raise NotImplementedError(f"{self.name} does not stream")

    @abstractmethod
    def detect(self, sample: str, name: str) -> float:
        """Score in [0, 1] of how well this grammar fits a sample (the first bytes) of the input."""

    @abstractmethod
    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        """Yield the sessions of one input, in source order, each with ``raw`` set."""

    @abstractmethod
    def count_turns(self, raw: Any) -> int:
        """Count the turns of one session's raw source independently of ``parse``."""
