"""The record assembler: one turn record at a time into the document's interactions, as dicts.

It left the product when every session came to be assembled as a table (normalizers/table.py); it
stays here as the oracle's assembler, the plainest statement of what each interaction holds."""

from __future__ import annotations

from typing import Any

from models.records import Detection, ParsedSession, SourceText
from normalizers.assemble import RunContext, Summary, _speaker_entry, envelope, model_source, raw_time_keys
from normalizers.times import to_utc_z


def assemble(
    session: ParsedSession,
    counted: int,
    *,
    source: SourceText,
    detection: Detection,
    grammar_version: str,
    ctx: RunContext,
    accounting: dict[str, Any] | None = None,
    unaccounted: str | None = None,
) -> dict[str, Any]:
    """The session document for one parsed session, with ``counted`` the independent turn count.

    ``accounting`` is the source accounting's figures for the session and ``unaccounted`` its
    ``unaccounted_source`` reason when it found gaps (validators.accounting, run by the caller)."""
    summary = Summary()
    interactions = _interactions(session, ctx, summary)
    return envelope(session, counted, summary, interactions, source=source, detection=detection,
                    grammar_version=grammar_version, ctx=ctx, accounting=accounting, unaccounted=unaccounted)


def _interactions(session: ParsedSession, ctx: RunContext, summary: Summary) -> list[dict[str, Any]]:
    """The interactions of a session's turn records, one dict each."""
    redactions = summary.redactions
    speaker_cache: dict[tuple, dict[str, Any]] = {}
    facts, unknown = summary.facts, summary.unknown
    interactions: list[dict[str, Any]] = []
    scrub = ctx.redactor.scrub
    suspects = ctx.redactor.candidates([t.content for t in session.turns])
    limit = ctx.settings.max_turn_chars

    for ordinal, turn in enumerate(session.turns, 1):
        key = (turn.speaker, turn.model, turn.model_explicit)
        entry = speaker_cache.get(key)
        if entry is None:
            speaker, found = scrub(turn.speaker)  # a name may hold a key: it is shown in every turn
            redactions.extend({"turn": ordinal, "type": k, "field": "speakerName"} for k in found)
            entry = speaker_cache[key] = _speaker_entry(ctx, speaker, turn.model, turn.model_explicit,
                                                        summary.name_notes)
        content = turn.content
        if ordinal - 1 in suspects:
            content, found = scrub(content)
            for kind in found:
                redactions.append({"turn": ordinal, "type": kind, "field": "content"})
        if len(content) > limit:
            content = content[:limit]
            summary.truncated += 1
        model = entry["model"]
        item: dict[str, Any] = {
            "ordinal": ordinal,
            "role": turn.role,
            "kind": turn.kind,
            "speakerName": entry["speakerName"],
            "model": model,
            "modelSource": model_source(turn.model, turn.model_explicit),
            "speaker": entry["speaker"],
        }
        for f in ("provider", "name", "version"):
            if model[f] == "unknown":
                unknown[f] += 1
        if turn.time is not None:
            if turn.time.tzinfo is None:
                summary.naive_times += 1
            date = to_utc_z(turn.time, ctx.zone)
            if date is None:
                summary.unreadable_times += 1
            else:
                item["date"] = date
                summary.saw_date(date)
        elif turn.time_raw:
            summary.unreadable_times += 1
        if "date" not in item:
            unknown["turnsWithoutTime"] += 1
        if turn.time_raw is not None:
            item["dateRaw"] = turn.time_raw
        item["content"] = content
        item["source"] = {"lines": list(turn.lines)} if turn.lines else {"pointer": turn.pointer}
        if turn.part:  # a conversation over several files: the lines count in this one
            item["source"]["part"] = turn.part
        if "speakerNameRaw" in entry:
            item["speakerNameRaw"] = entry["speakerNameRaw"]
        if "modelRaw" in entry:
            item["modelRaw"] = entry["modelRaw"]
        if turn.extra:
            found = []
            extra = ctx.redactor.scrub_fields(turn.extra, found)
            item["sourceFields"] = raw_time_keys(extra)
            redactions.extend({"turn": ordinal, "type": k, "field": "sourceFields"} for k in found)
        else:
            extra = None
        base = scrub(turn.base_text)[0] if turn.base_text is not None else None  # redacted like the content
        facts.observe(ordinal, turn.role, turn.kind, turn.speaker, content, extra, base)
        interactions.append(item)
    summary.count = len(interactions)
    summary.open_with(interactions)
    return interactions


