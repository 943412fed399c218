"""What a grammar hands on: sessions and turns as the source gives them, before normalisation.

These are plain slotted dataclasses, not pydantic models: a large export yields millions of
turns and they must cost microseconds each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
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
    base_text: str | None = None
    """For a tool call that edits a file: the file's whole text before the edit when the log keeps it
    (Claude Code's ``toolUseResult.originalFile``). Only the session record's patch base; never shown."""
    part: str | None = None
    """The file name of the part whose lines ``lines`` counts in, when the source is a conversation
    over several text files (a Telegram chat's ``messages2.html``); None for a single file."""


@dataclass(frozen=True, slots=True)
class Heuristic:
    """A heuristic this run created (for example an inferred header pattern) for a person to review."""

    id: str
    description: str
    evidence: dict[str, Any]


class RegionKind(StrEnum):
    """Why a part of the source is deliberately not an interaction (source accounting)."""

    PREAMBLE = "preamble"
    """Text before the first turn of a session (a title line, an exporter's banner)."""
    FRONT_MATTER = "front_matter"
    """A ``---`` front-matter block or a similar key/value header."""
    SESSION_HEADER = "session_header"
    """A line or record that opens or describes a session (``Session: 42``, ``# aider chat started at``)."""
    BOILERPLATE = "boilerplate"
    """Export furniture: rules, column headings, day separators, page markers."""
    METADATA = "metadata"
    """A record that describes the session rather than being said in it (summary, snapshot, turn context)."""
    OFF_BRANCH = "off_branch"
    """An alternative not on the conversation's current branch (a regeneration, an abandoned edit)."""
    EMPTY_RECORD = "empty_record"
    """A message record with nothing in it to show."""
    HIDDEN = "hidden"
    """A record the source itself marks as not shown to the participants."""
    DUPLICATE = "duplicate"
    """A record that repeats one already reconstructed (a streaming event echoing a final message)."""
    CONTINUATION = "continuation"
    """A part whose text is in the interaction just before it: a reply the source stores as several
    parts (markdown cut by an inline file reference), read as one interaction (B2)."""


@dataclass(frozen=True, slots=True)
class Region:
    """A part of the source a grammar deliberately did not turn into an interaction, and why.

    Exactly one of ``lines`` (1-based inclusive span, text sources) and ``pointer`` (a JSON pointer
    in the same document as the turns' pointers, JSON sources) is set. ``content`` is kept in the
    document when the region holds something a reader may want (an off-branch alternative).
    """

    kind: RegionKind
    reason: str
    lines: tuple[int, int] | None = None
    pointer: str | None = None
    content: str | None = None
    part: str | None = None
    """The part's file name that ``lines`` counts in, as for ``Turn.part``."""


@dataclass(frozen=True, slots=True)
class ShapedLine:
    """A line shaped like a turn start that the grammar read as text inside a turn, and why (the fenced
    block it sits in, a quote, a heading style the session's turns do not use...). Source accounting
    matches every line against the grammar's ``turn_shape``; each match is a turn start, lies in a
    declared region, or is one of these, else the session is partial (``possible_merged_turns``)."""

    line: int
    reason: str
    part: str | None = None
    """The part's file name that ``line`` counts in, as for ``Turn.part``."""


@dataclass(slots=True)
class ParsedSession:
    """One session found in a source, with what the grammar knows about how it found it.

    ``raw`` is the session's raw source (a text slice or a decoded JSON object); the pipeline
    hands it to the grammar's independent turn counter and the source accounting, then drops it.
    For JSON sources ``raw`` is the JSON value found at ``pointer`` ("" for the whole document) and
    every turn and region pointer is absolute in that same document, so it starts with ``pointer``.
    For text sources ``lines`` is the session's span in the file; turns and regions use file lines.
    For a conversation over several text files (``SourceText.parts``) ``lines`` is None and every turn
    and region names the part its lines count in (``part``).
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
    regions: list[Region] = field(default_factory=list)
    """Every part of the session's source that is not in a turn, declared with its reason. The gate's
    source accounting checks that turns and regions together cover the source (DESIGN section 2)."""
    shaped: list[ShapedLine] = field(default_factory=list)
    """Lines shaped like a turn start that are text of a turn, each with why (source accounting)."""
    frame: Any = None
    """The turns as columns (a polars frame, ``parsers.columns.TURN_SCHEMA``) when the grammar parsed
    them column-wise (a line grammar's ``Grammar.read``); ``turns`` is then empty."""


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
    siblings: tuple[str, ...] = ()
    """Names of the other files beside this one (same folder or zip), for grammars that check what
    a chat references (a WhatsApp export's attachments), sorted."""
    replaced: tuple[int, ...] = ()
    """Byte offsets of the first invalid byte sequences that decoding replaced with U+FFFD (at most
    ``parsers.text.MAX_REPLACED_LISTED``); empty when the bytes were valid."""
    replaced_count: int = 0
    """How many invalid byte sequences decoding replaced in all."""
    surrogates: tuple[int, ...] = ()
    """Character offsets (in ``text``) of the first lone UTF-16 surrogate escapes of a JSON input that
    decoding replaced with the escape of U+FFFD (at most ``parsers.text.MAX_REPLACED_LISTED``)."""
    surrogates_count: int = 0
    """How many lone surrogate escapes decoding replaced in all."""
    encoding_guess: str | None = None
    """The assumption made when the bytes were not UTF-8 and their legacy code page was detected
    (``encoding`` is then that code page): which, how sure, and what else was as likely."""
    parts: tuple[SourceText, ...] = ()
    """The files of one conversation that spans several (a Slack channel's day files), in part order,
    when the ingest grouped them for a grammar with ``group_files``; ``text`` is then empty, ``name``
    the folder, ``sha256`` the checksum of the parts' checksums. A part that could not be read or
    decoded has empty text and ``encoding`` "unreadable"."""


@dataclass(frozen=True, slots=True)
class Detection:
    """The outcome of format detection: the winner, every candidate's explained share, and the
    winner's margin over the best candidate it had to beat."""

    grammar: str | None
    confidence: float
    scores: dict[str, float]
    forced: bool = False
    margin: float = 1.0
