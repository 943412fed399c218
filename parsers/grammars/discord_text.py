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

from datetime import timedelta
from typing import Any

import polars as pl
import regex

from models.records import ParsedSession, Region, ShapedLine, SourceText
from models.settings import Settings
from parsers.base import Grammar
from parsers.columns import TURN_SCHEMA, LineTable, own, rust_pattern
from parsers.linecount import LineCounts, LinePatterns, count
from parsers.registry import register
from parsers.sessions import file_name_id
from parsers.timeparse import clock_24h

from . import _discord_columns as columns
from ._lines import DateOrder, date_order, day_of, line_count, unreadable_times

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
         "markdown": rust_pattern(regex.compile(rf"^(?:{MARKDOWN})", regex.MULTILINE)),
         "author_like": rust_pattern(regex.compile(rf"^{AUTHOR_LIKE}", regex.MULTILINE))}
_CLOCK_PARTS = regex.compile(
    rf"(?P<h>\d{{1,2}}):(?P<mi>\d{{2}})(?::(?P<s>\d{{2}}))?(?:{_SP}?(?P<ampm>[AaPp]\.?[Mm]\.?))?")
# The independent counter's own idea of a message start, line by line.
_COUNT_AUTHOR = regex.compile(rf"^{_NOT_MARKDOWN}[^\n]+?{_SP}[—–]{_SP}(?:{_REL}|\d{{1,4}}[./-])")
_COUNT_STAMP = regex.compile(r"^\[\d{1,2}:\d\d")


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
class DiscordText(Grammar):
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

    def read(self, sources: list[SourceText], settings: Settings) -> list:
        """The session of each source with its turns as a frame (``_discord_columns``), every source in one
        table of lines; each paste decides its own day/month order."""
        if not sources:
            return []
        texts = [s.text for s in sources]
        table = LineTable.of(texts)
        heads = columns.headers(table, _RUST["header"], _RUST["markdown"], _RUST["author_like"])
        found = columns.paste(table, heads, EDITED)
        opened = [own(_opened, source, found.regions[i], found.runs[i]) for i, source in enumerate(sources)]
        orders = [o[1].order if isinstance(o, tuple) else "dmy" for o in opened]  # a failed paste: its rows unused
        frame = found.frame
        time, relative, unreadable = columns.times(frame, table, orders, day_of, _clock)
        names: list[list[str]] = [[] for _ in sources]
        for src, name in frame.select("src", "speaker").unique().iter_rows():
            names[src].append(name)
        extra, starts = columns.extras(frame, columns.replies(heads, table, frame),
                                       [sorted(n, key=len, reverse=True) for n in names])
        shaped: list[list[ShapedLine]] = [[] for _ in sources]  # a turn a reply context opens
        for src, line, start in frame.select("src", "line_start", starts.alias("start")).filter(
                pl.col("line_start") != pl.col("start")).iter_rows():
            shaped[src].append(ShapedLine(line, _under_reply(start)))
        cuts = table.split(frame["at"])
        frame = frame.with_columns(time=time, extra=extra, kind=pl.lit("message", pl.Utf8),
                                   line_start=starts).select(list(TURN_SCHEMA))
        out = []
        for i, o in enumerate(opened):
            mine = frame.slice(cuts[i], cuts[i + 1] - cuts[i])
            out.append(own(_concluded, o[0], mine, shaped[i], (relative[i], unreadable[i], found.continued[i]))
                       if isinstance(o, tuple) else o)
        return out

    def count_turns(self, raw: Any) -> int:
        """Author lines, and stamp lines with text of their own (on the line, or the next non-blank line
        when that is no author or stamp line)."""
        lines = raw.split("\n")
        count = 0
        for i, line in enumerate(lines):
            if _COUNT_AUTHOR.match(line):
                count += 1
            elif _COUNT_STAMP.match(line):
                after = line.partition("]")[2]
                following = next((ln for ln in lines[i + 1:] if ln.strip()), "")
                count += bool(after.strip() or (following and not _COUNT_AUTHOR.match(following)
                                                and not _COUNT_STAMP.match(following)))
        return count


def _opened(source: SourceText, regions: list[Region], runs: list[tuple[str, int]]) -> tuple[ParsedSession, DateOrder]:
    """A paste's session before its turns: its id, lines and regions, and its own day/month order."""
    sid = file_name_id(source.name)
    session = ParsedSession(sid, "file-name" if sid else "none", [], raw=source.text)
    session.lines = (1, line_count(source.text))
    session.regions.extend(regions)
    return session, _date_order(session, runs)


def _concluded(session: ParsedSession, frame: pl.DataFrame, shaped: list[ShapedLine], notes: tuple[int, int, bool]
               ) -> list[ParsedSession]:
    """A paste's session with its turn frame: its time notes (relative, unreadable, continued), and the
    lines a reply context adds to a turn."""
    _time_notes(session, *notes)
    session.shaped = shaped
    session.frame = frame
    return [session]


def _date_order(session: ParsedSession, runs: list[tuple[str, int]]) -> DateOrder:
    """The day/month order of the whole file, from the runs of its author lines' dates."""
    order = date_order(runs)
    if order.basis in ("none", "changes", "forward") and runs and all("." in d for d, _ in runs):
        order = order._replace(order="dmy", evidence="dotted dates, written day first in every locale that uses"
                               f" them ({runs[0][0]})", basis="dots")
    if runs:
        session.assumptions.append(f"date order {'/'.join(order.order.upper())}: {order.evidence}")
        if order.basis in ("none", "contradiction"):
            session.warnings.append(f"date order uncertain, {'/'.join(order.order.upper())} used: {order.evidence}")
    return order


def _time_notes(session: ParsedSession, relative: int, unreadable: int, continued: bool) -> None:
    if relative:
        session.warnings.append(unreadable_times(relative, "Today/Yesterday: relative to the unknown day of"
                                                 " copying, so no date"))
    if unreadable:
        session.warnings.append(unreadable_times(unreadable, "not a calendar date or clock time"))
    if continued:
        session.assumptions.append("a [time] continuation stamp takes the date of its author line")

