"""Session boundaries and ids in text sources: front matter, ``Session:`` lines, the file-name rule.

Documented order for a session's id: an explicit ``Session:``/``Session ID:`` line that opens it,
then front matter (``session_id``/``session``/``id``) for the first session, then the file-name
rule (a file stem ``session-<id>``, ``chat_<id>`` or ``conversation-<id>``) when the file holds a
single session, else none (the session becomes "999").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

import regex

FRONT_MATTER = regex.compile(r"\A---\n(?P<body>(?:.*\n)*?)---[ \t]*(?:\n|\Z)")
_FM_LINE = regex.compile(r"^(?P<key>[A-Za-z_][\w-]*)\s*:\s*(?P<value>.*?)\s*$", regex.MULTILINE)
SESSION_LINE = regex.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+)?(?:\*\*)?(?:session(?:[ _-]?id)?|conversation[ _-]?id)(?:\*\*)?[ \t]*:"
    r"(?:\*\*)?[ \t]*(?P<id>\S[^\n]*?)[ \t]*$",
    regex.MULTILINE | regex.IGNORECASE,
)
_FILE_ID = regex.compile(r"^(?:session|chat|conversation)[-_](?P<id>[A-Za-z0-9][A-Za-z0-9._-]*)$", regex.I)


@dataclass(slots=True)
class Segment:
    """A session's extent in the text, with what its header lines said."""

    start: int
    end: int
    first_line: int
    session_id: str | None = None
    id_source: str = "none"
    front: dict[str, str] = field(default_factory=dict)


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


def segments(text: str, name: str) -> list[Segment]:
    """Split a text source into sessions at ``Session:`` lines, after front matter."""
    front, body_start = front_matter(text)
    marks = list(SESSION_LINE.finditer(text, body_start))
    out: list[Segment] = []
    line = 1 + text.count("\n", 0, body_start)
    if not marks or text[body_start:marks[0].start()].strip():
        first_end = marks[0].start() if marks else len(text)
        out.append(Segment(body_start, first_end, line))
    cursor = body_start
    for i, m in enumerate(marks):
        line += text.count("\n", cursor, m.start())
        cursor = m.start()
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append(Segment(m.end(), end, line, m["id"].strip(), "source:session-line"))
        # the marker line itself belongs to the session; the body starts after it
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
