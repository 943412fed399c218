"""DiscordChatExporter's plain-text export (``--format PlainText``: ``Guild - channel [id].txt``).

Shape (verified against the exporter's own writer)::

    ==============================================================   <- 62 '=': the preamble,
    Guild: Test Server                                                   a session_header region
    Channel: Text Channels / general                                     (Topic, After and Before
    Topic: Chat about anything                                           lines when the export has
    ==============================================================       them)

    [01-Jan-20 01:33 AM] Tyrrrz#5447                                 <- a message: [date] author,
    Hello world                                                          " (pinned)" when pinned;
                                                                         its content, a blank line,
    [01-Jan-20 01:35 AM] Ann (pinned)                                    then {Attachments} (URLs),
    {Attachments}                                                        {Embed}, {Stickers} and
    https://cdn.discordapp.com/attachments/1/2/image.png                {Reactions} blocks, each
                                                                         ended by a blank line
    {Reactions}
    👍 (2) 🎉

    ==============================================================   <- the postamble with the
    Exported 2 message(s)                                                exporter's own count
    ==============================================================

Decisions:
- One file is one channel, one session; the title is ``Guild / Channel``, the id is the channel id
  DiscordChatExporter puts in brackets in the file name (``Guild - channel [id].txt``). The parts of a
  ``--partition`` export (``<name>.txt``, ``<name> [part 2].txt``...) are grouped by ingest and read in
  part order as one session, every turn and region naming its part; each part keeps its own preamble
  and closing count.
- Every ``[date] author`` line starts one turn (B2); its content runs to the first section block
  (``{Attachments}``...) after a blank line. Attachments and stickers become ``[attachment: url]`` and
  ``[sticker: url]`` lines after the text, an embed an ``[embed: first line]`` line only when the message
  has nothing else (as the JSON export's grammar does); embeds, stickers, reactions and ``pinned`` go to
  ``extra`` (the lines stay in the turn's span). A line in a message that itself looks like
  ``[date] author`` starts a turn: the export gives no way to tell them apart.
- The exporter writes a system notification (a pin, a join, a call) as its fallback text under the
  user who caused it; the phrases it uses (``NOTICES``, data) make the turn a System turn with that
  user as ``actor``.
- Dates: the exporter's old default ``01-Jan-20 01:33 AM``, ISO 8601, and numeric dates with a 12 h
  or 24 h clock (``1/2/2020 1:33 PM``, ``02.01.2020 13:33``), their day/month order decided from the
  whole file as for WhatsApp (the evidence is recorded); local time without a zone (``source_tz``).
- The independent count is the postamble's ``Exported N message(s)``, else the header lines.
- Read as a table of lines (``LineGrammar``), whole or streamed: what only the whole file decides (the
  day/month order, where the closing lines start and their count) is its survey's; a partitioned
  export (parts grouped by ingest) is read whole, each part a text of its own table
  (docs/line-tables.md, "DiscordChatExporter plain text").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

import polars as pl
import regex

from models.records import ParsedSession, Region, RegionKind, SourceText
from parsers.base import LineGrammar, Survey
from parsers.columns import LineTable, first_line_of, line_test, per_distinct, rust_pattern, turns_of, unnamed
from parsers.grammars._chatjson import compact, iso_time
from parsers.grammars._lines import DateOrder, date_order, unreadable_times
from parsers.grammars.csv_chat import dce_channel_id, dce_time
from parsers.registry import register
from parsers.sessions import file_name_id
from parsers.timeparse import clock_24h, from_parts

from . import _discord_txt_columns as columns
from ._discord_columns import Chunk

RULE = "=" * 62
HEADER = regex.compile(r"^\[(?P<stamp>[^\[\]\n]*\d:\d\d[^\[\]\n]*)\] (?P<author>[^\n]+?)(?P<pinned> \(pinned\))?$",
                       regex.MULTILINE)
POSTAMBLE = regex.compile(r"(?:^|\n)" + RULE + r"\nExported (?P<n>[\d,.\u00a0\u202f ]+) message\(s\)\n" + RULE
                          + r"\n?\Z")
SECTIONS = {"{Attachments}": "attachments", "{Embed}": "embeds", "{Stickers}": "stickers", "{Reactions}": "reactions"}
NOTICES = regex.compile(
    r"(?:Added .+ to the group\.|Removed .+ from the group\.|Left the group\.|Started a call(?: that lasted .+)?\.|"
    r"Changed the channel name: .+|Changed the channel icon\.|Pinned a message\.|Joined the server\.|"
    r"Boosted the server!?|Started a thread\.?.*|Created a thread\.?.*)")
_NUMERIC = regex.compile(r"(?P<a>\d{1,4})[./-](?P<b>\d{1,2})[./-](?P<c>\d{1,4})[, ]+(?P<h>\d{1,2}):(?P<mi>\d\d)"
                         r"(?::(?P<s>\d\d))?\s*(?P<ampm>[AaPp]\.?[Mm]\.?)?")
RUST = {"header": rust_pattern(HEADER),
        "sections": "(?m)^(?:" + "|".join(regex.escape(k) for k in SECTIONS) + ")$",
        # a superset of the notices (the Python pattern decides): any line of the text may match
        "notice": rust_pattern(regex.compile(rf"^(?:{NOTICES.pattern})$", regex.MULTILINE))}
PREAMBLE = "the exporter's preamble (guild, channel, topic, range)"
CLOSING = "the exporter's closing lines with its message count"
CLOSING_LINES = 3
"""The postamble is the file's last three lines: a rule, ``Exported N message(s)``, a rule."""


