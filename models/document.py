"""The session document (the P-RECONSTRUCT output contract) as pydantic models.

The assembler builds documents as plain dicts for speed; these models define the contract,
generate the shipped JSON Schema (schemas/session_document.schema.json) and let the gate
validate a document's shape. Field names are the JSON keys.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from models.records import RegionKind

ISO_Z_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
SPEAKER_PATTERN = r"^[^()]+ \([^:]+:[^@]+@[^)]+\)$"
PART = ("The file (of a conversation over several text files, such as a Telegram chat's messages2.html) "
        "that the lines count in; absent for a single file.")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ModelInfo(_Strict):
    provider: str = Field(min_length=1)
    name: str = Field(min_length=1)
    version: str = Field(min_length=1)


class SourceSpan(_Strict):
    lines: tuple[int, int] | None = Field(None, description="1-based inclusive line span in the canonical text.")
    pointer: str | None = Field(None, description="JSON pointer into a structured export.")
    part: str | None = Field(None, description=PART)
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$", description=(
        "A merged document's interaction: the snapshot (source sha256) whose source the span points into."))


class EditRecord(_Strict):
    content: str = Field(description="An earlier text of the message.")
    snapshots: list[str] = Field(min_length=1, description="The snapshots (source sha256) that hold this text.")


class Interaction(_Strict):
    ordinal: int = Field(ge=1)
    role: Literal["user", "assistant", "system", "tool", "other"]
    kind: str = Field(description="message, system, media, action, tool_call, tool_result, ...")
    speakerName: str = Field(min_length=1)
    model: ModelInfo
    modelSource: Literal["explicit", "session-default", "none"]
    speaker: str = Field(pattern=SPEAKER_PATTERN)
    date: str | None = Field(None, pattern=ISO_Z_PATTERN)
    dateRaw: str | None = None
    content: str
    source: SourceSpan
    speakerNameRaw: str | None = Field(None, description="The source's name when the display name had to change.")
    modelRaw: dict[str, str | None] | None = Field(None, description="The source's model fields when changed.")
    sourceFields: dict[str, Any] | None = Field(None, description="Format-specific facts (branch, attachments...).")
    snapshots: list[str] | None = Field(None, description=(
        "A merged document's interaction: the snapshots (source sha256) that contain it."))
    absent: Literal["deleted", "outside_range"] | None = Field(None, description=(
        "Not in the latest snapshot: 'deleted' inside its time range, 'outside_range' before or after it."))
    editHistory: list[EditRecord] | None = Field(None, description=(
        "Earlier texts of an edited message, oldest first, with the snapshots that hold them."))


class Chatthistorik(_Strict):
    title: str | None = None
    interactions: list[Interaction]
    coverage: Literal["partial"] | None = None
    coverageReason: str | None = None
    preamble: str | None = Field(None, description="Source text before the first turn (not a turn).")


class SourceProvenance(_Strict):
    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    sizeBytes: int = Field(ge=0)
    encoding: str
    lines: tuple[int, int] | None = None
    pointer: str | None = None
    replacedBytes: dict[str, Any] | None = Field(
        None, description="Invalid byte sequences decoded as U+FFFD: their count and first byte offsets.")


class GrammarInfo(_Strict):
    id: str
    version: str
    detectionConfidence: float = Field(description="The share of the detection sample the grammar explained.")
    detectionMargin: float | None = Field(None, description="Its lead over the best rival it had to beat.")
    forced: bool
    candidates: dict[str, float] = Field(description="Every candidate grammar's explained share.")


class DeclaredRegion(_Strict):
    kind: RegionKind
    reason: str
    lines: tuple[int, int] | None = None
    pointer: str | None = None
    part: str | None = Field(None, description=PART)
    content: str | None = Field(None, description="The region's text when a reader may want it (an alternative).")


class ShapedText(_Strict):
    lines: list[int] = Field(description="The first of these lines (1-based), at most 20.")
    count: int = Field(ge=1)
    reason: str
    part: str | None = Field(None, description=PART)


class Redaction(_Strict):
    turn: int
    type: str
    field: str


class SnapshotRecord(_Strict):
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    path: str
    first: str | None = Field(None, pattern=ISO_Z_PATTERN, description="Its earliest message time.")
    last: str | None = Field(None, pattern=ISO_Z_PATTERN, description="Its latest message time.")
    interactions: int = Field(ge=0)
    timeShiftHours: int | float = Field(0, description=(
        "Hours its times were moved by to match the latest's (whole quarter hours: 5.5 for India)."))
    latest: bool
    coverageReason: str | None = None


class PossiblySame(_Strict):
    key: str
    evidence: str


class ByggLogg(_Strict):
    source: SourceProvenance
    grammar: GrammarInfo
    pipelineVersion: str
    configFingerprint: str
    sessionIdSource: str
    sessionIdRaw: str | None = None
    sessionKey: str | None = Field(None, description=(
        "Which conversation this is across exports: <grammar>:<id> for a global id, <grammar>:<id>@<scope> for "
        "an id unique within a workspace, account or export, or <grammar>:fp-<hex> (normalizers/keys.py)."))
    sessionKeySource: str | None = Field(None, description="What the key was made from.")
    possiblySame: list[PossiblySame] | None = Field(None, description=(
        "Other keys that may be this conversation: the evidence falls short of proof, so they stay apart "
        "until a person merges or splits them (reconstruct sessions link / unlink)."))
    snapshots: list[SnapshotRecord] | None = Field(None, description=(
        "A merged document's snapshots (the same conversation from several sources), oldest first."))
    createdAtSource: str
    assumptions: list[str]
    warnings: list[str]
    steps: list[str]
    redactions: list[Redaction]
    declaredRegions: list[DeclaredRegion] = Field(
        default_factory=list,
        description="Every part of the source deliberately not turned into an interaction, and why "
        "(source accounting, gate check 3).",
    )
    shapedText: list[ShapedText] | None = Field(
        None, description="Lines shaped like a turn start that are text of a turn, grouped by why (the "
        "census of source accounting); absent when there are none.",
    )
    sourceMeta: dict[str, Any] | None = Field(
        None, description="What the grammar noted about the session (dialect, left-out branch nodes...)."
    )
    sessionRecord: dict[str, list[dict[str, Any]]] = Field(
        description="What the source itself says of builds and protocols: toolCalls, commands, fileChanges, "
        "patches, heuristicsNamed; each entry points at its turn. Empty when the source says nothing."
    )


class AiProtocolPerformance(_Open):
    sourceTurnCount: int
    interactionCount: int
    coverageRatio: float
    detectionConfidence: float
    gate: dict[str, str]
    unknownFields: dict[str, int]
    redactions: dict[str, Any]
    cleanJsonReplies: dict[str, int]


class HeuristicRecord(_Strict):
    id: str = Field(pattern=r"^H-[A-Za-z0-9._-]+$")
    description: str
    evidence: dict[str, Any]


class FrankensteenLearningDb(_Strict):
    heuristics: list[HeuristicRecord] = Field(min_length=1)


class Artifacts(_Strict):
    ByggLogg: ByggLogg
    Chatthistorik: Chatthistorik
    ai_protocol_performance: AiProtocolPerformance
    frankensteen_learning_db: FrankensteenLearningDb | None = None


class SessionDocument(_Strict):
    sessionId: str = Field(min_length=1)
    createdAt: str = Field(pattern=ISO_Z_PATTERN)
    artifacts: Artifacts


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the session document, as shipped in schemas/."""
    schema = SessionDocument.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "P-RECONSTRUCT session document"
    return schema
