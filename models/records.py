"""What a grammar hands on: sessions and turns as the source gives them, before normalisation.

These are plain slotted dataclasses, not pydantic models: a large export yields millions of
turns and they must cost microseconds each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Role = Literal["user", "assistant", "system", "tool", "other"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool", "other")


@dataclass(frozen=True, slots=True)
class ModelRef:
    """A model named explicitly by the source. Missing parts stay None (normalised to "unknown")."""

    provider: str | None = None
    name: str | None = None
    version: str | None = None


@dataclass(slots=True)
class Turn:
    """One actual turn of the source (B2: never two turns in one, never one turn split in two).

    ``time`` is naive when the source gives no zone (the normaliser applies the configured
    source zone and records the assumption) and aware when it does.
    ``lines`` is the 1-based inclusive line span for text formats; ``pointer`` a JSON pointer
    for structured exports.
    """

    speaker: str
    role: str
    content: str
    time: datetime | None = None
    time_raw: str | None = None
    model: ModelRef | None = None
    kind: str = "message"
    lines: tuple[int, int] | None = None
    pointer: str | None = None
    extra: dict[str, Any] | None = None
    model_explicit: bool = True
    """False when ``model`` is a default the source states for the whole session rather than for
    this turn (ChatGPT's default_model_slug): rule A2 then applies to it."""


@dataclass(frozen=True, slots=True)
class Heuristic:
    """A heuristic this run created (for example an inferred header pattern) for a person to review."""

    id: str
    description: str
    evidence: dict[str, Any]


@dataclass(slots=True)
class ParsedSession:
    """One session found in a source, with what the grammar knows about how it found it.

    ``raw`` is the session's raw source (a text slice or a decoded JSON object); the pipeline
    hands it to the grammar's independent turn counter and then drops it.
    """

    session_id: str | None
    id_source: str
    turns: list[Turn]
    raw: Any = None
    title: str | None = None
    created: datetime | None = None
    created_raw: str | None = None
    lines: tuple[int, int] | None = None
    pointer: str | None = None
    coverage_reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    heuristics: list[Heuristic] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SourceText:
    """Canonical text of one input (UTF-8 decoded, BOM stripped, LF line ends) and its provenance."""

    text: str
    name: str
    sha256: str
    size: int
    encoding: str
    companions: dict[str, str] = field(default_factory=dict)
    """Canonical text of companion files a grammar asked for (Slack's users.json), by file name."""


@dataclass(frozen=True, slots=True)
class Detection:
    """The outcome of format detection: the winner (or None) and every candidate's score."""

    grammar: str | None
    confidence: float
    scores: dict[str, float]
    forced: bool = False
