"""Discord messages copied from the Discord client (desktop or web) and pasted as text.

Shapes (one file is one paste, from one channel or DM, one session)::

    #release-planning                                  <- a title line: preamble region
    Maya Chen — 08/11/2023 1:30 PM                     <- author line: name, em dash, stamp
    the build is green                                 <- message lines
    [1:31 PM]                                          <- continuation stamp: a further message
    shipping it now (edited)                              by the same author (its own turn, B2)
    [1:32 PM]and one more, same line                   <- the stamp may share its line
    August 12, 2023                                    <- a date divider: boilerplate region
    ↪ @Maya Chen shipping it now                       <- reply context before an author line
    Deploy Bot BOT — Today at 5:03 AM                  <- a BOT or APP tag after the name

Stamps: ``Today at 5:03 AM`` / ``Yesterday at 17:03`` (and the localized words in ``RELATIVE``),
numeric dates in any order with ``/ . -`` and 2- or 4-digit years, an optional comma, 12 h or 24 h
clocks.

Decisions:
- Every author line and every continuation stamp is one turn (B2), in source order.
- Today/Yesterday have no absolute date (the day of copying is unknown): such a turn keeps
  ``time_raw`` (``Today at 5:03 AM``) and gets no time (a clock alone is not a date), with
  ``extra.relativeDay``; one warning counts them. Nothing is invented.
- A continuation stamp takes the date of its author line; a clock more than 12 hours earlier than
  the previous message's means midnight passed (23:50 then 00:10: next day); a smaller step back
  (13:30 then 13:00) stays on the author line's day, as nothing supports another date. Its
  ``time_raw`` is the stamp as written.
- A stamp line with no text under it (the message it stamps was an attachment or an embed the copy
  left out) is no turn: a declared boilerplate region.
- Day/month order of numeric dates is decided from the whole file (``_lines.date_order``); dotted
  dates without other evidence are day first (no locale writes month.day.year).
- ``BOT``/``APP`` tags: role ``other`` with ``extra.bot``; everyone else is a ``user``.
- A trailing ``(edited)`` marker (localized in ``EDITED``) is client furniture: removed from the
  text and kept as ``extra.edited``.
- A reply context line (``↪``/``╭``/``┌``, possibly drawn on with ``──``, then ``@name`` and a preview)
  directly above an author line belongs to that turn: ``extra.replyTo``/``replyPreview``, its line in
  the turn's span. A preview pasted without such a glyph cannot be told from the previous message's
  last line and stays there. The glyphs are an assumption: no public sample of copied client text
  with a reply was found; clients that mimic Discord's reply look draw ``┌──@name: text``.
- Lines before the first author line are a preamble region; date dividers are boilerplate regions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import polars as pl
import regex

from models.records import ParsedSession, ShapedLine, SourceText
from parsers.base import LineGrammar, Survey
from parsers.columns import TURN_SCHEMA, LineTable, first_line_of, rust_pattern
from parsers.linecount import LineCounts, LinePatterns, count
from parsers.registry import register
from parsers.sessions import file_name_id
from parsers.timeparse import clock_24h

from . import _discord_columns as columns
from ._lines import DateOrder, date_order, day_of, unreadable_times

RELATIVE: dict[str, tuple[int, tuple[str, ...]]] = {
    # word: (days before the day of copying, the words that join it to the clock)
    "Today": (0, ("at",)), "Yesterday": (1, ("at",)),
    "Heute": (0, ("um",)), "Gestern": (1, ("um",)),
    "Aujourd’hui": (0, ("à",)), "Aujourd'hui": (0, ("à",)), "Hier": (1, ("à",)),
    "Hoy": (0, ("a las", "a la")), "Ayer": (1, ("a las", "a la")),
    "Hoje": (0, ("às",)), "Ontem": (1, ("às",)),
    "Oggi": (0, ("alle",)), "Ieri": (1, ("alle",)),
    "Vandaag": (0, ("om",)), "Gisteren": (1, ("om",)),
}
EDITED = ("(edited)", "(bearbeitet)", "(modifié)", "(editado)", "(modificato)", "(bewerkt)", "(изменено)")
TAGS = ("BOT", "APP")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")

_SP = r"[ \t\u00a0\u202f]"
_CLOCK = rf"\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:{_SP}?[AaPp]\.?[Mm]\.?)?"
_REL = "|".join(regex.escape(w) for w in RELATIVE)
_JOIN = "|".join(sorted({regex.escape(j) for _, js in RELATIVE.values() for j in js}, key=len, reverse=True))
_STAMP = (rf"(?:(?P<rel>{_REL}){_SP}+(?:{_JOIN}){_SP}+(?P<clock>{_CLOCK})"
          rf"|(?P<date>\d{{1,4}}[./-]\d{{1,2}}[./-]\d{{1,4}}),?{_SP}+(?P<clock>{_CLOCK}))")
# A Markdown heading or quote (``### Alice — 2024-01-01 10:00``, an exporter's turn heading) is never
# an author line: the client copies a display name bare.
MARKDOWN = r"#{1,6}[ \t]|>[ \t]"
_NOT_MARKDOWN = rf"(?!{MARKDOWN})"
_AUTHOR_LINE = (rf"(?P<name>[^\n—–]{{1,80}}?)(?:{_SP}+(?P<tag>{'|'.join(TAGS)}))?{_SP}+[—–]{_SP}+"
                rf"(?P<stamp>{_STAMP}){_SP}*$")
AUTHOR_LIKE = rf"[^\n—–]{{1,80}}?{_SP}+[—–]{_SP}+(?:{_REL}|\d)"
_CSTAMP = rf"\[(?P<cstamp>{_CLOCK})\]{_SP}?"
_DIVIDER = rf"(?P<divider>(?:{'|'.join(MONTHS)}) \d{{1,2}}, \d{{4}}){_SP}*$"
_REPLY = rf"[↪╭┌][─━]*{_SP}*@?(?P<reply>[^\n]{{1,200}}?){_SP}*"
HEADER = regex.compile(rf"^(?:{_NOT_MARKDOWN}{_AUTHOR_LINE}|{_CSTAMP}|{_DIVIDER}|{_REPLY}(?=\n{AUTHOR_LIKE})$)",
                       regex.MULTILINE)
# The header without its two lookaheads, which Rust's regex lacks: an author line is never a Markdown
# heading or quote (no other alternative can start like one), and a reply context is followed by an
# author-like line (the last alternative): the columnar parse tests both on the lines themselves.
HEADER_NO_LOOKAHEAD = regex.compile(rf"^(?:{_AUTHOR_LINE}|{_CSTAMP}|{_DIVIDER}|{_REPLY}$)", regex.MULTILINE)
_RUST = {"header": rust_pattern(HEADER_NO_LOOKAHEAD),
         "author": rust_pattern(regex.compile(rf"^{_AUTHOR_LINE}", regex.MULTILINE)),
         "reply": rust_pattern(regex.compile(rf"^{_REPLY}$", regex.MULTILINE)),
         "markdown": rust_pattern(regex.compile(rf"^(?:{MARKDOWN})", regex.MULTILINE)),
         "author_like": rust_pattern(regex.compile(rf"^{AUTHOR_LIKE}", regex.MULTILINE))}
_CLOCK_PARTS = regex.compile(
    rf"(?P<h>\d{{1,2}}):(?P<mi>\d{{2}})(?::(?P<s>\d{{2}}))?(?:{_SP}?(?P<ampm>[AaPp]\.?[Mm]\.?))?")
# The independent counter's own idea of a message start, line by line.
_COUNT_AUTHOR = regex.compile(rf"^{_NOT_MARKDOWN}[^\n]+?{_SP}[—–]{_SP}(?:{_REL}|\d{{1,4}}[./-])")
_COUNT_STAMP = regex.compile(r"^\[\d{1,2}:\d\d")
_COUNT_REPLY = regex.compile(r"^[↪╭┌]")


def _clock(text: str) -> timedelta | None:
    m = _CLOCK_PARTS.fullmatch(text)
    hour = clock_24h(int(m["h"]), m["ampm"]) if m else None
    if hour is None or hour > 23 or int(m["mi"]) > 59 or int(m["s"] or 0) > 59:
        return None
    return timedelta(hours=hour, minutes=int(m["mi"]), seconds=int(m["s"] or 0))


DETECT_LINES = LinePatterns(2000, {
    "author": regex.compile(rf"^{_AUTHOR_LINE}", regex.MULTILINE),
    "stamp": _COUNT_STAMP,
}, unless={"author": regex.compile(rf"^(?:{MARKDOWN})", regex.MULTILINE)})
"""Detection's line patterns: HEADER's first alternative, an author line (its negative lookahead as the
lines the Markdown test takes), and the independent counter's continuation stamps."""


