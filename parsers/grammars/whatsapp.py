"""WhatsApp text exports (Android and iOS), one session per file; a zip export's media beside it.

Dialects are data: ``_whatsapp_data.TEMPLATES`` lists the header templates (whatstk-style strings,
about fifty: every date order, ``/ . -`` separators, 2- and 4-digit years, 12 h clocks with ``AM``,
``a.m.``, ``a. m.``, ``午前``/``午後``, ``오전``/``오후``, ``ص``/``م``, Finnish ``klo`` and dotted clocks,
trailing dots, bracketed iOS and dash Android forms) and ``_whatsapp_headers`` compiles them into one
factored pattern, so dialects may mix within a file. NBSP, NNBSP and the invisible U+200E / U+200F
marks are accepted around header parts and stripped from the raw stamp; message text is kept as it
is except one leading U+200E (iOS puts one before placeholders and notices).

Decisions:
- Day/month order is decided once for the whole file, from every header: a field above 12 is the
  day; when no field exceeds 12, the field that changes more often between consecutive messages is
  the day (days change more often than months); with no evidence at all, day first, with a warning.
  The decision and its evidence (value, line) go to session.assumptions; dates that contradict
  each other (both fields above 12 somewhere) are decided by the majority, with a warning. A date
  whose first field is a year is year-first whatever the file decides; a date impossible in the
  file's order but valid in the other (a second dialect in the same file) is read in the other,
  with an assumption.
- An hour above 12 ignores the meridiem (``13:37:00 p.m.`` occurs in real exports); hour 0 with a
  meridiem is the 0-11 clock (``午前0:08``, ``00:08 a. m.``): 00 after AM, 12 after PM.
- ``~ Name`` (a tilde and a space before the name) is WhatsApp's mark for a participant who is not in
  the exporter's contacts, shown by their own profile name: the speaker is the name without the mark,
  and the turn's ``extra.profileName`` is true (the same name without the mark may be a contact).
- System notices are turns (B1) with speaker "System": lines with no ``Name: `` (``You were added``,
  ``+12 345 578 created group "X"``, the e2e notice), lines whose ``Name`` part holds a notice phrase
  (``Ann changed the subject to "Plans: v2"``), and notices that look authored (``Group: Messages and
  calls are end-to-end encrypted...``) or iOS group events (``Group: \u200eAnn added Bob``), whose
  label is kept as ``sourceLabel``. The person named before the notice phrase is the ``actor``
  (best effort). Notice, placeholder and attachment texts are data per language
  (``_whatsapp_data.NOTICES``: en, de, es, fr, pt, it, nl, ru, tr, ar, ja).
- Media placeholders (``image omitted``, ``<Media omitted>``, in any case) are their author's turns with kind
  ``media``. An attachment (``<attached: 00000012-PHOTO-...jpg>``, ``IMG-...jpg (file attached)`` and
  their localized forms) keeps its file name in ``extra.attachment``; when ingest lists the files
  beside the chat (``SourceText.siblings``: its folder or zip), ``extra.attachmentPresent`` says
  whether the file is there, ``meta.attachments`` sums it up and missing files are one warning.
  A chat read on its own says ``checked: false``.
- Lines before the first header (not part of any message) are kept in meta as the preamble and
  declared as a preamble region.
- Detection returns the share of non-blank lines explained (headers and their continuation lines);
  ``[2019-12-24 11:23:45] Name:`` alone, with none of WhatsApp's own shapes, is also a generic
  transcript and is discounted below the threshold.

Speed: a 100 MB export has a million messages, and the parse is one pass over them. The header
pattern also captures the author and the first line; the scan jumps from line end to line end
(``parsers.engine.scan``); times come from a per-date and a per-clock cache in the date order the
first 64 KiB (or the first day above 12 anywhere) suggest, and are shifted once at the end in the
rare file whose whole run of dates decides otherwise; author checks are cached per distinct author;
the cyclic garbage collector is paused while the turns are built (``parsers.memory.paused_gc``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from parsers.base import LineGrammar, Survey
from parsers.columns import LineTable, first_line_of
from parsers.engine import line_patterns
from parsers.linecount import LineCounts, LinePatterns, count
from parsers.registry import register
from parsers.sample import nonblank
from parsers.sessions import file_name_id

from . import _whatsapp_columns as columns
from ._lines import DateOrder, date_order, day_of, drop_final_newline, line_count, unreadable_times
from ._whatsapp_data import NOTICES
from ._whatsapp_headers import AUTHOR_MAX, HEADER_BODY, HEADER_LINE, MARKS, SP, clock_delta

_MARKS = MARKS
_SP = SP
# The author is everything before the first ': ' within AUTHOR_MAX characters; the rest of the line is text.
_REST = rf"(?:(?P<author>[^\n]{{1,{AUTHOR_MAX}}}?):(?: (?P<lrm>\u200e)?|(?=\n)|\Z))?(?P<text>[^\n]*)"
FIRST, HEADER = line_patterns(HEADER_BODY + _REST)
# The independent counter's own, looser idea of a message start: a line that starts with a date
# and, within a few non-digit characters (a comma, 'klo', a meridiem word), a clock time, closed
# within a few more (seconds, a meridiem) by ``]`` or a dash: a line of text that starts with a date
# and a time ("12/03/2019 10:00 works?") starts no message.
_LOOSE_DATE = rf"[{_MARKS}]*\[?[{_MARKS}]*\d{{1,4}}(?:[./-]|\. )\d{{1,2}}(?:[./-]|\. )\d{{1,4}}"
_LOOSE_FIRST, _LOOSE = line_patterns(
    rf"{_LOOSE_DATE}[^\n\d]{{1,8}}?\d{{1,2}}[:.]\d{{2}}(?:[:.]\d{{2}})?[^\n\d\]]{{0,12}}?(?:\]|[-–](?: |(?=\n)|\Z))")


def counted_messages(text: str) -> int:
    """The independent count of a text's messages: the lines that start with the loose stamp."""
    return (1 if _LOOSE_FIRST.match(text) else 0) + len(_LOOSE.findall(text))