def _content(lines: list[str]) -> tuple[str, dict[str, Any]]:
    """A message body's text and its section blocks (module docstring)."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    cut = next((i for i, ln in enumerate(lines) if ln in SECTIONS and (i == 0 or not lines[i - 1].strip())), None)
    if cut is None:
        return "\n".join(lines), {}
    text = "\n".join(lines[:max(cut - 1, 0)])
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for ln in lines[cut:]:
        if ln in SECTIONS:
            current = sections.setdefault(SECTIONS[ln], [])
            if ln == "{Embed}":
                current.append("")
        elif current is not None and ln.strip():
            if current is sections.get("embeds"):  # an embed's lines are one entry
                current[-1] = f"{current[-1]}\n{ln}".lstrip("\n")
            else:
                current.append(ln)
    return text, sections


class Clock:
    """The turns' times: one day/month order for the whole export (None: it has no numeric date)."""

    def __init__(self, order: DateOrder | None) -> None:
        self.order = order

    def read(self, stamp: str) -> datetime | None:
        stamp = stamp.strip()
        if stamp[:4].isdigit() and stamp[4:5] == "-" and "T" in stamp:
            return iso_time(stamp)
        m = _NUMERIC.fullmatch(stamp)
        if m is None:
            return dce_time(stamp)
        a, b, c = int(m["a"]), int(m["b"]), int(m["c"])
        order = "ymd" if a > 31 else self.order.order if self.order else "dmy"
        y, mo, d = (a, b, c) if order == "ymd" else (c, b, a) if order == "dmy" else (c, a, b)
        hour = clock_24h(int(m["h"]), m["ampm"])
        if hour is None:
            return None
        return from_parts(y + 2000 if y < 100 else y, mo, d, hour, int(m["mi"]), int(m["s"] or 0))


def message(author: str, pinned: bool, body: str) -> columns.Message:
    """One message's turn fields but its time, from its header's author and pinned mark and its body."""
    text, sections = _content(body.split("\n")[1:] if body.startswith("\n") else body.split("\n"))
    marks = [*(f"[attachment: {u}]" for u in sections.pop("attachments", [])),
             *(f"[sticker: {u}]" for u in sections.get("stickers", []))]
    if not text and not marks:  # a bot's embed-only post: a marker, as the JSON export's grammar writes
        marks = [f"[embed: {e.split(chr(10))[0]}]" for e in sections.get("embeds", [])]
    content = "\n".join(x for x in (text, *marks) if x)
    reactions = " ".join(sections.get("reactions", [])).strip()
    extra = compact({"pinned": pinned, "embeds": sections.get("embeds"), "stickers": sections.get("stickers"),
                     "reactions": reactions})
    if NOTICES.fullmatch(text):
        return columns.Message("System", "system", "notice", content, {**(extra or {}), "actor": author})
    return columns.Message(author, "user", "message", content, extra)


