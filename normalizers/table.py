"""Interactions of a batch of JSON sessions assembled as one table, then split per session.

The batched twin of ``assemble._interactions`` for grammars that append turns to column builders
(``parsers.turncols``). A session of a ChatGPT or Claude export holds some fifteen turns: a frame per
session costs more in polars' per-call overhead than it saves, so the sessions of a batch (a streamed
batch of conversations, or a whole export's conversations in batches) are one table with a
``session`` column:

- speakers are normalised once per distinct speaker, model and model source in the batch; what a
  session records of them (a redaction in a name, a display-field note, the gate's check) is kept
  where the session first meets each;
- times are converted and formatted as one column (``columns.utc_dates``);
- secrets: one vectorised search for the redactor's trigger words over the batch's contents and
  over its source fields' JSON text, the redactor on the rows found;
- source fields stay the JSON text the builder wrote unless they may hold a secret or a key named
  like a time (``assemble.raw_time_keys``): those rows go through Python as the dict path does;
- each interaction line is built as one column (``columns.json_string``: orjson's escaping) and each
  session's lines are joined by one group-by.

Per session, what only it decides (ordinals, its summary, facts in turn order, its envelope) is
kept apart. Same bytes as the dict path (tests compare every JSON golden, sample and conformance
input, and generated conversations).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import orjson
import polars as pl

from models.records import ModelRef
from parsers.turncols import frame_turns

from .assemble import RunContext, Summary, _speaker_entry, model_source, raw_time_keys
from .columns import _FACT_WORDS, TurnRows, json_string, utc_dates
from .columns import _line as interaction_line
from .keys import KEY_MESSAGES
from .secrets import EXACT_WORDS, FOLDED_WORDS, pii_triggers, triggers

# A key ``raw_time_keys`` may rename, or the gate may check, shows in the JSON text as one of these.
_TIME_KEY_TEXT = r'(?i:date|timestamp)"|At"'
# Keys of the source fields that ``Facts.observe`` reads (with a ``file_edit`` kind, any fields).
_FACT_KEYS = ('"tool"', '"callId"', '"userCommand"', '"editFormat"')
_TOOL_KINDS = ("tool_call", "tool_result", "file_edit")


@dataclass(slots=True)
class SessionColumns:
    """One session of an assembled batch: its summary for the envelope and its encoded interactions."""

    summary: Summary
    body: bytes = b""
    """The interaction lines as they follow the document's head (``encode.join_lines(..., True)``)."""
    characters: int = 0
    checked: list[dict[str, Any]] = field(default_factory=list)
    """What the gate checks that is not true by construction (``columns.ColumnAssembler.checked``)."""
    rows: pl.DataFrame | None = None
    """The turns table's columns from the document (``audit.datasets``), when asked for."""


@dataclass(slots=True)
class Batch:
    """An assembled batch: each session's part, and the interaction columns the gate checks as one
    table (``session``, ``role``, ``kind``, ``content``, ``date``)."""

    sessions: list[SessionColumns]
    interactions: pl.DataFrame
    starts: list[int]
    """The row of each session's first interaction in ``interactions``."""


@dataclass(slots=True)
class _Speaker:
    entry: dict[str, Any]
    piece: str
    """``,"speakerName":...,"model":...,"modelSource":...,"speaker":...``"""
    raw: str
    """``,"speakerNameRaw":...`` and ``,"modelRaw":...`` when the display fields were changed."""
    source: str
    """modelSource"""
    notes: list[str]
    """Its display-field changes (``Summary.name_notes``)."""
    found: list[str]
    """The secret types found in its name."""
    at: int = 0
    """The index of its first turn in the session (a streamed session's table: ``SessionStream``)."""


def assemble_batch(frame: pl.DataFrame, sizes: list[int], ctx: RunContext, rows: bool = False) -> Batch:
    """The interactions of a batch's turns (``parsers.turncols.batch_frame``: ``sizes[i]`` turns of
    session ``i``) with each session's summary; ``rows``: keep each session's turns table too."""
    starts = list(chain((0,), _cumulative(sizes)))[:-1]
    ordinal = pl.Series("ordinal", [j for n in sizes for j in range(1, n + 1)], dtype=pl.Int64)
    out = [SessionColumns(Summary(count=n)) for n in sizes]
    redactions: list[list[tuple[int, int, dict[str, Any]]]] = [[] for _ in sizes]
    frame = frame.with_columns(ordinal, key=_speaker_keys())
    speakers = _speakers(frame, ctx, out, redactions)
    content = _content(frame, ctx, out, redactions)
    extra, scrubbed = _extras(frame, ctx, out, redactions)
    _facts(frame, content, scrubbed, out, ctx.redactor.scrub)
    date = _dates(frame, ctx, out)
    frame = frame.with_columns(content=content, extra=extra, date=date)
    _encode(frame, speakers, out)
    for s, found in enumerate(redactions):
        found.sort(key=lambda r: (r[0], r[1]))
        out[s].summary.redactions.extend(r for _, _, r in found)
    if rows:
        _rows(frame, speakers, starts, sizes, out)
    return Batch(out, frame.select("session", "role", "kind", "content", "date"), starts)