def _phrases(key: str) -> tuple[str, ...]:
    return tuple(p for lang in NOTICES.values() for p in lang.get(key, ()))


def _form(template: str, i: int) -> str:
    """An attachment form ('<attached: {file}>') as a regex with the file name in group f<i>."""
    head, _, tail = template.partition("{file}")
    return re.escape(head) + rf"(?P<f{i}>[^\n<>]+?)" + re.escape(tail)


_LEADING = _phrases("leading")
_E2E = _phrases("e2e")
_EVENT = re.compile("|".join(re.escape(p) for p in _phrases("events")))
# '~ Name': WhatsApp's mark for someone not in the exporter's contacts, named by their own profile.
_PROFILE_NAME = re.compile(rf"~{SP}+(?=\S)")
PROFILE_MARK = "~"
_AUTHORED_EVENT = re.compile("|".join(re.escape(p) for p in _phrases("authored")))
_MEDIA = frozenset(_phrases("media"))
_MEDIA_FOLDED = frozenset(p.casefold() for p in _MEDIA)
"""Placeholders match in any case (``<media omitted>`` is ``<Media omitted>``)."""
_ATTACHED = re.compile("|".join(_form(t, i) for i, t in enumerate(_phrases("attached"))))
_MEDIA_RE = re.compile("|".join(re.escape(t).replace(re.escape("{text}"), r"[^\n]+").replace(r"\ ", " \u200e?")
                                for t in _phrases("media_forms")))
# Cheap tests that a first line may be an attachment or a media form (most messages are neither).
_ATTACHED_LAST = frozenset(t[-1] for t in _phrases("attached"))
_MEDIA_FORM_ENDS = tuple(t.split("{text}")[1].strip() for t in _phrases("media_forms"))