def explained_share(sample: str) -> float:
    """1.0 for a text that opens with the exporter's preamble and has a message line; else 0: a
    ``[time] name`` line alone is too common to claim."""
    head = sample.lstrip("\ufeff")
    if not head.startswith(RULE + "\nGuild: ") or HEADER.search(head) is None:
        return 0.0
    return 1.0


@register
class DiscordTxt(LineGrammar):
    name = "discord-txt"
    detect_needs = ("Guild: ",)  # the preamble its detector requires
    version = "1"
    description = ("DiscordChatExporter plain-text export (Guild/Channel preamble, [date] author lines, "
                   "{Attachments}/{Embed}/{Reactions} blocks, Exported N message(s))")
    turn_shape = HEADER.pattern
    example = "[01-Jan-20 01:33 AM] Tyrrrz#5447\nHello world"
    group_files = r".+(?P<part> \[part \d+\])\.txt"

    starts = staticmethod(line_test(unnamed(RUST["header"])))

    def detect(self, sample: str, name: str) -> float:
        return explained_share(sample)

    def survey(self, sources: list[SourceText], table: LineTable, first_lines: list[int]) -> list[ExportSurvey]:
        """Each text's header count, runs of numeric dates and last lines; a partitioned export's, each part's
        added up (its parts are read in a table of their own)."""
        found = _surveys(table, first_lines, self.starts(table.lines))
        for i, source in enumerate(sources):
            if source.parts:
                texts = LineTable.of([p.text for p in source.parts])
                parts = _surveys(texts, [1] * len(source.parts), self.starts(texts.lines))
                found[i] = ExportSurvey(0, pages=parts)
                for part in parts:
                    found[i].then(part)
        return found

    def sessions(self, source: SourceText, survey: ExportSurvey) -> list[ParsedSession]:
        if source.parts:
            session = ParsedSession(None, "none", [], raw=[p.text for p in source.parts])
        else:
            sid = file_name_id(source.name)
            session = ParsedSession(sid, "file-name" if sid else "none", [], raw=source.text)
            session.lines = (1, survey.lines)
        channel = dce_channel_id(PurePosixPath(source.parts[0].name).name if source.parts else source.name)
        if channel and session.session_id is None:
            session.session_id, session.id_source = channel, "source:channel id in the exporter's file name"
        order = survey.order
        if order is not None and order.basis not in ("year", "none"):
            session.assumptions.append(f"numeric dates read {order.order}: {order.evidence}")
        return [session]

    def frames(self, sources: list[SourceText], table: LineTable, surveys: list[ExportSurvey],
               sessions: list[list[ParsedSession]], first_lines: list[int]) -> list[list[Chunk]]:
        """Each text's turn frame (``_discord_txt_columns``) with its preamble and closing lines declared; a
        partitioned export's turns as records naming their parts (its texts are its parts)."""
        first = first_line_of(first_lines)
        found = columns.pages(table, RUST, [s.post_line for s in surveys], first,
                              [Clock(s.order).read for s in surveys], message)
        out: list[list[Chunk]] = []
        for source, survey, mine, page in zip(sources, surveys, sessions, found, strict=True):
            if not mine:
                out.append([])
            elif source.parts:
                out.append([_parts(source, survey, mine[0])])
            else:
                _declare(mine[0], page, survey.post_line, None)
                out.append([Chunk(page.frame, bad=page.unread)])
        return out

    def conclude(self, sessions: list[ParsedSession], source: SourceText, survey: ExportSurvey, chunks: list) -> None:
        (session,) = sessions
        if source.parts:
            session.meta["files"] = [{"name": PurePosixPath(p.name).name, "sha256": p.sha256, "sizeBytes": p.size}
                                     for p in source.parts]
            unreadable = [PurePosixPath(p.name).name for p in source.parts if not p.text]
            if unreadable:
                session.coverage_reason = f"parts of the export could not be read: {', '.join(unreadable)}"
        else:
            session.regions.sort(key=lambda r: r.lines[0])  # the chunks of ranges read side by side
            _exported(session, survey)
        unread = sum(chunk.bad for chunk in chunks)
        if unread:
            session.warnings.append(unreadable_times(unread, "not a date shape the exporter writes"))

    def count_turns(self, raw: Any) -> int:
        if isinstance(raw, list):  # the parts of a partitioned export
            return sum(self.count_turns(text) for text in raw)
        if not isinstance(raw, str):
            return 0
        post = POSTAMBLE.search(raw)
        if post:
            digits = regex.sub(r"\D", "", post["n"])
            if digits:
                return int(digits)
        return len(HEADER.findall(raw))