def _encode(frame: pl.DataFrame, speakers: dict[str, _Speaker], out: list[SessionColumns]) -> None:
    """Each session's interaction lines, joined as they follow its head, and its characters: one group-by
    joins each session's lines in polars and hands them over as bytes (no Python string of a body is
    made, nor any per-line Python)."""
    keys = list(speakers)
    frame = frame.with_columns(spk=pl.col("key").replace_strict(keys, [speakers[k].piece for k in keys]),
                               raw=pl.col("key").replace_strict(keys, [speakers[k].raw for k in keys]))
    per = (frame.select("session", "kind", _line(), chars=pl.col("content").str.len_chars())
           .group_by("session", maintain_order=True)
           .agg(pl.concat_str(pl.lit("\n"), pl.col("line").str.join(",\n")).cast(pl.Binary).alias("body"),
                pl.col("chars").sum(),
                pl.col("line").filter(pl.col("kind") != "system").head(KEY_MESSAGES).alias("first")))
    for s, body, chars, first in per.iter_rows():
        out[s].body = body
        out[s].characters = int(chars)
        out[s].summary.open_with(orjson.loads(line) for line in first)  # the session key's earliest messages


def _cumulative(sizes: list[int]) -> list[int]:
    total, out = 0, []
    for n in sizes:
        total += n
        out.append(total)
    return out


def _speaker_keys() -> pl.Expr:
    """Each turn's key in the speaker table: its speaker, model and whether the source names it."""
    c = pl.col
    return pl.concat_str(c("speaker"), pl.lit("\x1f"), c("model").fill_null("-"), pl.lit("\x1f"),
                         c("explicit").cast(pl.Utf8))


def _speakers(frame: pl.DataFrame, ctx: RunContext, out: list[SessionColumns], redactions: list,
              table: dict[str, _Speaker] | None = None) -> dict[str, _Speaker]:
    """The batch's speaker table; what each session records where it first meets a speaker. ``table``:
    the table of a streamed session's earlier chunks, whose speakers it has met already."""
    table = {} if table is None else table
    met = set(table)
    firsts = frame.select("session", "key", "ordinal", "speaker", "model", "explicit").unique(
        subset=["session", "key"], keep="first", maintain_order=True)
    for s, key, ordinal, name, model, explicit in firsts.iter_rows():
        if key in met:
            continue
        sp = table.get(key)
        if sp is None:
            sp = table[key] = _speaker(ctx, name, model, explicit, ordinal - 1)
        summary = out[s].summary
        redactions[s].extend((ordinal, 0, {"turn": ordinal, "type": k, "field": "speakerName"}) for k in sp.found)
        summary.name_notes.extend(sp.notes)
        out[s].checked.append({"at": ordinal - 1, "speakerName": sp.entry["speakerName"], "model": sp.entry["model"],
                               "speaker": sp.entry["speaker"]})
    counts = frame.group_by("session", "key").len()
    for s, key, n in counts.iter_rows():
        model, unknown = table[key].entry["model"], out[s].summary.unknown
        for f in ("provider", "name", "version"):
            if model[f] == "unknown":
                unknown[f] += n
    return table


def _speaker(ctx: RunContext, name: str, model_json: str | None, explicit: bool, at: int) -> _Speaker:
    scrubbed, found = ctx.redactor.scrub(name)  # a name may hold a key: it is shown in every turn
    model = ModelRef(*orjson.loads(model_json)) if model_json is not None else None
    notes: list[str] = []
    entry = _speaker_entry(ctx, scrubbed, model, explicit, notes)
    source = model_source(model, explicit)
    piece = orjson.dumps({"speakerName": entry["speakerName"], "model": entry["model"], "modelSource": source,
                          "speaker": entry["speaker"]})
    raw = orjson.dumps({k: entry[k] for k in ("speakerNameRaw", "modelRaw") if k in entry})
    return _Speaker(entry, "," + piece[1:-1].decode(), ("," + raw[1:-1].decode()) if len(raw) > 2 else "", source,
                    notes, found, at)