def is_media(first: str) -> bool:
    """A media placeholder (``image omitted``, ``<Media omitted>``), in any case."""
    return first in _MEDIA or first.casefold() in _MEDIA_FOLDED


def actor_of(line: str) -> str | None:
    """The person named before a notice phrase of an author-less line, or None."""
    if line.startswith(_LEADING) or line.startswith(_E2E):
        return None
    m = _EVENT.search(line)
    if m is None or m.start() == 0 or m.start() > AUTHOR_MAX:
        return None
    return line[: m.start()].strip() or None


def _swapped(runs: list[tuple[str, int]], order: str) -> list[tuple[str, int]]:
    """(date, index of its first turn) of the dates read in the other day/month order."""
    return [(d, i) for d, i in runs if day_of(d, order, strict=True) is None and day_of(d, order) is not None]


_clock = clock_delta


def chat_title(name: str) -> str | None:
    """``WhatsApp Chat with X.txt`` / ``WhatsApp Chat - X.txt`` (or a ``_chat.txt`` in such a folder) -> X."""
    parts = PurePosixPath(name).parts
    for part in reversed(parts):
        for prefix in ("WhatsApp Chat with ", "WhatsApp Chat - "):
            if part.startswith(prefix):
                return re.sub(r"\.(?:txt|zip)$", "", part[len(prefix):]) or None
    return None


SAMPLE_LINES = 400


DETECT_LINES = LinePatterns(SAMPLE_LINES, {"head": HEADER_LINE})
"""Detection's line pattern: a line that ``FIRST`` matches (a header; what follows a header is optional)."""


def _native(sample: str, name: str) -> bool:
    """Whether a sample shows WhatsApp's own shapes, not only a header a plain transcript also has.

    ``[2019-12-24 11:23:45] Name:`` is also a generic transcript: WhatsApp's own marks are a day or
    month first, a dash form, a meridiem, a localized connector, its invisible marks, its encryption
    notice and media placeholders, or its file names. The headers are read here, for a sample that has
    some and no mark in its name or text."""
    if "whatsapp" in name.lower() or PurePosixPath(name).name == "_chat.txt" or "\u200e" in sample:
        return True
    for ln in nonblank(sample, SAMPLE_LINES):
        if (m := FIRST.match(ln)) is None:
            continue
        if len(m["d1"]) <= 2 or not m["open"] or m["mb"] or m["ma"] or "-" not in m["date"]:
            return True
        first = m["text"]  # an author-less "X joined ..." is a transcript's notice too: not evidence
        if first.startswith(_E2E) or is_media(first):
            return True
    return False


def explained_share(sample: str, name: str) -> float:
    """The share of the sample's non-blank lines WhatsApp explains: its headers, and the lines that
    follow a header (continuations of a multi-line message). Continuations only count when headers
    are frequent enough to make the text a chat (a tenth of the lines). Without WhatsApp's own shapes
    (``_native``) the share is discounted below the detection threshold: a generic transcript wins."""
    return counted_share(sample, name, count(sample, DETECT_LINES))


def counted_share(sample: str, name: str, counts: LineCounts) -> float:
    """``explained_share`` from the counts of ``DETECT_LINES``."""
    heads, first = counts.hits["head"], counts.first["head"]
    if not heads or first is None:
        return 0.0
    explained = counts.lines - first if heads >= 0.1 * counts.lines else heads
    share = explained / counts.lines
    return share if _native(sample, name) else share * 0.45