def explained_share(sample: str) -> float:
    """Author lines, continuation stamps, dividers and every line after the first author line
    (message lines) over the sample's non-blank lines; 0 when author lines are too rare to make
    the text a Discord paste (under 5% of the lines)."""
    return counted_share(count(sample, DETECT_LINES))


def counted_share(counts: LineCounts) -> float:
    """``explained_share`` from the counts of ``DETECT_LINES``."""
    heads, first = counts.hits["author"], counts.first["author"]
    if not heads or first is None or heads + counts.hits["stamp"] < 0.05 * counts.lines:
        return 0.0
    return (counts.lines - first) / counts.lines


def _under_reply(line: int) -> str:
    return f"the author line of a message whose reply context at line {line} opens it"


@register
class DiscordText(LineGrammar):
    name = "discord-text"
    detect_needs = ("—", "–")  # an author line's dash
    version = "1"
    description = "Discord messages copied from the client as text (author lines, [time] continuations)"
    turn_shape = rf"^(?:{_NOT_MARKDOWN}{_AUTHOR_LINE}|{_CSTAMP})"  # an author line or a clock-stamped message
    example = "Maya Chen — 08/11/2023 1:30 PM"

    detect_lines = DETECT_LINES

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample)

    def detect_counted(self, sample: str, name: str, counts: LineCounts) -> float:
        return counted_share(counts)

    @staticmethod
    def starts(lines: pl.Series) -> pl.Series:
        """Author lines and reply-context-shaped lines, an author line right under such a line not: a chunk
        cut there keeps a reply context with its turn (``PasteSurvey.whole_only``: one that is none)."""
        return columns.starts(lines, _RUST)

    def survey(self, sources: list[SourceText], table: LineTable, first_lines: list[int]) -> list[PasteSurvey]:
        """Each text's author lines (their names and runs of dates: the whole input's), its flagged lines,
        its reply contexts with no author line under them, and its text for the independent count."""
        found = columns.survey(table, _heads(table), self.starts(table.lines))
        return [PasteSurvey(first_lines[i] - 1 + table.bounds[i + 1] - table.bounds[i], **found[i],
                            text=table.texts[i]) for i in range(len(table))]

    def sessions(self, source: SourceText, survey: PasteSurvey) -> list[ParsedSession]:
        sid = file_name_id(source.name)
        session = ParsedSession(sid, "file-name" if sid else "none", [], raw=source.text)
        session.lines = (1, survey.lines)
        _note_order(session, survey.order, survey.runs)
        return [session]

    def frames(self, sources: list[SourceText], table: LineTable, surveys: list[PasteSurvey],
               sessions: list[list[ParsedSession]], first_lines: list[int]) -> list[list[columns.Chunk]]:
        """Each text's turn frame (``_discord_columns``), its dates in its input's day/month order, its reply
        contexts matched against its input's speakers; its regions and reply lines into its session, its time
        notes onto its survey (the chunks of a streamed input come in order)."""
        shift = first_line_of(first_lines) - 1
        heads = _heads(table)
        found = columns.paste(table, heads, EDITED)
        frame = found.frame
        time, relative, unreadable = columns.times(frame, table, [s.order.order for s in surveys], day_of, _clock)
        extra, starts = columns.extras(frame, columns.replies(heads, table, frame), [s.speakers for s in surveys])
        shaped: list[list[ShapedLine]] = [[] for _ in sources]  # a turn a reply context opens
        for src, line, start in frame.select("src", "line_start", starts.alias("start")).filter(
                pl.col("line_start") != pl.col("start")).iter_rows():
            shaped[src].append(ShapedLine(line + shift, _under_reply(start + shift)))
        cuts = table.split(frame["at"])
        frame = frame.with_columns(time=time, extra=extra, kind=pl.lit("message", pl.Utf8), line_start=starts + shift,
                                   line_end=pl.col("line_end") + shift).select(list(TURN_SCHEMA))
        out: list[list[columns.Chunk]] = []
        for i, mine in enumerate(sessions):
            if not mine:
                out.append([])
                continue
            (session,) = mine
            session.regions.extend(replace(r, lines=(r.lines[0] + shift, r.lines[1] + shift))
                                   for r in found.regions[i])
            session.shaped.extend(shaped[i])
            surveys[i].noted(relative[i], unreadable[i], found.continued[i])
            out.append([columns.Chunk(frame.slice(cuts[i], cuts[i + 1] - cuts[i]))])
        return out

    def conclude(self, sessions: list[ParsedSession], source: SourceText, survey: PasteSurvey, chunks: list) -> None:
        (session,) = sessions
        _time_notes(session, survey.relative, survey.unreadable, survey.continued)

    def count_turns(self, raw: Any) -> int:
        """Author lines, and stamp lines with text of their own (on the line, or the next non-blank line
        when that is no author or stamp line)."""
        return census(raw).total


