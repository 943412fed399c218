"""Plain-text transcripts: ``Name: text`` turns, optional timestamps, multi-line turns.

Accepted headers: ``Alice: hi``, ``[2025-08-24 10:00:00] Alice: hi``, ``2025-08-24T10:00:00Z Bob: yo``,
``[10:00] Alice: hi`` (a clock time without a date takes the date from front matter ``date:``),
``Assistant (openai:gpt-4o@2024-08-06): ...`` (an explicit model).

A ``Word:`` line counts as a turn when the word is a role word (User, Assistant, System, Tool...),
carries a timestamp, or names a speaker who has at least two such lines in the session; any
other such line (``Note: ...`` inside a long answer) stays in the turn it is in, with a warning.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import regex

from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import Block, split_blocks
from parsers.registry import register
from parsers.sessions import segments
from parsers.speakers import ROLE_WORDS, parse_model_spec, role_of, split_speaker
from parsers.timeparse import parse_iso

_ISO = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_TS = rf"(?:\[(?P<ts>[^\]\n]{{4,40}})\][ \t]*|(?P<iso>{_ISO})[ \t]+)"
_LABEL = r"(?P<label>[^\s:()\[\]#*>`|\-][^:()\n]{0,60}?(?:[ \t]*\([^()\n]{1,80}\))?)"
HEADER = regex.compile(rf"^{_TS}?{_LABEL}[ \t]*:(?:[ \t]+|$)", regex.MULTILINE)
_CLOCK = regex.compile(r"(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?")
_MAX_WORDS = 6


def _plausible(label: str) -> bool:
    name = label.split("(")[0].strip()
    return bool(name) and len(name.split()) <= _MAX_WORDS and not name.endswith((".", ",", "?", "!"))


def accepted_labels(labels: list[tuple[str, bool]]) -> set[str]:
    """Speaker labels that start turns: role words, timestamped, or seen at least twice."""
    counts = Counter(label for label, _ in labels)
    out = set()
    for label, stamped in labels:
        base = split_speaker(label)[0]
        if stamped or counts[label] >= 2 or base.lower() in ROLE_WORDS:
            out.add(label)
    return out


@register
class Transcript(Grammar):
    name = "transcript"
    specificity = 1
    version = "1"
    description = "Plain-text transcript, one 'Name: text' turn per header line"
    example = "[2025-08-24 10:00:00] User: Can you check the build log?"

    def detect(self, sample: str, name: str) -> float:
        lines = [ln for ln in sample.split("\n")[:400] if ln.strip()]
        hits = [(m["label"], bool(m["ts"] or m["iso"])) for ln in lines
                if (m := HEADER.match(ln)) and _plausible(m["label"])]
        ok = accepted_labels(hits)
        turns = [label for label, _ in hits if label in ok]
        if not turns:
            return 0.0
        share = len(turns) / len(lines)
        roles = sum(1 for label in set(turns) if split_speaker(label)[0].lower() in ROLE_WORDS)
        return min(0.9, 0.45 + 0.35 * min(1.0, share * 2) + 0.1 * min(1, roles))

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        text = source.text
        for seg in segments(text, source.name):
            yield self._session(text, seg)

    def _session(self, text: str, seg) -> ParsedSession:
        front = seg.front
        zone = ZoneInfo(front["timezone"]) if front.get("timezone") else None
        day = parse_iso(f"{front['date']} 00:00:00") if front.get("date") else None
        default_model = parse_model_spec(front["model"]) if front.get("model") else None
        blocks = [
            b for b in split_blocks(text, HEADER, start=seg.start, end=seg.end, first_line=seg.first_line)
            if b.header is None or _plausible(b.header["label"])
        ]
        ok = accepted_labels([(b.header["label"], bool(b.header["ts"] or b.header["iso"]))
                              for b in blocks if b.header])
        session = ParsedSession(seg.session_id, seg.id_source, [], raw=text[seg.start:seg.end])
        session.lines = (seg.first_line, seg.first_line + text.count("\n", seg.start, max(seg.start, seg.end - 1)))
        session.title = front.get("title")
        if zone:
            session.assumptions.append(f"timestamps without a zone are in {zone.key} (front matter)")
        clock_only = 0
        for block in blocks:
            if block.header is None:
                if block.body.strip():
                    session.meta["preamble"] = block.body.strip("\n")
                    session.meta["preambleLines"] = [block.line_start, block.line_end]
                continue
            label = block.header["label"]
            if label not in ok and session.turns:
                prev = session.turns[-1]
                prev.content += "\n" + block.header.group(0) + block.body
                prev.lines = (prev.lines[0], block.line_end)
                session.warnings.append(
                    f"line {block.line_start}: {label!r}: looks like a header but the name appears once; "
                    f"kept as text of turn {len(session.turns)}"
                )
                continue
            turn, had_clock_only = self._turn(block, day, zone, default_model)
            clock_only += had_clock_only
            session.turns.append(turn)
        if clock_only:
            session.warnings.append(f"{clock_only} turns give a clock time without a date: no date set")
        return session

    def _turn(self, block: Block, day: datetime | None, zone: ZoneInfo | None, default_model) -> tuple[Turn, int]:
        h = block.header
        speaker, model = split_speaker(h["label"])
        role = role_of(speaker)
        if model is None and role == "assistant" and default_model is not None:
            model = default_model
        raw = h["ts"] or h["iso"]
        when, clock_only = None, 0
        if raw:
            when = parse_iso(raw)
            if when is None and (c := _CLOCK.fullmatch(raw.strip())):
                if day is not None:
                    try:
                        when = day.replace(hour=int(c["h"]), minute=int(c["m"]), second=int(c["s"] or 0))
                    except ValueError:
                        when = None
                else:
                    clock_only = 1
            if when is not None and when.tzinfo is None and zone is not None:
                when = when.replace(tzinfo=zone)
        content = block.body.lstrip(" \t") if block.body else ""
        kind = {"system": "system", "tool": "tool_result"}.get(role, "message")
        return Turn(speaker, role, content, when, raw, model, kind, (block.line_start, block.line_end)), clock_only

    def count_turns(self, raw: Any) -> int:
        """A line-by-line scan of its own: header lines outside nothing, with the same acceptance rule."""
        labels: list[tuple[str, bool]] = []
        for line in raw.split("\n"):
            m = HEADER.match(line)
            if m and _plausible(m["label"]):
                labels.append((m["label"], bool(m["ts"] or m["iso"])))
        ok = accepted_labels(labels)
        count = 0
        for i, (label, _) in enumerate(labels):
            if label in ok or i == 0:
                count += 1
        return count