@register
class WhatsApp(LineGrammar):
    name = "whatsapp"
    version = "3"
    description = "WhatsApp chat export (.txt, or a zip with its media), Android and iOS, every header dialect"
    example = "12/24/19, 11:23 - John Doe: Lorem ipsum dolor sit amet."
    turn_shape = "^" + HEADER_BODY  # every template's stamp: each such line starts a message

    detect_lines = DETECT_LINES

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample, name)

    def detect_counted(self, sample: str, name: str, counts: LineCounts) -> float:
        return counted_share(sample, name, counts)

    starts = staticmethod(columns.header_lines)

    def survey(self, sources: list[SourceText], table: LineTable, first_lines: list[int]) -> list[DateSurvey]:
        """Each text's headers: their runs of equal dates (the day/month order is decided from the whole
        input's), its independent turn count, its first header's dialect and its line count."""
        at = self.starts(table.lines).arg_true()
        dates = columns.dates_at(table.lines, at)
        cuts = table.split(at)
        runs = columns.date_runs_by_text(dates, table.source.gather(at), cuts)
        rows = at.to_list()
        out = []
        for i, source in enumerate(sources):
            base = first_lines[i] - table.bounds[i]
            found = DateSurvey(base + table.bounds[i + 1] - 1, cuts[i + 1] - cuts[i], table.texts[i],
                               reader=_Reader(source.siblings))
            if found.turns:
                found.dialect = "ios" if table.lines[rows[cuts[i]]].lstrip(MARKS).startswith("[") else "android"
                found.runs = runs[i]
                found.run_lines = {k: base + rows[cuts[i] + k] for _, k in runs[i]}
            out.append(found)
        return out

    def sessions(self, source: SourceText, survey: DateSurvey) -> list[ParsedSession]:
        session = _session(source, source.text)
        session.lines = (1, survey.lines)
        if survey.dialect:
            session.meta["dialect"] = survey.dialect
        return [session]

    def frames(self, sources: list[SourceText], table: LineTable, surveys: list[DateSurvey],
               sessions: list[list[ParsedSession]], first_lines: list[int]) -> list[list[columns.Chunk]]:
        """Each text's turn frame, its dates read in its input's day/month order; the preamble (the
        lines before an input's first header, or all of a headerless input) into its session."""
        heads = columns.headers(table.lines, _REST)
        at = heads.ok.arg_true()
        cuts = table.split(at)
        chunks = columns.turn_frames(table, heads, [v.order.order for v in surveys], [v.reader for v in surveys],
                                     first_line_of(first_lines))
        for i, (session,) in enumerate(sessions):
            if cuts[i + 1] > cuts[i] and first_lines[i] == 1:
                first = int(at[cuts[i]]) - table.bounds[i]
                _preamble(session, "\n".join(table.lines_of(i).head(first).to_list()) + ("\n" if first else ""), first)
            elif surveys[i].turns == 0:  # no header anywhere: the whole text is the preamble
                _headerless(session, session.meta.get("preamble", "") + "\n".join(table.lines_of(i).to_list()) + "\n")
        return [[chunk] for chunk in chunks]

    def conclude(self, sessions: list[ParsedSession], source: SourceText, survey: DateSurvey, chunks: list) -> None:
        (session,), (chunk,) = sessions, chunks
        _conclude(session, survey.runs, survey.order, chunk.bad, survey.run_lines.__getitem__)
        _attachments(session, chunk.extras, source.siblings)

    def count_turns(self, raw: Any) -> int:
        return counted_messages(raw)