def _content(frame: pl.DataFrame, ctx: RunContext, out: list[SessionColumns], redactions: list) -> pl.Series:
    """Contents with secrets redacted on the rows the trigger search flags, cut at ``max_turn_chars``."""
    content, redactor = frame["content"], ctx.redactor
    if redactor.policy != "off" and len(content):
        pattern = triggers() + (f"|{pii_triggers()}" if redactor.pii else "")
        hits = content.str.contains(pattern).fill_null(False).arg_true()
        if len(hits):
            values = []
            where = frame.select("session", "ordinal")[hits]
            for (s, ordinal), text in zip(where.iter_rows(), content.gather(hits).to_list(), strict=True):
                text, found = redactor.scrub(text)
                values.append(text)
                redactions[s].extend((ordinal, 1, {"turn": ordinal, "type": k, "field": "content"}) for k in found)
            content = content.scatter(hits, pl.Series(values, dtype=pl.Utf8))
    limit = ctx.settings.max_turn_chars
    long = content.str.len_chars() > limit
    if long.any():
        for s in frame["session"].filter(long).to_list():
            out[s].summary.truncated += 1
        content = pl.select(pl.when(long).then(content.str.slice(0, limit)).otherwise(content)).to_series()
    return content


def _extra_flags(extra: pl.Series, ctx: RunContext) -> tuple[pl.Series, pl.Series]:
    """(rows whose source fields ``Redactor.scrub_fields`` may change, rows with a key named like a
    time), from their JSON text: the same test on the same text the dict path makes."""
    redactor = ctx.redactor
    if redactor.policy == "off":
        secret = pl.repeat(False, len(extra), eager=True)
    elif redactor.pii:
        secret = extra.str.contains(f"{triggers()}|{pii_triggers()}")
    else:
        folded = extra.str.to_lowercase().str.contains_any(list(FOLDED_WORDS))
        secret = folded | extra.str.contains_any(list(EXACT_WORDS))
    return secret.fill_null(False), extra.str.contains(_TIME_KEY_TEXT).fill_null(False)


def _extras(frame: pl.DataFrame, ctx: RunContext, out: list[SessionColumns], redactions: list
            ) -> tuple[pl.Series, dict[int, Any]]:
    """Source fields: scrubbed and time keys renamed on the rows that need it (see ``_extra_flags``),
    the builder's JSON text on the others. Returns them and the scrubbed values by row."""
    extra = frame["extra"]
    secret, timed = _extra_flags(extra, ctx)
    rows = (secret | timed).arg_true()
    scrubbed: dict[int, Any] = {}
    if not len(rows):
        return extra, scrubbed
    encoded = []
    where = frame.select("session", "ordinal")[rows]
    texts, flags = extra.gather(rows).to_list(), secret.gather(rows).to_list()
    for i, (s, ordinal), text, may in zip(rows.to_list(), where.iter_rows(), texts, flags, strict=True):
        found: list[str] = []
        value = orjson.loads(text)
        value = ctx.redactor.scrub_fields(value, found) if may else value
        scrubbed[i] = value
        fields = raw_time_keys(value)
        encoded.append(orjson.dumps(fields).decode())
        out[s].checked.append({"at": ordinal - 1, "sourceFields": fields})
        redactions[s].extend((ordinal, 2, {"turn": ordinal, "type": k, "field": "sourceFields"}) for k in found)
    return extra.scatter(rows, pl.Series(encoded, dtype=pl.Utf8)), scrubbed


