"""Markdown transcripts: ``## User`` / ``### Assistant`` headings or ``**User:**`` lines.

Dialects: a heading per turn (``## User``, ``### Assistant (openai:gpt-4o@2024-08-06)``,
``## User — 2025-08-24 10:00`` or ``## User (2025-08-24T10:00:00Z)``), or a bold label line
(``**User:** text``, ``**Assistant:**``). Lines inside fenced code blocks never start a turn.
A top-level ``# Title`` before the first turn is the session title; front matter gives
``session_id``, ``title``, ``model``, ``date`` and ``timezone``; ``Session: <id>`` lines split sessions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo

import regex

from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import fenced_regions, split_blocks
from parsers.registry import register
from parsers.sessions import segments
from parsers.speakers import ROLE_WORDS, parse_model_spec, role_of, split_speaker
from parsers.timeparse import parse_iso

_STAMP = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
HEADER = regex.compile(
    r"^(?:"
    r"(?P<hashes>\#{2,6})[ \t]+(?P<hlabel>[^\n#]+?)"
    rf"(?:[ \t]*(?:[—–-]|\|)[ \t]*(?P<hts>{_STAMP})|[ \t]*\((?P<hts2>{_STAMP})\))?[ \t]*:?[ \t]*$"
    r"|\*\*(?P<blabel>[^*\n]{1,80}?):?\*\*:?[ \t]*(?=\S|$)"
    r")",
    regex.MULTILINE,
)
_TITLE = regex.compile(r"^#[ \t]+(?P<title>[^\n]+?)[ \t]*$", regex.MULTILINE)


def _label(m: regex.Match) -> str:
    return (m["hlabel"] or m["blabel"] or "").strip()


def _is_speaker(label: str) -> bool:
    base = split_speaker(label)[0]
    return bool(base) and (base.lower() in ROLE_WORDS or len(base.split()) <= 3) and not base.endswith(".")


@register
class Markdown(Grammar):
    name = "markdown"
    specificity = 1
    version = "1"
    description = "Markdown transcript with '## User' / '### Assistant' headings or '**User:**' labels"
    example = "## Assistant (openai:gpt-4o@2024-08-06) — 2025-08-24 10:00:05"

    def detect(self, sample: str, name: str) -> float:
        hits = [m for m in HEADER.finditer(sample) if _is_speaker(_label(m))]
        if not hits:
            return 0.0
        labels = [split_speaker(_label(m))[0] for m in hits]
        roles = sum(1 for label in labels if label.lower() in ROLE_WORDS)
        stamped = sum(1 for m in hits if m["hts"] or m["hts2"])
        repeated = len(labels) - len(set(labels))
        if not (roles or stamped or repeated):
            return 0.0
        bonus = 0.05 if name.lower().endswith((".md", ".markdown")) else 0.0
        return min(0.95, 0.55 + 0.05 * (roles + stamped + repeated) + bonus)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        text = source.text
        for seg in segments(text, source.name):
            front = seg.front
            zone = ZoneInfo(front["timezone"]) if front.get("timezone") else None
            default_model = parse_model_spec(front["model"]) if front.get("model") else None
            session = ParsedSession(seg.session_id, seg.id_source, [], raw=text[seg.start:seg.end])
            session.lines = (seg.first_line, seg.first_line + text.count("\n", seg.start, max(seg.start, seg.end - 1)))
            session.title = front.get("title")
            if zone:
                session.assumptions.append(f"timestamps without a zone are in {zone.key} (front matter)")
            for block in split_blocks(text, HEADER, start=seg.start, end=seg.end,
                                      first_line=seg.first_line, skip_fenced=True):
                h = block.header
                if h is None or not _is_speaker(_label(h)):
                    if h is None:
                        title = _TITLE.search(block.body)
                        if title and session.title is None:
                            session.title = title["title"]
                        rest = _TITLE.sub("", block.body, count=1).strip()
                        if rest:
                            session.meta["preamble"] = rest
                            session.meta["preambleLines"] = [block.line_start, block.line_end]
                    elif session.turns:
                        prev = session.turns[-1]
                        prev.content += "\n" + h.group(0) + block.body
                        prev.lines = (prev.lines[0], block.line_end)
                    else:
                        session.meta.setdefault("preamble", "")
                        session.meta["preamble"] += h.group(0) + block.body
                    continue
                speaker, model = split_speaker(_label(h))
                role = role_of(speaker)
                if model is None and role == "assistant":
                    model = default_model
                raw_time = h["hts"] or h["hts2"]
                when = parse_iso(raw_time) if raw_time else None
                if when is not None and when.tzinfo is None and zone is not None:
                    when = when.replace(tzinfo=zone)
                kind = {"system": "system", "tool": "tool_result"}.get(role, "message")
                session.turns.append(Turn(
                    speaker, role, block.body.strip("\n").lstrip(" \t") if h["blabel"] else block.body.strip("\n"),
                    when, raw_time, model, kind, (block.line_start, block.line_end),
                ))
            yield session

    def count_turns(self, raw: Any) -> int:
        """Its own line scan: speaker headings and bold labels outside fences."""
        fences = fenced_regions(raw)
        count, pos = 0, 0
        for line in raw.split("\n"):
            inside = any(a < pos < b for a, b in fences)
            pos += len(line) + 1
            if inside:
                continue
            m = HEADER.match(line)
            if m and _is_speaker(_label(m)):
                count += 1
        return count
