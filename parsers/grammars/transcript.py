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

Read as columns (``_transcript_columns``, the same sessions), every segment of every transcript of a
batch in one table of lines (each segment's labels and front matter decided on its own), and, above
``stream_text_bytes``, streamed in chunks through the same methods (``parsers.base.LineGrammar``) when
every header line starts a turn and there is no front matter or ``Session:`` line (the acceptance rule
needs every label's count: the survey of the blocks counts them first).

**Export headers.** An exporter's ``Key: value`` lines above the conversation (``Participants: User,
Assistant``, ``Date:``, ``Title:``, ``Model:``, ``Exported:`` and their kin, ``EXPORT_KEYS``) are
preamble, not turns: the leading lines of a session, up to the last such line before the first other
header, are one declared ``preamble`` region (the session's text starts after it, on every route). A
key that is also a role word counts only when its label appears once in the session, so the
``Model`` speaker of a Gemini-style chat stays a speaker; a label seen once there whose value names two or more of the
session's speakers (``With: Ann, Bob``) is a header too. A ``Title:`` gives the session's title and a
``Model:`` the model of assistant turns that name none.

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
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import orjson
import polars as pl
import regex

from models.records import ParsedSession, Region, RegionKind, SourceText
from parsers.base import LineGrammar, Survey
from parsers.columns import LineTable, line_test, rust_pattern, unnamed
from parsers.grammars.markdown import candidate as md_candidate
from parsers.grammars.markdown import without_said
from parsers.linecount import LineCounts, LinePatterns
from parsers.registry import register
from parsers.sessions import SESSION_LINE, Segment, file_name_id, front_matter, segment_session, segments
from parsers.speakers import ROLE_WORDS, parse_model_spec, role_of, split_speaker
from parsers.timeparse import parse_iso

from . import _transcript_columns as columns
from ._lines import line_count

_ISO = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_TS = rf"(?:\[(?P<ts>[^\]\n]{{4,40}})\][ \t]*|(?P<iso>{_ISO})[ \t]+)"
_LABEL = r"(?P<label>[\p{L}\p{N}@_~+][^:(){}\n]{0,60}?(?:[ \t]*\([^()\n]{1,80}\))?)"
_MAX_WORDS = 6
TURN_SHAPE = (rf"^{_TS}?[\p{{L}}\p{{N}}@_~+][^:(){{}}\n \t]*(?:[ \t]+[^:(){{}}\n \t]+){{0,{_MAX_WORDS - 1}}}"
              r"(?<![.,?!])(?:[ \t]*\([^()\n]{1,80}\))?[ \t]*:(?:[ \t]+|$)")
"""A ``Name: text`` header with a plausible name (at most six words, no closing punctuation), optionally
timestamped: the census shape (validators/accounting)."""
_NOTICE_STAMP = rf"(?:\[(?P<nts>[^\]\n]{{4,40}})\][ \t]*|(?P<niso>{_ISO})[ \t]+)"
HEADER = regex.compile(rf"^(?:{_TS}?{_LABEL}[ \t]*:(?:[ \t]+|$)|{_NOTICE_STAMP}(?=\S))", regex.MULTILINE)
# The header without its one lookahead (a notice's text starts with a non-space), which Rust's regex
# lacks: the columnar parse tests it on the rest of the line (it is the pattern's last step).
HEADER_NO_LOOKAHEAD = regex.compile(rf"^(?:{_TS}?{_LABEL}[ \t]*:(?:[ \t]+|$)|{_NOTICE_STAMP})", regex.MULTILINE)
RUST_HEADER = rust_pattern(HEADER_NO_LOOKAHEAD)
_HEADER_TEST = unnamed(rust_pattern(regex.compile(
    rf"^(?:{_TS}?{_LABEL}[ \t]*:(?:[ \t]+|$)|{_NOTICE_STAMP}\S)", regex.MULTILINE)))
_CLOCK = regex.compile(r"(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?")
DETECT_LINES = 400
"""The lines after front matter that detection reads."""
LABELLED = LinePatterns(DETECT_LINES, {"label": regex.compile(rf"^{_TS}?{_LABEL}[ \t]*:(?:[ \t]+|$)", regex.M)})
"""Detection's gate, over the lines it reads of a sample without front matter: HEADER's ``Name:``
alternative, the one a label comes from. Without one there is no label, and ``detect`` says 0."""
EXPORT_KEYS = frozenset({
    "participants", "participant", "members", "speakers", "attendees", "with", "between", "date", "dates",
    "time", "started", "start", "ended", "end", "duration", "title", "subject", "topic", "model", "models",
    "exported", "exported at", "exported on", "export date", "exported by", "export", "created", "created at",
    "created on", "updated", "updated at", "last updated", "saved", "source", "url", "link", "platform", "app",
    "application", "tool", "conversation", "conversation id", "chat", "chat id", "id", "messages",
    "message count", "tags", "author", "version", "language", "provider", "generator", "format",
})
"""Keys of an exporter's ``Key: value`` header lines above a conversation (data: add a key here)."""
_LISTED = regex.compile(r"[,;/&]|\band\b|\bund\b|\bet\b|\by\b")
_DIGIT = regex.compile(r"\d")


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
class Transcript(LineGrammar):
    name = "transcript"
    specificity = 1
    version = "2"
    description = "Plain-text transcript, one 'Name: text' turn per header line"
    example = "[2025-08-24 10:00:00] User: Can you check the build log?"
    turn_shape = TURN_SHAPE

    detect_lines = LABELLED

    def detect_counted(self, sample: str, name: str, counts: LineCounts) -> float:
        """0 for a sample without front matter and without a ``Name:`` line where ``detect`` reads (its own
        answer: no label accepted), else ``detect`` (front matter moves the lines it reads)."""
        if counts.hits["label"] or front_matter(sample)[1]:
            return self.detect(sample, name)
        return 0.0

    def detect(self, sample: str, name: str) -> float:
        lines = sample.split("\n")
        if len(sample) >= 65536 and len(lines) > 1:
            lines = lines[:-1]  # the sample may end inside a line
        _, body = front_matter(sample)
        skip = sample.count("\n", 0, body)
        explained = front = sum(1 for ln in lines[:skip] if ln.strip())  # declared as front matter
        lines = [ln for ln in lines[skip:][:DETECT_LINES] if ln.strip()]
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

    # The header lines (``HEADER``'s, tested without captures). A streamed transcript has no header
    # line that starts no turn, and no other line these flag (``TextSurvey.whole_only``), so these
    # are its turn starts.
    starts = staticmethod(line_test(_HEADER_TEST))

    def survey(self, sources: list[SourceText], table: LineTable, first_lines: list[int]) -> list[TextSurvey]:
        """Each text's header labels and stamp shapes, counted, and, for a text that starts its input, its
        sessions' segments (front matter, ``Session:`` lines, an exporter's header lines: a transcript
        that has any is read whole). The header pattern runs once, over the table of every session's
        lines (``_sessions_table``: the table itself when every text is one plain session)."""
        segments = [_segments(text, s.name) if first == 1 else None
                    for s, text, first in zip(sources, table.texts, first_lines, strict=True)]
        out = [TextSurvey(first_lines[i] + line_count(text) - 1, 0, 0, len(text),
                          columns.Labels(), Counter(), None, segments[i]) for i, text in enumerate(table.texts)]
        read, owners = _sessions_table(table, out)
        _tally(read, {j: out[i] for j, (i, seg) in enumerate(owners) if seg is None}, self.starts(read.lines))
        for found, text, first in zip(out, table.texts, first_lines, strict=True):
            found.why = _why_whole(found, text, first)
        return out

    def sessions(self, source: SourceText, survey: TextSurvey) -> list[ParsedSession]:
        if isinstance(survey.segments, Exception):
            raise survey.segments
        segs = survey.segments
        if segs is None:  # the surveys of a streamed input's blocks, added up: one plain session
            sid = file_name_id(source.name)
            segs = [(Segment(0, 0, 1, sid, "file-name" if sid else "none", span=(1, max(survey.lines, 1))),
                     (None, None, None))]
        return [segment_session(source.text, seg, zone and zone.key) for seg, (zone, _, _) in segs]

    def frames(self, sources: list[SourceText], table: LineTable, surveys: list[TextSurvey],
               sessions: list[list[ParsedSession]], first_lines: list[int]) -> list[list[columns.Chunk]]:
        """Each session's turn frame, from the table of every session's lines (a streamed chunk: the
        chunk's table), each read with its own labels and front matter; the turns read so far and the
        clock-only times are carried on the survey."""
        read, owners = table.memo.get("sessions") or (table, [(i, None) for i in range(len(table))])
        heads, rows = _header_rows(read)
        readings, firsts, before = [], [], []
        for j, (i, seg) in enumerate(owners):
            if seg is None:  # one plain session: the survey's reading
                readings.append(surveys[i].reading)
                firsts.append(first_lines[i])
                before.append(surveys[i].turns_read)
                continue
            seg, (zone, day, model) = seg
            readings.append(_reading(read.memo["labels"][j], day, zone, model))
            firsts.append(seg.first_line)
            before.append(0)
        chunks = columns.turn_frames(read, heads, rows, columns.Texts(readings, firsts, before)) if owners else []
        out: list[list[columns.Chunk]] = [[] for _ in surveys]
        for (i, _), chunk in zip(owners, chunks, strict=True):
            if sessions[i]:
                out[i].append(chunk)
        for i, survey in enumerate(surveys):
            survey.clock_only = survey.clock_only or [0] * len(sessions[i])
            for k, (session, chunk) in enumerate(zip(sessions[i], out[i], strict=True)):
                _absorb(session, chunk)
                survey.clock_only[k] += chunk.clock_only
                survey.turns_read += chunk.turns
        return out

    def conclude(self, sessions: list[ParsedSession], source: SourceText, survey: TextSurvey, chunks: list) -> None:
        for session, clock_only in zip(sessions, survey.clock_only or [0] * len(sessions), strict=True):
            if clock_only:
                session.warnings.append(_clock_only(clock_only))

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




def _segments(text: str, name: str) -> list | Exception:
    """A text's sessions' segments, each with its front matter read (zone, day, model); the failure of
    this source's own decision, for it alone."""
    try:
        return [(seg, _front(seg.front)) for seg in sessions_of(text, name)]
    except Exception as exc:  # raised where this source's sessions are taken (``Transcript.sessions``)
        return exc


def _header_rows(table: LineTable) -> tuple:
    """The header lines of a table and their rows with ``src`` (each row's text), once per table."""
    if "transcript" not in table.memo:
        heads, rows = columns.header_rows(table.lines, RUST_HEADER, _plausible)
        table.memo["transcript"] = heads, rows.with_columns(src=table.source.filter(heads.ok))
    return table.memo["transcript"]


def _tally(read: LineTable, plain: dict[int, TextSurvey], starts: pl.Series) -> None:
    """The header labels, stamp shapes and counts of each text of the sessions' table that is a plain
    text's (``plain``: its survey by its number in ``read``), from one header pass over the table."""
    heads, rows = _header_rows(read)
    labels = read.memo["labels"] = columns.labels_by_text(rows, len(read))
    for j, found in plain.items():
        found.labels = labels[j]
    for src, label, shape, n in rows.group_by("src", "label", "shape").len().iter_rows():
        if src in plain:
            plain[src].keys[label, shape] = n
    for src, label, shape in rows.group_by("src", maintain_order=True).first().select(
            "src", "label", "shape").iter_rows():
        if src in plain:
            plain[src].first = (label, shape)
    turns = read.counts(starts)
    for j, n in enumerate(read.counts(heads.ok)):
        if j in plain:
            plain[j].counted, plain[j].turns = n, turns[j]


def _why_whole(found: TextSurvey, text: str, first: int) -> str | None:
    """Why a piece of a transcript (from line ``first``) cannot be cut at its turn starts, or None."""
    # a plain first text has no Session line but in fenced code (``segments`` skips those)
    maybe = first > 1 or not found.plain or "```" in text or "~~~" in text
    if (first == 1 and text.startswith("---")) or (maybe and SESSION_LINE.search(text)):
        return "front matter or a Session line"
    if first == 1 and not found.plain:
        return "export header lines above the conversation"
    return None


def _sessions_table(table: LineTable, surveys: list[TextSurvey]) -> tuple[LineTable, list]:
    """The table of every session's lines and, for each of its texts, (the text it is of, None for a
    text that is one plain session, else its segment with its front matter read). The table itself
    when every text is plain; a text whose segments failed has none."""
    owners = [(i, None) if v.plain else (i, seg) for i, v in enumerate(surveys)
              if not isinstance(v.segments, Exception) for seg in ([None] if v.plain else v.segments)]
    if all(seg is None for _, seg in owners) and len(owners) == len(table):
        return table, owners
    read = LineTable.of([table.texts[i] if seg is None else table.texts[i][seg[0].start:seg[0].end]
                         for i, seg in owners])
    table.memo["sessions"] = read, owners
    return read, owners


def sessions_of(text: str, name: str) -> list:
    """The sessions' segments (parsers/sessions.py), each with its export header lines declared."""
    return [export_headers(text, seg) for seg in segments(text, name)]


def export_headers(text: str, seg):
    """The segment with its leading export header lines (see the module doc) made a preamble region:
    its text then starts after them, and their ``Title:`` and ``Model:`` go to its front values."""
    body = text[seg.start:seg.end]
    lines = body.split("\n")
    if not _may_export(lines):
        return seg
    found = [(i, m) for i, ln in enumerate(lines) if (m := HEADER.match(ln)) and _speaker_label(m)]
    counts = Counter(_speaker_label(m) for _, m in found)
    speakers = {lb for lb, n in counts.items() if n >= 2 or _role_word(lb)}
    last = None
    for i, m in found:
        label = _speaker_label(m)
        if (counts[label] != 1 and _role_word(label)) or m["ts"] or m["iso"] \
                or not _export_line(label, lines[i][m.end():], speakers):
            break
        last = i
    if last is None:
        return seg
    values = {_speaker_label(m).strip().lower(): lines[i][m.end():].strip() for i, m in found if i <= last}
    head = next(i for i in range(last + 1) if lines[i].strip())
    seg.regions = [*seg.regions, Region(
        RegionKind.PREAMBLE, "an exporter's Key: value header lines above the conversation",
        lines=(seg.first_line + head, seg.first_line + last), content="\n".join(lines[head:last + 1]))]
    seg.front = {**seg.front, **{k: v for k, v in values.items() if k in ("title", "model") and k not in seg.front}}
    seg.start = min(seg.start + sum(len(ln) + 1 for ln in lines[:last + 1]), seg.end)
    seg.first_line += last + 1
    return seg


def _may_export(lines: list[str]) -> bool:
    """Whether the first labelled header may be an export header line: one with a time, or with a key
    that is no export key and a value that lists nothing (so cannot name two speakers), is not, and
    the session has none; only then are all its headers read."""
    for line in lines:
        m = HEADER.match(line)
        if m is None or (label := _speaker_label(m)) is None:
            continue
        return not (m["ts"] or m["iso"]) and (label.strip().lower() in EXPORT_KEYS
                                              or _LISTED.search(line[m.end():]) is not None)
    return False


def _export_line(label: str, value: str, speakers: set[str]) -> bool:
    """An exporter's header: a known key, or a label whose value names two or more speakers."""
    if label.strip().lower() in EXPORT_KEYS:
        return True
    named = {part.strip() for part in _LISTED.split(value) if part.strip()}
    return len(named & speakers) >= 2


def _front(front: dict[str, str]) -> tuple[ZoneInfo | None, datetime | None, Any]:
    """(zone, day of clock-only times, default model) from a session's front matter."""
    zone = ZoneInfo(front["timezone"]) if front.get("timezone") else None
    day = parse_iso(f"{front['date']} 00:00:00") if front.get("date") else None
    default_model = parse_model_spec(front["model"]) if front.get("model") else None
    return zone, day, default_model


def _clock_only(count: int) -> str:
    return f"{count} turns give a clock time without a date: no date set"


def _read_time(raw: str, day: datetime | None, zone: ZoneInfo | None) -> tuple[datetime | None, int]:
    """A stamp's time (ISO, or a clock on the front matter's day, in its zone), and 1 for a clock
    time with no day to put it on."""
    when, clock_only = parse_iso(raw), 0
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
    return when, clock_only


def _speaker_of(label: str, default_model) -> tuple[str, str, str, str | None]:
    """(speaker, role, kind, model as ``parsers.columns.MODEL``) of an accepted label (``Transcript._turn``)."""
    speaker, model = split_speaker(label)
    speaker = without_said(speaker)
    role = role_of(speaker)
    kind = {"system": "system", "tool": "tool_result"}.get(role, "message")
    if model is None and role == "assistant":
        model = default_model
    named = orjson.dumps([model.provider, model.name, model.version]).decode() if model is not None else None
    return speaker, role, kind, named


def _role_word(label: str) -> bool:
    return without_said(split_speaker(label)[0]).lower() in ROLE_WORDS


def _reading(labels: columns.Labels, day, zone, default_model) -> columns.Reading:
    return columns.Reading(labels.accepted(_role_word), labels.shapes, lambda lb: _speaker_of(lb, default_model),
                           lambda raw: _read_time(raw, day, zone)[0], lambda raw: _read_time(raw, day, zone)[1] == 1,
                           fast_times=zone is None, context=(zone, day, default_model))


def _absorb(session: ParsedSession, chunk: columns.Chunk) -> None:
    session.regions.extend(chunk.regions)
    session.shaped.extend(chunk.shaped)
    session.warnings.extend(chunk.warnings)


@dataclass(slots=True)
class TextSurvey(Survey):
    """What a transcript's headers tell of it as a whole (``Transcript.survey``): the labels that start
    turns are decided from all of them; the turns read and the clock-only times, carried from chunk to chunk."""

    lines: int
    counted: int
    turns: int
    chars: int
    labels: columns.Labels
    keys: Counter
    """(label, stamp shape) -> header lines"""
    first: tuple[str | None, str] | None
    """The first header's (label, stamp shape)."""
    segments: list | Exception | None = None
    """The sessions' segments with their front matter, of a text that starts its input (else None)."""
    why: str | None = None
    """Why the input cannot be cut at its turn starts, found in this text."""
    decided: columns.Reading | None = None
    turns_read: int = 0
    clock_only: list[int] | None = None
    """Each session's clock times without a day, read so far."""

    def then(self, more: TextSurvey) -> TextSurvey:
        """This survey, the next block's added (in place)."""
        self.lines = more.lines
        self.counted += more.counted
        self.turns += more.turns
        self.chars += more.chars
        self.labels.add(more.labels)
        self.keys.update(more.keys)
        self.first = self.first or more.first
        self.why = self.why or more.why
        self.segments = self.decided = None
        return self

    @property
    def plain(self) -> bool:
        """Whether the text is one session with no front matter or header lines of its own."""
        if self.segments is None:
            return True
        if isinstance(self.segments, Exception) or len(self.segments) != 1:
            return False
        seg, _ = self.segments[0]
        return seg.start == 0 and seg.end == self.chars and not seg.regions and not seg.front

    @property
    def reading(self) -> columns.Reading:
        """How the turns of a plain transcript are read: its accepted labels and stamp shapes."""
        if self.decided is None:
            self.decided = _reading(self.labels, None, None, None)
        return self.decided

    @property
    def whole_only(self) -> str | None:
        if self.why is not None:
            return f"{self.why}: the transcript is read whole"
        if self.kept_as_text() or self.turns != self.counted:
            return "a header that starts no turn: the transcript is read whole"
        return None

    def kept_as_text(self) -> int:
        """Header lines that would start no turn: neither an accepted label, nor a notice in a
        header's stamp shape, nor the first labelled header."""
        ok, shapes = self.reading.accepted, self.labels.shapes
        kept = sum(n for (label, shape), n in self.keys.items()
                   if not (label in ok if label is not None else shape in shapes))
        if self.first is not None and self.first[0] is not None and self.first[0] not in ok:
            kept -= 1
        return kept