def _parts(source: SourceText, survey: ExportSurvey, session: ParsedSession) -> Chunk:
    """A partitioned export read whole: each part a text of one table, in part order, one clock for all;
    its turns as records naming their part (the accounting is per part)."""
    read = Clock(survey.order).read
    found = columns.pages(LineTable.of([p.text for p in source.parts]), RUST, [p.post_line for p in survey.pages], 1,
                          [read] * len(source.parts), message)
    bad = 0
    for part, page, own in zip(source.parts, found, survey.pages, strict=True):
        name = PurePosixPath(part.name).name
        _declare(session, page, own.post_line, name)
        for turn in turns_of(page.frame):
            turn.part = name
            session.turns.append(turn)
        _exported(session, own)
        bad += page.unread
    return Chunk(None, bad=bad)


def _declare(session: ParsedSession, page: columns.Page, post_line: int | None, part: str | None) -> None:
    """A page's preamble (the session's title and facts) and closing lines, as declared regions."""
    if page.preamble is not None:
        span = (page.first_line, page.first_line + len(page.preamble) - 1)
        fields = dict(ln.split(": ", 1) for ln in page.preamble if ": " in ln and not ln.startswith("="))
        guild, channel = fields.get("Guild"), fields.get("Channel")
        session.title = session.title or " / ".join(x for x in (guild, channel) if x) or None
        session.meta.update({k.lower(): v for k, v in fields.items() if k in ("Guild", "Channel", "Topic", "After",
                                                                              "Before")})
        session.regions.append(Region(RegionKind.SESSION_HEADER, PREAMBLE, lines=span, part=part))
    if post_line is not None and page.first_line <= post_line < page.first_line + page.rows:
        session.regions.append(Region(RegionKind.BOILERPLATE, CLOSING, lines=(post_line, post_line + 2), part=part))


def _exported(session: ParsedSession, survey: ExportSurvey) -> None:
    """The exporter's own count of a file's messages, added to the session's."""
    post = survey.closing
    if post is not None:
        count = regex.sub(r"\D", "", post["n"])
        session.meta["exportedMessages"] = session.meta.get("exportedMessages", 0) + int(count or 0)


def _surveys(table: LineTable, first_lines: list[int], ok: pl.Series) -> list[ExportSurvey]:
    """Each text's survey: its header lines (``ok``), the runs of their numeric dates, its last lines."""
    stamps = table.lines.filter(ok).str.extract(RUST["header"], 1)
    src = table.source.filter(ok)
    dates = per_distinct(stamps, _numeric_date, pl.Utf8)
    frame = pl.DataFrame({"date": dates, "src": src}).with_columns(i=pl.int_range(pl.len()).over("src")).filter(
        pl.col("date").is_not_null())
    run = ((pl.col("date") != pl.col("date").shift(1)) | (pl.col("src") != pl.col("src").shift(1))).fill_null(True)
    runs: list[list[list]] = [[] for _ in range(len(table))]
    for text, date, i, n in frame.group_by(run.cum_sum().alias("run"), maintain_order=True).agg(
            pl.col("src").first(), pl.col("date").first(), pl.col("i").first(), pl.len()).drop("run").iter_rows():
        runs[text].append([date, i, n])
    turns = table.counts(ok)
    bounds = table.bounds
    return [ExportSurvey(first_lines[i] - 1 + bounds[i + 1] - bounds[i], turns[i], runs[i],
                         table.lines.slice(max(bounds[i + 1] - CLOSING_LINES, bounds[i]),
                                           min(CLOSING_LINES, bounds[i + 1] - bounds[i])).to_list(),
                         text=table.texts[i] if table.texts is not None else None)
            for i in range(len(table))]