def _heads(table: LineTable):
    """The header lines of a table (``_discord_columns.headers``), found once per table."""
    if "discord" not in table.memo:
        table.memo["discord"] = columns.headers(table, _RUST["header"], _RUST["markdown"], _RUST["author_like"])
    return table.memo["discord"]


@dataclass(frozen=True, slots=True)
class Census:
    """The independent count of a piece of a paste (``count_turns``'s rule): its turns, whether its last
    stamp line still waits for the next non-blank line (``pending``) or for the line under a reply context
    (``held``), what its first non-blank line is and whether its first line is an author line."""

    count: int = 0
    pending: bool = False
    lead: str | None = None
    """"head" (an author or stamp line), "text", "reply" (a reply context right above an author line), "open"
    (a reply context that is the piece's last line: the next line decides), or None (blank throughout)."""
    held: bool = False
    """A stamp waits, and the piece's last line is a reply context: an author line under it makes the context
    that message's, and the stamp no turn; anything else makes the context the stamp's text."""
    first_author: bool = False
    some: bool = False
    """The piece has a line."""

    def then(self, more: Census) -> Census:
        if not more.some:
            return self
        count, pending, held = self.count + more.count, more.pending, more.held
        if self.held:  # decided by the next piece's first line
            count += not more.first_author
        elif self.pending:
            count += more.lead == "text"
            if more.lead == "open":
                pending, held = True, True
            elif more.lead is None:
                pending = True
        lead = self.lead
        if lead == "open":
            lead = "reply" if more.first_author else "text"
        return Census(count, pending, lead or more.lead, held, self.first_author if self.some else more.first_author,
                      True)

    @property
    def total(self) -> int:
        """The count of a whole paste: a reply context on its last line is the waiting stamp's text."""
        return self.count + self.held


