"""The Markdown grammar's turn-by-turn parse (a Python pass over each session's lines, one ``Turn`` record per
turn), kept as the oracle of the product's table of lines (``Markdown.read``)."""

from collections.abc import Iterator
from zoneinfo import ZoneInfo

import regex

from models.records import ModelRef, ParsedSession, RegionKind, ShapedLine, SourceText, Turn
from models.settings import Settings
from parsers.grammars.markdown import (
    _MODEL_LINE,
    _TITLE,
    _UNQUOTE,
    BANNER,
    TAIL_REASON,
    TIME_TAG,
    TURN_SHAPE,
    Candidate,
    _furniture,
    _regions,
    candidate,
    fences,
    turns_of,
)
from parsers.sessions import segments
from parsers.speakers import parse_model_spec
from parsers.timeparse import parse_iso

_TAIL_REASON = {RegionKind.BOILERPLATE: TAIL_REASON}
_SHAPE = regex.compile(TURN_SHAPE)


def parse(grammar, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
    """The sessions of one input, turn by turn (``grammar``: the product's grammar object)."""
    text = source.text
    all_lines = text.split("\n")
    for seg in segments(text, source.name):
        yield _session(text, all_lines, seg)


def _session(text: str, all_lines: list[str], seg) -> ParsedSession:
    front = seg.front
    zone = ZoneInfo(front["timezone"]) if front.get("timezone") else None
    default_model = parse_model_spec(front["model"]) if front.get("model") else None
    first, last = seg.first_line, seg.span[1]
    lines = all_lines[first - 1:last]
    if lines and seg.start and text[seg.start - 1] != "\n":  # the body starts on the front matter's closing line
        lines[0] = text[seg.start:].split("\n", 1)[0]  # (its "---" has no line end): only what follows it
    if lines and seg.session_id is not None and seg.id_source == "source:session-line":
        lines[0] = ""  # the Session line itself is declared by the segment
    session = ParsedSession(seg.session_id, seg.id_source, [], raw=text[seg.start:seg.end],
                            lines=seg.span, regions=list(seg.regions))
    session.title = front.get("title")
    if zone:
        session.assumptions.append(f"timestamps without a zone are in {zone.key} (front matter)")
    fenced = fences(lines)
    starts = turns_of(lines, first, fenced)
    session.shaped = _shaped_text(lines, first, starts, fenced)
    head = (starts[0].line if starts else last + 1) - first
    session.regions += _regions(lines[:head], first)
    if session.title is None:
        session.title = next((t["title"] for ln in lines[:head] if (t := _TITLE.match(ln))), None)
    if default_model is None:  # an exporter's "Model: ..." line before the first turn
        stated = next((m["model"] for ln in lines[:head] if (m := _MODEL_LINE.match(ln))), None)
        default_model = parse_model_spec(stated) if stated else None
    unread = 0
    for i, c in enumerate(starts):
        end = (starts[i + 1].line if i + 1 < len(starts) else last + 1) - first
        block = lines[c.line - first:end]
        cut = len(block) - _tail(block, i + 1 == len(starts))
        session.regions += _regions(block[cut:], c.line + cut, _TAIL_REASON)
        turn = _turn(c, block[:cut], zone, default_model)
        unread += turn.time is None and turn.time_raw is not None
        session.turns.append(turn)
    session.regions.sort(key=lambda r: r.lines)
    if unread:
        session.warnings.append(f"{unread} turn times could not be read: time left empty, raw text kept")
    return session


def _turn(c: Candidate, block: list[str], zone: ZoneInfo | None, default_model: ModelRef | None) -> Turn:
    body = block[1:]
    if c.rest:
        body = [c.rest, *body]
    if c.inline == "quote":
        body = [_UNQUOTE.sub("", ln) for ln in block]
    elif c.inline == "text":
        body = block
    stamp = c.stamp
    lead = next((i for i, ln in enumerate(body) if ln.strip()), None)
    if stamp is None and lead is not None and (tag := TIME_TAG.match(body[lead])):
        stamp, body = tag["dt"], body[lead + 1:]  # an exporter's <time datetime=...> line
    content = "\n".join(body).strip("\n")
    role = c.speaker_role
    model = c.model if c.model is not None or role != "assistant" else default_model
    when = parse_iso(stamp) if stamp else None
    if when is not None and when.tzinfo is None and zone is not None:
        when = when.replace(tzinfo=zone)
    kind = {"system": "system", "tool": "tool_result"}.get(role, "message")
    return Turn(c.name, role, content, when, stamp, model, kind, (c.line, c.line + max(len(block) - 1, 0)))


def _shaped_text(lines: list[str], first: int, starts: list[Candidate], fenced: dict[int, int]) -> list[ShapedLine]:
    """The role-label-shaped lines after the first turn that start none, declared with why."""
    if not starts:
        return []
    begin, at = starts[0].line - first, {c.line for c in starts}
    styles = sorted({c.style for c in starts})
    out = []
    for i in range(begin, len(lines)):
        if first + i in at or not _SHAPE.match(lines[i]):
            continue
        if i in fenced:
            out.append(ShapedLine(first + i, f"inside a fenced code block opened at line {first + fenced[i]}"))
        elif (c := candidate(lines[i], first + i)) is not None and c.style not in styles:
            out.append(ShapedLine(first + i, f"a {c.style} role label in a session whose turns are "
                                             f"{', '.join(styles)} labels"))
    return out


def _tail(lines: list[str], last_turn: bool) -> int:
    """How many lines at the end of a turn's block are separators (rules, blank lines, and for the
    last turn exporter footers), not text of the turn."""
    n = len(lines)
    while n:
        line = lines[n - 1]
        if not line.strip() or _furniture(line) or (last_turn and BANNER.match(line)):
            n -= 1
        else:
            break
    return len(lines) - n