@dataclass(slots=True)
class DateSurvey(Survey):
    """What a WhatsApp input's headers tell of it as a whole (``WhatsApp.survey``)."""

    lines: int
    turns: int
    text: str | None
    """The piece's text, until its turns are counted (``counted``: only when asked)."""
    count: int | None = None
    reader: Any = None
    """How the flagged rows of every chunk are read (``_Reader``: the input's siblings, for attachments)."""
    dialect: str | None = None
    runs: list[tuple[str, int]] = field(default_factory=list)
    """(date, index of its first turn) for each run of equal dates."""
    run_lines: dict[int, int] = field(default_factory=dict)
    """The line of each run's first turn."""
    decided: DateOrder | None = None

    def then(self, more: DateSurvey) -> DateSurvey:
        """This survey, the next block's added (in place)."""
        self.lines = more.lines
        self.count, self.text = self.counted + more.counted, None
        if more.turns:
            self.dialect = self.dialect or more.dialect
            runs = [(d, i + self.turns) for d, i in more.runs]
            if self.runs and runs and runs[0][0] == self.runs[-1][0]:
                runs = runs[1:]  # the same run goes on across the block boundary
            for d, i in runs:
                self.run_lines[i] = more.run_lines[i - self.turns]
                self.runs.append((d, i))
            self.turns += more.turns
        self.decided = None
        return self

    @property
    def counted(self) -> int:
        return self.census().count

    def census(self) -> DateSurvey:
        if self.count is None:  # counted now, on this thread
            self.count, self.text = counted_messages(self.text), None
        return self

    @property
    def order(self) -> DateOrder:
        """The day/month order, decided from every run of dates (``_lines.date_order``)."""
        if self.decided is None:
            self.decided = date_order(self.runs)
        return self.decided

    @property
    def apart(self) -> bool:
        return True


def _session(source: SourceText, text: str) -> ParsedSession:
    session_id = file_name_id(source.name)
    session = ParsedSession(session_id, "file-name" if session_id else "none", [], raw=text,
                            title=chat_title(source.name))
    session.lines = (1, line_count(text))
    return session


def _headerless(session: ParsedSession, text: str) -> None:
    """A file with no message header: all of it is a preamble."""
    if text.strip():
        session.meta["preamble"] = drop_final_newline(text)
        session.regions.append(Region(RegionKind.PREAMBLE, "no message header in the file",
                                      lines=session.lines))


def _conclude(session: ParsedSession, runs: list[tuple[str, int]], decided: tuple, bad: int,
              line_of: Callable[[int], int]) -> None:
    """What the whole file decided, in the session's assumptions and warnings (``line_of(i)``: the
    first line of turn i)."""
    order, evidence, at, basis = decided
    where = f" (line {line_of(at)})" if at is not None else ""
    session.assumptions.append(f"date order {'/'.join(order.upper())}: {evidence}{where}")
    if basis in ("contradiction", "none"):
        session.warnings.append(f"date order uncertain, {'/'.join(order.upper())} used: {evidence}")
    if swapped := _swapped(runs, order):
        date, i = swapped[0]
        session.assumptions.append(
            f"{len(swapped)} date{'s' if len(swapped) != 1 else ''} impossible in {'/'.join(order.upper())}"
            f" read in the other day/month order (another dialect in the same file), first {date}"
            f" (line {line_of(i)})")
    if bad:
        session.warnings.append(unreadable_times(bad, "not a calendar date or clock time"))


class _Reader:
    """The Python parse's reading of the rows the columnar parse flags (``_whatsapp_columns``)."""

    def __init__(self, siblings: tuple[str, ...]) -> None:
        self.names = {PurePosixPath(s).name for s in siblings} if siblings else None

    def flag(self, h):
        return columns.flagged(h, lambda a: _AUTHORED_EVENT.search(a) is not None or a.startswith(PROFILE_MARK),
                               _ATTACHED_LAST, _MEDIA_FOLDED, _E2E, _MEDIA_FORM_ENDS)

    def __call__(self, line: str, body: str) -> Turn:
        m = FIRST.match(line)
        if m is None:
            raise ValueError(f"the Rust header pattern read a header the Python one does not: {line[:80]!r}")
        author, first = m["author"], m["text"]
        if author is None:
            actor = actor_of(first)
            return Turn("System", "system", body, kind="system", extra={"actor": actor} if actor else None)
        notice = _AUTHORED_EVENT.search(author) is not None
        return authored(m, line, author, first, body[len(first):], body, None, None, None, notice)

    def mark(self, extras: list[dict | None]) -> None:
        if self.names is not None:
            _mark_present([e for e in extras if e], self.names)


