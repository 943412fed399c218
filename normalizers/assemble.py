"""Build the session document (the four artifacts) from a parsed session.

The document is a plain dict shaped by models.document (fast to build and to serialise with
orjson); the gate validates it against those models. Nothing here reads the wall clock, so the
same input and settings always give the same document.

``createdAt`` fallback order (documented, deterministic): the session's own time in the source,
else the earliest turn time, else a date in the file name (``2012-10-18.log``), else the epoch
sentinel ``1970-01-01T00:00:00Z``; ByggLogg.createdAtSource says which one applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

import regex

from models.records import Detection, ParsedSession, SourceText
from models.settings import PIPELINE_VERSION, Settings

from .facts import Facts
from .ids import NO_ID, safe_id
from .keys import KEY_MESSAGES, Message, Scope, is_system, session_key
from .secrets import Redactor, scrub_name
from .speaker import normalize_speaker, safe_fields
from .times import to_utc_z

EPOCH = "1970-01-01T00:00:00Z"
_NAME_DATE = regex.compile(r"(?<!\d)(?P<y>(?:19|20)\d{2})-(?P<m>\d{2})-(?P<d>\d{2})(?!\d)")
STEPS = ["ingest", "detect", "parse", "count", "normalize", "redact", "assemble", "gate"]


@dataclass(frozen=True)
class RunContext:
    """What every session of a run shares, built once per run (or per worker) from the settings."""

    settings: Settings
    zone: ZoneInfo
    identity: dict[str, str] | None
    redactor: Redactor
    fingerprint: str

    @classmethod
    def from_settings(cls, settings: Settings) -> RunContext:
        return cls(
            settings, ZoneInfo(settings.source_tz), settings.identity,
            Redactor(settings.secrets_policy, settings.redact_pii), settings.fingerprint(),
        )


_TIME_KEY = regex.compile(r"^(?i:date|timestamp)$|(?:At|Date|Timestamp)$")
_ISO_Z = regex.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def raw_time_keys(value: Any) -> Any:
    """Source fields keep their values, but a key named like a time whose value is not in the
    contract's form gets the suffix ``Raw`` (``timestampEdited`` -> ``timestampEditedRaw``), so the
    document never carries a malformed timestamp under a timestamp key."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = str(k)
            if (_TIME_KEY.search(key) and "raw" not in key.lower() and v is not None
                    and not isinstance(v, (dict, list)) and not (isinstance(v, str) and _ISO_Z.match(v))):
                key = f"{key}Raw"
            out[key] = raw_time_keys(v)
        return out
    if isinstance(value, list):
        return [raw_time_keys(v) for v in value]
    return value


def _speaker_entry(ctx: RunContext, name: str, model, explicit: bool, notes: list[str]) -> dict[str, Any]:
    provider, mname, version = (model.provider, model.name, model.version) if model else (None, None, None)
    s_name, s_provider, s_model, s_version, changes = safe_fields(name, provider, mname, version)
    entry = {"speakerName": s_name, "model": {"provider": s_provider, "name": s_model, "version": s_version}}
    normalize_speaker(entry, ctx.identity, source_has_explicit_model=model is not None and explicit)
    if changes:
        entry["speakerNameRaw"] = name
        if model is not None:
            entry["modelRaw"] = {"provider": provider, "name": mname, "version": version}
        notes.extend(changes)
    return entry