def _facts(frame: pl.DataFrame, content: pl.Series, scrubbed: dict[int, Any], out: list[SessionColumns],
           scrub, kept: list[tuple] | None = None) -> None:
    """``Facts.observe`` on the turns that may hold a fact, in order: a fact word in the content, a
    tool turn, or source fields that observe reads (``kept``: the rows kept for later instead, in
    order, as a range of a streamed session keeps them)."""
    words = "|".join(re.escape(w) for w in _FACT_WORDS)
    extra = frame["extra"]
    test = (content.str.contains(words) | (frame["role"] == "tool") | frame["kind"].is_in(_TOOL_KINDS)
            | extra.str.contains_any(list(_FACT_KEYS)) | frame["base"].is_not_null())
    rows = test.fill_null(False).arg_true().to_list()
    if not rows:
        return
    picked = frame.select("session", "ordinal", "role", "kind", "speaker", "extra", "base")[rows]
    texts = content.gather(rows).to_list()
    for i, (s, ordinal, role, kind, speaker, text, base), body in zip(rows, picked.iter_rows(), texts, strict=True):
        value = scrubbed[i] if i in scrubbed else (orjson.loads(text) if text is not None else None)
        base = scrub(base)[0] if base is not None else None  # redacted like the content
        if kept is not None:
            kept.append((ordinal, role, kind, speaker, body, value, base))
        else:
            out[s].summary.facts.observe(ordinal, role, kind, speaker, body, value, base)


def _dates(frame: pl.DataFrame, ctx: RunContext, out: list[SessionColumns]) -> pl.Series:
    date, naive, unreadable = utc_dates(frame["time"], frame["offset"], frame["time_raw"], ctx.zone)
    per = (pl.DataFrame({"session": frame["session"], "date": date, "naive": naive, "bad": unreadable})
           .group_by("session", maintain_order=True)
           .agg(pl.col("naive").sum(), pl.col("bad").sum(), pl.col("date").null_count().alias("none"),
                pl.col("date").min()))
    for s, naive_n, bad, none, earliest in per.iter_rows():
        summary = out[s].summary
        summary.naive_times += naive_n
        summary.unreadable_times += bad
        summary.unknown["turnsWithoutTime"] += none
        summary.saw_date(earliest)
    return date


def _line() -> pl.Expr:
    """One interaction's JSON line (``columns._line``), located by its line span when it has one, else by
    its pointer, and by the part of a conversation over several files it counts in."""
    c = pl.col
    lines = pl.concat_str(pl.lit('{"lines":['), c("line_start").cast(pl.Utf8), pl.lit(","),
                          c("line_end").cast(pl.Utf8), pl.lit("]"))
    pointer = pl.concat_str(pl.lit('{"pointer":'), json_string(c("pointer")).fill_null(pl.lit("null")))
    part = pl.when(c("part").is_null()).then(pl.lit("")).otherwise(
        pl.concat_str(pl.lit(',"part":'), json_string(c("part"))))
    located = pl.when(c("line_start").is_null()).then(pointer).otherwise(lines)
    return interaction_line([located, part, pl.lit("}")]).alias("line")


def _rows(frame: pl.DataFrame, speakers: dict[str, _Speaker], starts: list[int], sizes: list[int],
          out: list[SessionColumns]) -> None:
    """Each session's turns table columns (``audit.datasets``: ``normalizers.columns.TurnRows.frame``'s,
    with the source pointer)."""
    keys = list(speakers)

    def of(get) -> pl.Expr:
        return pl.col("key").replace_strict(keys, [get(speakers[k]) for k in keys], return_dtype=pl.Utf8)

    c = pl.col
    table = frame.select(
        c("ordinal"), c("role"), c("kind"), of(lambda e: e.entry["speakerName"]).alias("speaker_name"),
        of(lambda e: e.entry["model"]["provider"]).alias("provider"),
        of(lambda e: e.entry["model"]["name"]).alias("model_name"),
        of(lambda e: e.entry["model"]["version"]).alias("model_version"),
        of(lambda e: e.source).alias("model_source"), of(lambda e: e.entry["speaker"]).alias("speaker"),
        c("date"), c("content"),
        pl.concat_str(pl.lit("["), c("line_start").cast(pl.Utf8), pl.lit(","), c("line_end").cast(pl.Utf8),
                      pl.lit("]")).alias("source_lines"),
        pl.when(c("line_start").is_null()).then(c("pointer")).alias("source_pointer"),
    )
    for s, (start, n) in enumerate(zip(starts, sizes, strict=True)):
        out[s].rows = table.slice(start, n)