def _preamble(session: ParsedSession, preamble: str, lines: int) -> None:
    """Text before the first header (``lines`` of it): kept in meta, declared when not blank."""
    if not lines:
        return
    session.meta["preamble"] = drop_final_newline(preamble)
    if preamble.strip():
        session.regions.append(Region(RegionKind.PREAMBLE, "text before the first message header (an exporter's"
                                      " title or note, nobody's message)", lines=(1, lines)))


def authored(m: re.Match, text: str, author: str, first: str, cont: str, content: str, when, raw: str,
             lines: tuple[int, int], notice: bool) -> Turn:
    """``_special``'s turn, its author read without WhatsApp's profile-name mark (``~ Name``)."""
    profile = None if notice else _PROFILE_NAME.match(author)
    if profile is None:
        return _special(m, text, author, first, cont, content, when, raw, lines, notice)
    turn = _special(m, text, author[profile.end():], first, cont, content, when, raw, lines, False)
    if turn.role == "user":
        turn.extra = {**(turn.extra or {}), "profileName": True}
    return turn


def _special(m: re.Match, text: str, author: str, first: str, cont: str, content: str, when, raw: str,
             lines: tuple[int, int], notice: bool) -> Turn:
    """A turn whose header has an author but which may be a notice, a placeholder or an attachment."""
    if notice:
        full = text[m.start("author"):m.end()] + cont
        actor = actor_of(full)
        return Turn("System", "system", full, when, raw, None, "system", lines,
                    extra={"actor": actor} if actor else None)
    if first.startswith(_E2E):
        return Turn("System", "system", content, when, raw, None, "system", lines, extra={"sourceLabel": author})
    attached = _ATTACHED.fullmatch(first) if first[-1:] in _ATTACHED_LAST else None
    if attached is not None:
        kind = "message" if cont else "media"
        return Turn(author, "user", content, when, raw, None, kind, lines,
                    extra={"attachment": attached[attached.lastgroup].strip()})
    if not cont and (is_media(first) or _MEDIA_RE.fullmatch(first)):
        return Turn(author, "user", content, when, raw, None, "media", lines)
    if m["lrm"] and (actor := actor_of(first)):
        # iOS writes group events as '<group>: \u200e<actor> <event>'
        return Turn("System", "system", content, when, raw, None, "system", lines,
                    extra={"sourceLabel": author, "actor": actor})
    return Turn(author, "user", content, when, raw, None, "message", lines)


def _mark_present(extras: list[dict], names: set[str]) -> None:
    """Say of each attachment whether its file is among the names beside the chat."""
    for extra in extras:
        if "attachment" in extra:
            extra["attachmentPresent"] = extra["attachment"] in names


def _attachments(session: ParsedSession, extras: list[dict], siblings: tuple[str, ...]) -> None:
    """Record each attachment the chat references as present or missing among the files beside it
    (``extras``: the turns' extra fields, in order).

    With no sibling list (a chat file read on its own) nothing can be checked, and the meta says so."""
    referenced = [e for e in extras if "attachment" in e]
    if not referenced:
        return
    if not siblings:
        session.meta["attachments"] = {"referenced": len(referenced), "checked": False}
        return
    if "attachmentPresent" not in referenced[0]:
        _mark_present(referenced, {PurePosixPath(s).name for s in siblings})
    missing = [e["attachment"] for e in referenced if not e["attachmentPresent"]]
    session.meta["attachments"] = {"referenced": len(referenced), "present": len(referenced) - len(missing),
                                   "missing": missing[:20], "checked": True}
    if missing:
        listed = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        session.warnings.append(f"{len(missing)} attached file{'s' if len(missing) != 1 else ''} referenced in"
                                f" the chat {'are' if len(missing) != 1 else 'is'} not beside it: {listed}")