def _declared_regions(session: ParsedSession, scrub, redactions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ByggLogg.declaredRegions: each region with its location; kept content is redacted like a turn."""
    out = []
    for region in session.regions:
        entry: dict[str, Any] = {"kind": region.kind.value, "reason": region.reason}
        if region.lines:
            entry["lines"] = list(region.lines)
        else:
            entry["pointer"] = region.pointer
        if region.part:
            entry["part"] = region.part
        if region.content is not None:
            entry["content"], found = scrub(region.content)
            redactions.extend({"turn": 0, "type": k, "field": f"declaredRegions[{len(out)}]"} for k in found)
        out.append(entry)
    return out


def _shaped_text(session: ParsedSession) -> list[dict[str, Any]]:
    """ByggLogg.shapedText: the lines shaped like a turn start that the grammar read as text, by reason."""
    groups: dict[tuple[str, str | None], list[int]] = {}
    for shaped in session.shaped:
        groups.setdefault((shaped.reason, shaped.part), []).append(shaped.line)
    out = []
    for (reason, part), lines in groups.items():
        entry: dict[str, Any] = {"lines": sorted(lines)[:20], "count": len(lines), "reason": reason}
        if part:
            entry["part"] = part
        out.append(entry)
    return out


def _created_from_name(name: str) -> str | None:
    m = _NAME_DATE.search(name.rsplit("/", 1)[-1])
    if not m:
        return None
    return f"{m['y']}-{m['m']}-{m['d']}T00:00:00Z" if 1 <= int(m["m"]) <= 12 and 1 <= int(m["d"]) <= 31 else None


@dataclass(slots=True)
class Summary:
    """What the interactions of a session add up to, for its envelope: however they were assembled
    (dicts here, columns in normalizers/columns.py, chunk by chunk for a spooled session)."""

    count: int = 0
    redactions: list[dict[str, Any]] = field(default_factory=list)
    name_notes: list[str] = field(default_factory=list)
    facts: Facts = field(default_factory=Facts)
    unknown: dict[str, int] = field(
        default_factory=lambda: {"provider": 0, "name": 0, "version": 0, "turnsWithoutTime": 0})
    naive_times: int = 0
    unreadable_times: int = 0
    truncated: int = 0
    earliest: str | None = None
    opening: list[Message] = field(default_factory=list)
    """The session's first ``keys.KEY_MESSAGES`` interactions that are not system lines, for its key (known before the
    interactions are written, so a streamed session's head can carry it)."""

    def open_with(self, items) -> None:
        """Keep the first interactions (dicts, in order) until the key has its ``KEY_MESSAGES``."""
        for item in items:
            if len(self.opening) >= KEY_MESSAGES:
                return
            if not is_system(item["kind"]):  # a system line says nothing of which chat it is
                self.opening.append(Message(item["speakerName"], item.get("date"), item["content"], item["kind"]))

    def saw_date(self, date: str | None) -> None:
        if date is not None and (self.earliest is None or date < self.earliest):
            self.earliest = date


def model_source(model, explicit: bool) -> str:
    return "none" if model is None else ("explicit" if explicit else "session-default")


def envelope(session: ParsedSession, counted: int, summary: Summary, interactions: list[dict[str, Any]], *,
             source: SourceText, detection: Detection, grammar_version: str, ctx: RunContext,
             accounting: dict[str, Any] | None = None, unaccounted: str | None = None) -> dict[str, Any]:
    """The document around the interactions (``interactions``: the list to put in it, empty when
    they are encoded apart), from the session and what its interactions add up to."""
    warnings, assumptions = _notes(session, summary, ctx)
    if source.encoding_guess:  # the bytes were not UTF-8: the code page they were read in is an assumption
        assumptions.insert(0, source.encoding_guess)
    redactions = list(summary.redactions)
    raw_id = session.session_id
    if raw_id is not None:  # an id becomes a file name: a secret in it is replaced before the mapping
        raw_id, found = scrub_name(raw_id), ctx.redactor.scrub(raw_id)[1]
        redactions.extend({"turn": 0, "type": k, "field": "sessionId"} for k in found)
    session_id = safe_id(raw_id)
    created, created_source = _created_at(session, summary.earliest, source, ctx)
    reasons = _coverage_reasons(session, counted, summary, ctx.settings.max_turn_chars, unaccounted)
    history = _history(session, interactions, reasons, ctx, redactions)
    source_meta = _source_meta(session, ctx, redactions)
    declared = _declared_regions(session, ctx.redactor.scrub, redactions)
    key, key_source = session_key(detection.grammar or "unknown", raw_id, session.id_source, history["title"],
                                  summary.opening, Scope.of(source.sha256, session.meta))
    bygglogg: dict[str, Any] = {
        "source": _source_block(source, session),
        "grammar": _grammar_block(detection, grammar_version),
        "pipelineVersion": PIPELINE_VERSION,
        "configFingerprint": ctx.fingerprint,
        "sessionIdSource": session.id_source if session.session_id else "none: no derivable id (rule C1)",
        "sessionKey": key,
        "sessionKeySource": key_source,
        "createdAtSource": created_source,
        "assumptions": assumptions,
        "warnings": warnings,
        "steps": STEPS,
        "redactions": redactions,
        "declaredRegions": declared,
        "sessionRecord": summary.facts.record,
    }
    if session.shaped:
        bygglogg["shapedText"] = _shaped_text(session)
    if source_meta:
        bygglogg["sourceMeta"] = source_meta
    if source.replaced_count:
        warnings.append(f"{source.replaced_count} invalid byte sequences decoded as U+FFFD (first at byte "
                        f"{source.replaced[0]})")
    if source.surrogates_count:
        warnings.append(surrogates_note(source))
    if raw_id is not None and session_id != raw_id:
        bygglogg["sessionIdRaw"] = raw_id
    if session_id == NO_ID and session.session_id is None:
        bygglogg["sessionIdSource"] = "none: no derivable id (rule C1)"
    artifacts: dict[str, Any] = {
        "ByggLogg": bygglogg,
        "Chatthistorik": history,
        "ai_protocol_performance": _performance(session, counted, summary, redactions, detection, ctx, accounting),
    }
    if session.heuristics:
        artifacts["frankensteen_learning_db"] = {
            "heuristics": [{"id": h.id, "description": h.description, "evidence": h.evidence}
                           for h in session.heuristics]
        }
    return {"sessionId": session_id, "createdAt": created, "artifacts": artifacts}


def _notes(session: ParsedSession, summary: Summary, ctx: RunContext) -> tuple[list[str], list[str]]:
    """(warnings, assumptions): the grammar's, then what the interactions added up to."""
    warnings, assumptions = list(session.warnings), list(session.assumptions)
    if summary.naive_times:
        assumptions.append(
            f"{summary.naive_times} timestamps without a zone read as {ctx.zone.key} (configured source zone)"
        )
    if summary.unreadable_times:
        warnings.append(f"{summary.unreadable_times} turn times could not be read or are out of range: no date set")
    warnings.extend(f"display field changed to fit the speaker format: {n}" for n in summary.name_notes)
    return warnings, assumptions


def _created_at(session: ParsedSession, earliest: str | None, source: SourceText,
                ctx: RunContext) -> tuple[str, str]:
    """(createdAt, createdAtSource), in the documented fallback order (module docstring)."""
    if session.created is not None:
        created = to_utc_z(session.created, ctx.zone)
        if created is not None:
            return created, "source: session time"
    if earliest is not None:
        return earliest, "earliest turn time"
    created = _created_from_name(source.name)
    if created:
        return created, "date in the file name"
    return EPOCH, "none: epoch sentinel (the source gives no time)"


def _coverage_reasons(session: ParsedSession, counted: int, summary: Summary, limit: int,
                      unaccounted: str | None) -> list[str]:
    """Why the document is partial, if it is: each reason in the order a reader checks them."""
    reasons = []
    if session.coverage_reason:
        reasons.append(session.coverage_reason)
    if counted != summary.count:
        reasons.append(
            f"the source holds {counted} turns by an independent count, {summary.count} were reconstructed"
        )
    if summary.truncated:
        reasons.append(f"{summary.truncated} turns longer than {limit} characters were truncated")
    if unaccounted:
        reasons.append(unaccounted)
    return reasons


def _history(session: ParsedSession, interactions: list[dict[str, Any]], reasons: list[str], ctx: RunContext,
             redactions: list[dict[str, Any]]) -> dict[str, Any]:
    """Chatthistorik: title, interactions, coverage and the preamble, secrets scrubbed."""
    history: dict[str, Any] = {"title": None, "interactions": interactions}
    if session.title is not None:
        history["title"], found = ctx.redactor.scrub(session.title)
        redactions.extend({"turn": 0, "type": k, "field": "title"} for k in found)
    if reasons:
        history["coverage"] = "partial"
        history["coverageReason"] = "; ".join(reasons)
    if session.meta.get("preamble"):
        preamble, found = ctx.redactor.scrub(session.meta["preamble"])
        redactions.extend({"turn": 0, "type": k, "field": "preamble"} for k in found)
        history["preamble"] = preamble
    return history


def _source_meta(session: ParsedSession, ctx: RunContext, redactions: list[dict[str, Any]]) -> dict[str, Any]:
    """The grammar's session metadata (preamble and drift have their own places), secrets scrubbed."""
    meta = {k: v for k, v in session.meta.items() if not k.startswith("preamble") and k != "formatDrift"}
    if not meta:
        return meta
    found: list[str] = []
    meta = raw_time_keys(ctx.redactor.scrub_tree(meta, found))
    redactions.extend({"turn": 0, "type": k, "field": "sourceMeta"} for k in found)
    return meta


def surrogates_note(source: SourceText) -> str:
    """What the build log and the ledger say of the lone surrogate escapes decoding replaced."""
    return (f"{source.surrogates_count} lone UTF-16 surrogate escapes (a \\ud800-\\udfff without its pair) read "
            f"as U+FFFD (first at character {source.surrogates[0]} of the text)")


def _source_block(source: SourceText, session: ParsedSession) -> dict[str, Any]:
    block: dict[str, Any] = {
        "path": source.name,
        "sha256": source.sha256,
        "sizeBytes": source.size,
        "encoding": source.encoding,
        "lines": list(session.lines) if session.lines else None,
        "pointer": session.pointer,
    }
    if source.replaced_count:
        block["replacedBytes"] = {"count": source.replaced_count, "firstOffsets": list(source.replaced)}
    return block


def _grammar_block(detection: Detection, grammar_version: str) -> dict[str, Any]:
    return {
        "id": detection.grammar,
        "version": grammar_version,
        "detectionConfidence": detection.confidence,
        "detectionMargin": None if detection.forced else detection.margin,
        "forced": detection.forced,
        "candidates": detection.scores,
    }


def _performance(session: ParsedSession, counted: int, summary: Summary, redactions: list[dict[str, Any]],
                 detection: Detection, ctx: RunContext, accounting: dict[str, Any] | None) -> dict[str, Any]:
    """ai_protocol_performance (the gate's summary is filled in by the gate)."""
    by_type: dict[str, int] = {}
    for r in redactions:
        by_type[r["type"]] = by_type.get(r["type"], 0) + 1
    count = summary.count
    return {
        "sourceTurnCount": counted,
        "interactionCount": count,
        "coverageRatio": round(count / counted, 6) if counted else (1.0 if not count else 0.0),
        "detectionConfidence": detection.confidence,
        "gate": {},
        "unknownFields": summary.unknown,
        "redactions": {"policy": ctx.settings.secrets_policy, "total": len(redactions), "byType": by_type},
        "cleanJsonReplies": {"checked": summary.facts.clean_checked, "compliant": summary.facts.clean_ok},
        "sourceAccounting": accounting,
        "formatDrift": session.meta.get("formatDrift", {}),
        "timing": "per-session time is recorded in the run ledger, not here, so documents stay byte-identical",
    }
