"""Session boundaries and ids in text sources: front matter, ``Session:`` lines, the file-name rule.

Documented order for a session's id: an explicit ``Session:``/``Session ID:`` line that opens it,
then front matter (``session_id``/``session``/``id``) for the first session, then the file-name
rule (a file stem ``session-<id>``, ``chat_<id>`` or ``conversation-<id>``) when the file holds a
single session, else none (the session becomes "999").

Source accounting: the front matter block belongs to the file's first session and the
``Session:`` line to the session it opens; both are handed on as declared regions
(``front_matter``, ``session_header``) with the session's full line span.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

import regex

from models.records import ParsedSession, Region, RegionKind
from parsers.engine import fenced_regions

FRONT_MATTER = regex.compile(r"\A---[ \t]*\n(?P<body>(?:.*\n)*?)---[ \t]*(?:\n|\Z)")
_FM_LINE = regex.compile(r"^(?P<key>[A-Za-z_][\w-]*)\s*:\s*(?P<value>.*?)\s*$", regex.MULTILINE)
SESSION_LINE = regex.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+)?(?:\*\*)?(?:session(?:[ _-]?id)?|conversation[ _-]?id)(?:\*\*)?[ \t]*:"
    r"(?:\*\*)?[ \t]*(?P<id>\S[^\n]*?)[ \t]*$",
    regex.MULTILINE | regex.IGNORECASE,
)
_FILE_ID = regex.compile(r"^(?:session|chat|conversation)[-_](?P<id>[A-Za-z0-9][A-Za-z0-9._-]*)$", regex.I)


@dataclass(slots=True)
class Segment:
    """A session's extent in the text, with what its header lines said.

    ``start``/``end`` delimit the body (after front matter or the ``Session:`` line) and
    ``first_line`` is the line of ``text[start]``; ``span`` is the session's whole line span,
    header lines included, and ``regions`` declares those header lines."""

    start: int
    end: int
    first_line: int
    session_id: str | None = None
    id_source: str = "none"
    front: dict[str, str] = field(default_factory=dict)
    span: tuple[int, int] = (1, 1)
    regions: list[Region] = field(default_factory=list)


def front_matter(text: str) -> tuple[dict[str, str], int]:
    """Simple ``key: value`` front matter between ``---`` lines; returns it and where the body starts."""
    m = FRONT_MATTER.match(text)
    if not m:
        return {}, 0
    values = {k.group("key").lower(): k.group("value").strip().strip("\"'") for k in _FM_LINE.finditer(m["body"])}
    return values, m.end()


def file_name_id(name: str) -> str | None:
    stem = PurePosixPath(name).name
    for suffix in (".txt", ".md", ".markdown", ".log", ".json", ".jsonl"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    m = _FILE_ID.match(stem)
    return m["id"] if m else None


def _line_of(text: str, pos: int) -> int:
    return 1 + text.count("\n", 0, pos)


def _last_line(text: str, start: int, end: int) -> int:
    """The line of the last character of text[start:end] (the start's line when it is empty)."""
    return _line_of(text, max(start, end - 1))


def _may_name_sessions(text: str) -> bool:
    """Whether a ``Session:`` line may be in the text: its key, case folded (a superset of what the
    pattern's case-insensitive match accepts, with its ``İ`` for ``i``), is there. Most texts have none:
    no scan of every line."""
    folded = text.casefold().replace("i\u0307", "i")  # "İ".casefold() is "i" and a combining dot
    return "session" in folded or "conversation" in folded


def segments(text: str, name: str) -> list[Segment]:
    """Split a text source into sessions at ``Session:`` lines (never inside fenced code), after front matter."""
    front, body_start = front_matter(text)
    fences = fenced_regions(text, body_start) if "```" in text or "~~~" in text else []
    marks = [m for m in SESSION_LINE.finditer(text, body_start) if not any(a < m.start() < b for a, b in fences)] \
        if _may_name_sessions(text) else []
    out: list[Segment] = []
    if not marks or text[body_start:marks[0].start()].strip():
        first_end = marks[0].start() if marks else len(text)
        out.append(Segment(body_start, first_end, _line_of(text, body_start),
                           span=(_line_of(text, body_start), _last_line(text, body_start, first_end))))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        line = _line_of(text, m.start())
        seg = Segment(m.end(), end, line, m["id"].strip(), "source:session-line",
                      span=(line, _last_line(text, m.start(), end)))
        seg.regions.append(Region(RegionKind.SESSION_HEADER, "Session line opening the session", lines=(line, line)))
        out.append(seg)
    if body_start and out:
        last = _line_of(text, body_start - 1)
        out[0].regions.insert(0, Region(RegionKind.FRONT_MATTER, "front matter block", lines=(1, last)))
        out[0].span = (1, out[0].span[1])
    if out and out[0].session_id is None:
        fm_id = front.get("session_id") or front.get("session") or front.get("id")
        if fm_id:
            out[0].session_id, out[0].id_source = fm_id, "source:front-matter"
    for segment in out:
        segment.front = front
    if len(out) == 1 and out[0].session_id is None:
        fid = file_name_id(name)
        if fid:
            out[0].session_id, out[0].id_source = fid, "file-name"
    return out


def segment_session(text: str, seg: Segment, zone_key: str | None = None) -> ParsedSession:
    """A segment's session before its turns: its id, raw text, span, declared header lines and front
    matter title; ``zone_key``, the front matter's zone, is said among its assumptions."""
    session = ParsedSession(seg.session_id, seg.id_source, [], raw=text[seg.start:seg.end],
                            lines=seg.span, regions=list(seg.regions))
    session.title = seg.front.get("title")
    if zone_key:
        session.assumptions.append(f"timestamps without a zone are in {zone_key} (front matter)")
    return session