@dataclass(slots=True)
class ColumnAssembler:
    """The interactions of one streamed session, a turn frame (``parsers.columns.TURN_SCHEMA``) per chunk,
    through the batch's column work (one session, ordinals going on from chunk to chunk): what spans
    chunks (the speaker table, the summary) is carried along, so a session's bytes do not depend on how
    it was cut. A range of a session read apart (flows/core/ranges.py, ``starting_at``) keeps the rows
    ``Facts.observe`` must see in session order (``facts``) and is added to the session by ``absorb``."""

    ctx: RunContext
    summary: Summary = field(default_factory=Summary)
    speakers: dict[str, _Speaker] = field(default_factory=dict)
    checked: list[dict[str, Any]] = field(default_factory=list)
    """What the gate checks that is not true by construction: each distinct speaker's fields with the index
    of its first turn, and each turn's source fields (``{"at": i, "sourceFields": ...}``)."""
    facts: list[tuple] | None = None
    start: int = 0
    """The index of the first turn this assembler reads (a range's first turn in its session)."""

    @classmethod
    def starting_at(cls, ctx: RunContext, turns: int) -> ColumnAssembler:
        """An assembler for a range of a session whose first turn is turn ``turns`` (0-based)."""
        assembler = cls(ctx, facts=[], start=turns)
        assembler.summary.count = turns
        return assembler

    def absorb(self, part: ColumnAssembler) -> list[_Speaker]:
        """Add the next range of the session (ranges in order) as one pass over the whole session
        would have it: counts, redactions, the speaker table and its notes, the facts observed.
        Returns the speakers first met in that range (the gate checks each once)."""
        s, p = self.summary, part.summary
        if part.start != s.count:
            raise ValueError(f"a range starts at turn {part.start}, the one before it ends at {s.count}")
        new = [sp for name, sp in part.speakers.items() if name not in self.speakers]
        # a speaker met before was scrubbed again where this range first met it: not a new finding
        again = {sp.at + 1 for name, sp in part.speakers.items() if name in self.speakers}
        for name, sp in part.speakers.items():
            self.speakers.setdefault(name, sp)
        for sp in new:
            s.name_notes.extend(sp.notes)
        s.redactions.extend(r for r in p.redactions if not (r["field"] == "speakerName" and r["turn"] in again))
        s.count = p.count
        for key, n in p.unknown.items():
            s.unknown[key] += n
        s.naive_times += p.naive_times
        s.unreadable_times += p.unreadable_times
        s.truncated += p.truncated
        s.saw_date(p.earliest)
        s.opening.extend(p.opening[:max(0, KEY_MESSAGES - len(s.opening))])
        for row in part.facts or ():
            s.facts.observe(*row)
        return new

    def add(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The next turns of the session, as interaction columns: ``line`` (the encoded interaction) and
        the turns table's columns (``rows``)."""
        base, n = self.summary.count, frame.height
        self.summary.count += n
        batch = frame_turns(frame, 0).with_columns(
            ordinal=pl.int_range(base + 1, base + n + 1, dtype=pl.Int64), key=_speaker_keys())
        out, redactions, ctx = [SessionColumns(self.summary, checked=self.checked)], [[]], self.ctx
        speakers = _speakers(batch, ctx, out, redactions, self.speakers)
        content = _content(batch, ctx, out, redactions)
        extra, scrubbed = _extras(batch, ctx, out, redactions)
        _facts(batch, content, scrubbed, out, ctx.redactor.scrub, self.facts)
        date = _dates(batch, ctx, out)
        self.summary.redactions.extend(r for _, _, r in sorted(redactions[0], key=lambda r: (r[0], r[1])))
        keys = list(speakers)
        columns = batch.with_columns(
            content=content, extra=extra, date=date,
            spk=pl.col("key").replace_strict(keys, [speakers[k].piece for k in keys], return_dtype=pl.Utf8),
            raw=pl.col("key").replace_strict(keys, [speakers[k].raw for k in keys], return_dtype=pl.Utf8),
        ).select("ordinal", "role", "kind", "date", "time_raw", "content", "line_start", "line_end", _line(),
                 pl.col("key").alias("speaker_key"))
        if len(self.summary.opening) < KEY_MESSAGES:  # the session's key reads its first interactions
            said = columns.filter(pl.col("kind") != "system")["line"].head(KEY_MESSAGES)  # system lines: not identity
            self.summary.open_with(orjson.loads(line) for line in said)
        return columns

    def rows(self, interactions: pl.DataFrame) -> TurnRows:
        """These interactions as turn rows (what the audit datasets hold of each interaction)."""
        return TurnRows(interactions.drop("line", "time_raw"), self.speaker_fields())

    def speaker_fields(self) -> dict[str, dict[str, Any]]:
        """Each speaker key's fields as the turns table reads them (``TurnRows.speakers``)."""
        return {k: {**v.entry, "modelSource": v.source} for k, v in self.speakers.items()}