def census(text: str) -> Census:
    """``count_turns``'s rule over a piece of a paste: author lines, and stamp lines with text of their own (on
    the line, or the next non-blank line when that is no author or stamp line, nor a reply context right above
    an author line)."""
    lines = text.split("\n")
    if text.endswith("\n") or not text:
        lines.pop()
    count, pending, held, lead = 0, False, False, None
    authors = [bool(_COUNT_AUTHOR.match(line)) for line in lines]
    for k, line in enumerate(lines):
        if held:  # the reply context above: this author line's, else the stamp's text
            count += not authors[k]
            pending = held = False
        if not line.strip():
            continue
        author = authors[k]
        stamp = not author and bool(_COUNT_STAMP.match(line))
        reply = not (author or stamp) and bool(_COUNT_REPLY.match(line))
        if reply and lead is None:
            lead = "open" if k + 1 == len(lines) else "reply" if authors[k + 1] else "text"
        lead = lead or ("head" if author or stamp else "text")
        if reply and pending:
            held = True
            continue
        count += pending and not (author or stamp)
        pending = stamp and not line.partition("]")[2].strip()
        count += author or (stamp and not pending)
    return Census(count, pending or held, lead, held, bool(lines) and authors[0], bool(lines))


@dataclass(slots=True)
class PasteSurvey(Survey):
    """What a Discord paste's author lines tell of it as a whole (``DiscordText.survey``); the time notes of
    the chunks read so far (``DiscordText.frames``)."""

    lines: int
    turns: int = 0
    names: set[str] = field(default_factory=set)
    runs: list[tuple[str, int]] = field(default_factory=list)
    """(date, index of its author line) for each run of equal dates of the author lines."""
    authors: int = 0
    why: str | None = None
    tail_reply: bool = False
    """The piece's last line is reply-context-shaped: the next piece's first line must be an author line."""
    head_author: bool = False
    text: str | None = None
    """The piece's text, until its turns are counted (``census``: only when asked)."""
    count: Census | None = None
    relative: int = 0
    unreadable: int = 0
    continued: bool = False
    decided: DateOrder | None = None

    def then(self, more: PasteSurvey) -> PasteSurvey:
        """This survey, the next block's added (in place)."""
        if self.tail_reply and not more.head_author:
            self.why = self.why or columns.NO_REPLY
        joined = self.tail_reply and more.head_author  # its author line is flagged in its own block only
        self.why = self.why or more.why
        self.lines, self.tail_reply = more.lines, more.tail_reply
        self.count, self.text = self.census().count.then(more.census().count), None
        runs = [(d, i + self.authors) for d, i in more.runs]
        if self.runs and runs and runs[0][0] == self.runs[-1][0]:
            runs = runs[1:]  # the same run goes on across the block boundary
        self.runs.extend(runs)
        self.authors += more.authors
        self.turns += more.turns - joined
        self.names |= more.names
        self.decided = None
        return self

    def census(self) -> PasteSurvey:
        if self.count is None:  # counted now, on this thread
            self.count, self.text = census(self.text or ""), None
        return self

    @property
    def counted(self) -> int:
        return self.census().count.total

    @property
    def whole_only(self) -> str | None:
        return self.why or (columns.NO_REPLY if self.tail_reply else None)

    @property
    def order(self) -> DateOrder:
        """The day/month order, decided from every run of the author lines' dates."""
        if self.decided is None:
            self.decided = _order(self.runs)
        return self.decided

    @property
    def speakers(self) -> list[str]:
        """The input's speakers, longest first (a reply context names the longest that fits)."""
        return sorted(self.names, key=lambda n: (-len(n), n))

    def noted(self, relative: int, unreadable: int, continued: bool) -> None:
        self.relative += relative
        self.unreadable += unreadable
        self.continued = self.continued or continued


def _order(runs: list[tuple[str, int]]) -> DateOrder:
    """The day/month order of a whole paste, from the runs of its author lines' dates."""
    order = date_order(runs)
    if order.basis in ("none", "changes", "forward") and runs and all("." in d for d, _ in runs):
        order = order._replace(order="dmy", evidence="dotted dates, written day first in every locale that uses"
                               f" them ({runs[0][0]})", basis="dots")
    return order


def _note_order(session: ParsedSession, order: DateOrder, runs: list[tuple[str, int]]) -> None:
    if runs:
        session.assumptions.append(f"date order {'/'.join(order.order.upper())}: {order.evidence}")
        if order.basis in ("none", "contradiction"):
            session.warnings.append(f"date order uncertain, {'/'.join(order.order.upper())} used: {order.evidence}")


def _time_notes(session: ParsedSession, relative: int, unreadable: int, continued: bool) -> None:
    if relative:
        session.warnings.append(unreadable_times(relative, "Today/Yesterday: relative to the unknown day of"
                                                 " copying, so no date"))
    if unreadable:
        session.warnings.append(unreadable_times(unreadable, "not a calendar date or clock time"))
    if continued:
        session.assumptions.append("a [time] continuation stamp takes the date of its author line")