def _numeric_date(stamp: str) -> str | None:
    """A numeric stamp's date (``a/b/c``: its order is the whole export's), else None."""
    m = _NUMERIC.fullmatch(stamp.strip())
    return f"{m['a']}/{m['b']}/{m['c']}" if m else None


@dataclass(slots=True)
class ExportSurvey(Survey):
    """What an export's header lines and last lines tell of it as a whole (``DiscordTxt.survey``)."""

    lines: int
    turns: int = 0
    runs: list[list] = field(default_factory=list)
    """[date, index of its first stamp, its stamps] for each run of equal numeric dates of the header lines."""
    tail: list[str] = field(default_factory=list)
    """The piece's last lines (up to ``CLOSING_LINES``): whether they are the closing lines."""
    text: str | None = None
    """The piece's text, until its header lines are counted (``census``: only when asked)."""
    headers: int | None = None
    pages: list[ExportSurvey] | None = None
    """A partitioned export's parts, each surveyed."""
    decided: tuple[DateOrder | None] | None = None

    def then(self, more: ExportSurvey) -> ExportSurvey:
        """This survey, the next piece's added (in place)."""
        self.headers = self.census().headers + more.census().headers
        self.text = None
        for date, i, n in more.runs:
            if self.runs and self.runs[-1][0] == date:
                self.runs[-1][2] += n  # the same run goes on across the pieces
            else:
                self.runs.append([date, i + self.turns, n])
        self.turns += more.turns
        self.lines = more.lines
        self.tail = (self.tail + more.tail)[-CLOSING_LINES:]
        self.decided = None
        return self

    def census(self) -> ExportSurvey:
        if self.headers is None:  # counted now, on this thread
            self.headers, self.text = len(HEADER.findall(self.text or "")), None
        return self

    @property
    def counted(self) -> int:
        """``count_turns``'s rule: the exporter's own count when the closing lines hold one, else the header lines."""
        if self.pages is not None:
            return sum(page.counted for page in self.pages)
        post = self.closing
        digits = regex.sub(r"\D", "", post["n"]) if post is not None else ""
        return int(digits) if digits else self.census().headers

    @property
    def closing(self) -> regex.Match | None:
        """The exporter's closing lines, when the input ends with them."""
        return POSTAMBLE.search("\n".join(self.tail)) if len(self.tail) == CLOSING_LINES else None

    @property
    def post_line(self) -> int | None:
        """The line the closing lines start at (None: the input has none)."""
        return self.lines - CLOSING_LINES + 1 if self.pages is None and self.closing is not None else None

    @property
    def apart(self) -> bool:
        return True  # a chunk needs only the whole input's order and closing line

    @property
    def order(self) -> DateOrder | None:
        """The day/month order of the whole export, from its numeric dates (None: it has none)."""
        if self.decided is None:
            self.decided = (_order(self.runs),)
        return self.decided[0]


def _order(runs: list[list]) -> DateOrder | None:
    """``date_order`` of every numeric date, from their runs: the runs decide as the dates do, but where two
    locales contradict each other, the majority counts every date."""
    if not runs:
        return None
    order = date_order([(d, i) for d, i, _ in runs])
    if order.basis == "contradiction":
        order = date_order([(d, i) for d, i, n in runs for _ in range(n)])
    return order
