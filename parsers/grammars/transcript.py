"""Plain-text transcripts: ``Name: text`` turns, optional timestamps, multi-line turns.

Accepted headers: ``Alice: hi``, ``[2025-08-24 10:00:00] Alice: hi``, ``2025-08-24T10:00:00Z Bob: yo``,
``[10:00] Alice: hi`` (a clock time without a date takes the date from front matter ``date:``),
``Assistant (openai:gpt-4o@2024-08-06): ...`` (an explicit model).

A ``Word:`` line counts as a turn when the word is a role word (User, Assistant, System, Tool...,
also followed by ``said`` as in text copied from the ChatGPT page: ``ChatGPT said:``),
carries a timestamp, or names a speaker who has at least two such lines in the session; any
other such line (``Note: ...`` inside a long answer) stays in the turn it is in, with a warning.

A line that starts with a timestamp of the same shape as the session's header timestamps but has
no ``Name:`` (``[10:05] Bob joined the call``) is a notice of its own (B2: never merged into the
turn before); a line whose timestamp has another shape is text of the turn it is in.

Source accounting: front matter, ``Session:`` lines and the text before the first turn (a title,
a banner) are declared regions. Detection reports the share of non-blank lines explained: headers
whose timestamp this grammar can read (ISO date-times, clock times) and the lines that continue
them, and notices in the shape of those headers; a timestamped line it cannot read
(``[2016/08/06 13:23] Ann: hi``, a platform's header, and a notice in that shape), a Markdown role
heading (``## User``) and what follows them are not claimed, so the grammar that reads them wins.
Text before the first turn is declared but not claimed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import Block, split_blocks
from parsers.grammars.markdown import candidate as md_candidate
from parsers.grammars.markdown import without_said
from parsers.registry import register
from parsers.sessions import SESSION_LINE, front_matter, segments
from parsers.speakers import ROLE_WORDS, parse_model_spec, role_of, split_speaker
from parsers.timeparse import parse_iso

_ISO = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_TS = rf"(?:\[(?P<ts>[^\]\n]{{4,40}})\][ \t]*|(?P<iso>{_ISO})[ \t]+)"
_LABEL = r"(?P<label>[\p{L}\p{N}@_~+][^:(){}\n]{0,60}?(?:[ \t]*\([^()\n]{1,80}\))?)"
_NOTICE = rf"(?:\[(?P<nts>[^\]\n]{{4,40}})\][ \t]*|(?P<niso>{_ISO})[ \t]+)(?=\S)"
HEADER = regex.compile(rf"^(?:{_TS}?{_LABEL}[ \t]*:(?:[ \t]+|$)|{_NOTICE})", regex.MULTILINE)
_CLOCK = regex.compile(r"(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?")
_DIGIT = regex.compile(r"\d")
_MAX_WORDS = 6


def _plausible(label: str) -> bool:
    name = label.split("(")[0].strip()
    return bool(name) and len(name.split()) <= _MAX_WORDS and not name.endswith((".", ",", "?", "!"))


def _speaker_label(m: regex.Match) -> str | None:
    """The label of a ``Name:`` header, None for a timestamped line without one (or an implausible name)."""
    label = m["label"]
    return label if label is not None and _plausible(label) else None


def _stamp(m: regex.Match) -> str | None:
    return m["ts"] or m["iso"] or m["nts"] or m["niso"]


def _shape(m: regex.Match) -> str:
    """A timestamp's shape (digits as 9, brackets kept): notices must share their headers' shape."""
    bracketed = m["ts"] or m["nts"]
    raw = bracketed or m["iso"] or m["niso"] or ""
    return ("[" if bracketed else "") + _DIGIT.sub("9", raw)


def _stamp_end(m: regex.Match) -> int:
    for group, close in (("ts", 1), ("nts", 1), ("iso", 0), ("niso", 0)):
        if m[group]:
            return m.end(group) + close
    return m.start()


def _readable(raw: str | None) -> bool:
    return raw is None or parse_iso(raw) is not None or _CLOCK.fullmatch(raw.strip()) is not None


def accepted_labels(labels: list[tuple[str, bool]]) -> set[str]:
    """Speaker labels that start turns: role words, timestamped, or seen at least twice."""
    counts = Counter(label for label, _ in labels)
    out = set()
    for label, stamped in labels:
        base = without_said(split_speaker(label)[0])
        if stamped or counts[label] >= 2 or base.lower() in ROLE_WORDS:
            out.add(label)
    return out


def _header_shapes(matches: list[regex.Match]) -> set[str]:
    return {_shape(m) for m in matches if _speaker_label(m) is not None and (m["ts"] or m["iso"])}


@register
class Transcript(Grammar):
    name = "transcript"
    specificity = 1
    version = "2"
    description = "Plain-text transcript, one 'Name: text' turn per header line"
    example = "[2025-08-24 10:00:00] User: Can you check the build log?"

    def detect(self, sample: str, name: str) -> float:
        lines = sample.split("\n")
        if len(sample) >= 65536 and len(lines) > 1:
            lines = lines[:-1]  # the sample may end inside a line
        _, body = front_matter(sample)
        skip = sample.count("\n", 0, body)
        explained = front = sum(1 for ln in lines[:skip] if ln.strip())  # declared as front matter
        lines = [ln for ln in lines[skip:][:400] if ln.strip()]
        found = [HEADER.match(ln) for ln in lines]
        ok = accepted_labels([(lb, bool(m["ts"] or m["iso"])) for m in found if m and (lb := _speaker_label(m))])
        if not ok:
            return 0.0
        shapes = {_shape(m) for m in found if m and _speaker_label(m) in ok and _stamp(m) and _readable(_stamp(m))}
        state = False  # is the line before (and so a continuation of it) explained?
        for line, m in zip(lines, found, strict=True):
            label = _speaker_label(m) if m else None
            if SESSION_LINE.match(line):
                state = True
            elif line[:1] in "#*" and (c := md_candidate(line, 0)) is not None and c.role_word:
                state = False  # a Markdown role heading: the Markdown grammar's turn, not this one's
            elif label in ok:
                state = _readable(m["ts"] or m["iso"])
            elif m is not None and label is None and _stamp(m):
                # a notice in the headers' own (readable) timestamp shape; any other is text, as in parse
                state = state or _shape(m) in shapes
            explained += state
        return explained / (len(lines) + front)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        text = source.text
        for seg in segments(text, source.name):
            yield self._session(text, seg)

    def _session(self, text: str, seg) -> ParsedSession:
        front = seg.front
        zone = ZoneInfo(front["timezone"]) if front.get("timezone") else None
        day = parse_iso(f"{front['date']} 00:00:00") if front.get("date") else None
        default_model = parse_model_spec(front["model"]) if front.get("model") else None
        blocks = list(split_blocks(text, HEADER, start=seg.start, end=seg.end, first_line=seg.first_line))
        heads = [b.header for b in blocks if b.header is not None]
        ok = accepted_labels([(lb, bool(h["ts"] or h["iso"])) for h in heads if (lb := _speaker_label(h))])
        shapes = _header_shapes(heads)
        session = ParsedSession(seg.session_id, seg.id_source, [], raw=text[seg.start:seg.end],
                                lines=seg.span, regions=list(seg.regions))
        session.title = front.get("title")
        if zone:
            session.assumptions.append(f"timestamps without a zone are in {zone.key} (front matter)")
        clock_only = 0
        for block in blocks:
            h = block.header
            label = _speaker_label(h) if h is not None else None
            starts = h is not None and (label in ok or (label is None and _shape(h) in shapes)
                                        or (label is not None and not session.turns))
            if starts:
                turn, had_clock_only = self._turn(block, label, day, zone, default_model)
                clock_only += had_clock_only
                session.turns.append(turn)
            elif session.turns:
                self._continue(session, block, label)
            elif block.body.strip() or h is not None:
                session.regions.append(Region(RegionKind.PREAMBLE, "text before the first turn",
                                              lines=(block.line_start, block.line_end),
                                              content=((h.group(0) if h else "") + block.body).strip("\n")))
        if clock_only:
            session.warnings.append(f"{clock_only} turns give a clock time without a date: no date set")
        return session

    @staticmethod
    def _continue(session: ParsedSession, block: Block, label: str | None) -> None:
        prev = session.turns[-1]
        prev.content += "\n" + block.header.group(0) + block.body
        prev.lines = (prev.lines[0], block.line_end)
        if label is not None:
            session.warnings.append(
                f"line {block.line_start}: {label!r}: looks like a header but the name appears once; "
                f"kept as text of turn {len(session.turns)}"
            )

    def _turn(self, block: Block, label: str | None, day: datetime | None, zone: ZoneInfo | None,
              default_model) -> tuple[Turn, int]:
        h = block.header
        if label is None:  # a timestamped notice
            speaker, model, role, kind = "System", None, "system", "notice"
        else:
            speaker, model = split_speaker(label)
            speaker = without_said(speaker)  # "ChatGPT said:" as copied from the ChatGPT page
            role = role_of(speaker)
            kind = {"system": "system", "tool": "tool_result"}.get(role, "message")
        if model is None and role == "assistant" and default_model is not None:
            model = default_model
        raw = _stamp(h)
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
        content = block.body
        if label is None:  # the notice's text starts right after its timestamp
            content = h.string[_stamp_end(h):h.end()] + content
        content = content.lstrip(" \t")
        if content.startswith("\n"):  # "Name:" alone on its line: the text starts on the next one
            content = content[1:]
        return Turn(speaker, role, content, when, raw, model, kind, (block.line_start, block.line_end)), clock_only

    def count_turns(self, raw: Any) -> int:
        """A line-by-line scan of its own: header lines with the same acceptance rule, notices of the
        headers' timestamp shape, and the first header-like line."""
        found = [m for line in raw.split("\n") if (m := HEADER.match(line))]
        ok = accepted_labels([(lb, bool(m["ts"] or m["iso"])) for m in found if (lb := _speaker_label(m))])
        shapes = _header_shapes(found)
        count = 0
        for m in found:
            label = _speaker_label(m)
            if label in ok or (label is None and _shape(m) in shapes) or (label is not None and count == 0):
                count += 1
        return count
