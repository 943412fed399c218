"""Interactions of a streamed session, chunk by chunk: normalisation once per distinct value, lines in polars.

A session read whole is assembled with its batch (normalizers/jsoncols.py); a large text input streamed
in chunks (flows/spool.py, flows/ranges.py) is assembled here, one turn frame
(``parsers.columns.TURN_SCHEMA``) per chunk, with what spans chunks carried along. Same document as a
whole read (tests compare the bytes):

- ``normalize_speaker`` runs once per distinct speaker, its fields pre-encoded and joined back;
- times are converted to UTC and formatted as a column (a time that does not exist in the source
  zone, in a DST gap, goes through ``to_utc_z`` as in the dict path);
- secrets: a vectorised search for the redactor's trigger words over the content column, and the
  redactor on the rows it flags only; the session record's facts likewise (``Facts.observe`` on
  the rows that mention a fence, a diff, a patch or a heuristic, or carry extra fields);
- each interaction line is built by string concatenation of JSON-escaped columns (polars escapes
  strings exactly as orjson does: tests/normalizers/test_columns.py), so the bytes are those of
  ``encode.encode_interaction`` of the dict the other path would build.

``ColumnAssembler.add`` takes the frames of one session in order (one for a session read whole,
one per chunk for a spooled one) and keeps what spans chunks (the speaker table, the summary), so
a session's bytes do not depend on how it was cut.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

import orjson
import polars as pl

from models.records import ModelRef

from .assemble import RunContext, Summary, _speaker_entry, model_source, raw_time_keys
from .keys import KEY_MESSAGES
from .secrets import pii_triggers, triggers
from .times import MAX_YEAR, MIN_YEAR, to_utc_z

# Substrings without which Facts.observe finds nothing in a turn with no extra fields.
_FACT_WORDS = ("```", "diff --git", "diff_json_v1", "H-", "<<<<<<< SEARCH")
_ISO = "%Y-%m-%dT%H:%M:%SZ"


def json_string(column: pl.Expr) -> pl.Expr:
    """A string column as JSON string literals (orjson's escaping; null stays null)."""
    encoded = pl.struct(column.alias("v")).struct.json_encode().str.strip_prefix('{"v":').str.strip_suffix("}")
    return pl.when(column.is_not_null()).then(encoded)


def _optional(key: str, value: pl.Expr) -> pl.Expr:
    """``,"key":value`` where the value is not null, else nothing."""
    return pl.when(value.is_not_null()).then(pl.concat_str(pl.lit(f',"{key}":'), value)).otherwise(pl.lit(""))


@dataclass(slots=True)
class _Speaker:
    piece: str
    """``,"speakerName":...,"model":...,"modelSource":...,"speaker":...``"""
    raw: str
    """``,"speakerNameRaw":...`` and ``,"modelRaw":...`` when the display fields were changed."""
    entry: dict[str, Any]
    source: str = "none"
    """modelSource"""
    at: int = 0
    """The index of its first turn in the frames this assembler read."""
    notes: list[str] = field(default_factory=list)
    """Its display-field changes (``Summary.name_notes``)."""
    found: list[str] = field(default_factory=list)
    """The secret types found in its name."""


@dataclass(slots=True)
class ColumnAssembler:
    """The interactions of one session, frame by frame (see the module docstring)."""

    ctx: RunContext
    summary: Summary = field(default_factory=Summary)
    speakers: dict[str, _Speaker] = field(default_factory=dict)
    checked: list[dict[str, Any]] = field(default_factory=list)
    """What the gate checks that is not true by construction: each distinct speaker's fields with
    the index of its first turn, and each turn's source fields (``{"at": i, "sourceFields": ...}``)."""
    facts: list[tuple] | None = None
    """When set (a range of a session cut in ranges), the turns ``Facts.observe`` would see are kept
    here, in order, for the session to observe once every range is read (facts follow files across
    the session, so they cannot be merged)."""

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
        """The next turns of the session: returns them as interaction columns (``line``: the
        encoded interaction; and the turn-table columns the datasets read)."""
        base = self.summary.count
        self.summary.count += frame.height
        redactions: list[tuple[int, int, dict[str, Any]]] = []
        ordinal = pl.int_range(base + 1, base + frame.height + 1, eager=True, dtype=pl.Int64)
        key = _speaker_keys(frame)
        spk, raw = self._speakers(frame, key, base, redactions)
        content = self._content(frame["content"], base, redactions)
        extra, scrubbed = self._extras(frame, base, redactions)
        self._facts(frame, content, scrubbed, base)
        date = self._dates(frame)
        redactions.sort(key=lambda r: (r[0], r[1]))
        self.summary.redactions.extend(r for _, _, r in redactions)
        out = pl.DataFrame({"ordinal": ordinal, "role": frame["role"], "kind": frame["kind"], "spk": spk,
                            "date": date, "time_raw": frame["time_raw"], "content": content,
                            "line_start": frame["line_start"], "line_end": frame["line_end"], "raw": raw,
                            "extra": extra})
        out = out.with_columns(line=_line(), speaker_key=key).drop("spk", "raw", "extra")
        if len(self.summary.opening) < KEY_MESSAGES:  # the session's key reads its first interactions
            said = out.filter(pl.col("kind") != "system")["line"].head(KEY_MESSAGES)  # system lines are not identity
            self.summary.open_with(orjson.loads(line) for line in said)
        return out

    def rows(self, interactions: pl.DataFrame) -> TurnRows:
        """These interactions as turn rows (what the audit datasets hold of each interaction)."""
        return TurnRows(interactions.drop("line", "time_raw"), self.speaker_fields())

    def speaker_fields(self) -> dict[str, dict[str, Any]]:
        """Each speaker key's fields as the turns table reads them (``TurnRows.speakers``)."""
        return {k: {**v.entry, "modelSource": v.source} for k, v in self.speakers.items()}


    # -- speakers --------------------------------------------------------------------------

    def _speakers(self, frame: pl.DataFrame, names: pl.Series, base: int, redactions: list
                  ) -> tuple[pl.Series, pl.Series]:
        """``names``: each turn's key in the speaker table (its speaker, and model when it names one)."""
        models = frame["model"] if "model" in frame.columns else pl.Series([None] * frame.height, dtype=pl.Utf8)
        firsts = (pl.DataFrame({"key": names, "speaker": frame["speaker"], "model": models})
                  .with_row_index("at").group_by("key", maintain_order=True).agg(pl.all().first()))
        for key, at, name, model in firsts.select("key", "at", "speaker", "model").iter_rows():
            if key not in self.speakers:
                self.speakers[key] = self._speaker(name, model, base + at, redactions)
        table = self.speakers
        keys = list(table)
        counts = names.value_counts()
        unknown = self.summary.unknown
        for name, n in counts.iter_rows():
            model = table[name].entry["model"]
            for f in ("provider", "name", "version"):
                unknown[f] += n if model[f] == "unknown" else 0
        spk = names.replace_strict(keys, [table[k].piece for k in keys], return_dtype=pl.Utf8)
        raw = names.replace_strict(keys, [table[k].raw for k in keys], return_dtype=pl.Utf8)
        return spk, raw

    def _speaker(self, name: str, model_json: str | None, at: int, redactions: list) -> _Speaker:
        scrubbed, found = self.ctx.redactor.scrub(name)  # a name may hold a key: it is shown in every turn
        redactions.extend((at + 1, 0, {"turn": at + 1, "type": k, "field": "speakerName"}) for k in found)
        model = ModelRef(*orjson.loads(model_json)) if model_json is not None else None
        notes: list[str] = []
        entry = _speaker_entry(self.ctx, scrubbed, model, True, notes)
        self.summary.name_notes.extend(notes)
        piece = orjson.dumps({"speakerName": entry["speakerName"], "model": entry["model"],
                              "modelSource": model_source(model, True), "speaker": entry["speaker"]})
        raw = orjson.dumps({k: entry[k] for k in ("speakerNameRaw", "modelRaw") if k in entry})
        self.checked.append({"at": at, "speakerName": entry["speakerName"], "model": entry["model"],
                             "speaker": entry["speaker"]})
        return _Speaker("," + piece[1:-1].decode(), ("," + raw[1:-1].decode()) if len(raw) > 2 else "", entry,
                        model_source(model, True), at, notes, found)

    # -- content, extras, facts ------------------------------------------------------------

    def _content(self, content: pl.Series, base: int, redactions: list) -> pl.Series:
        redactor = self.ctx.redactor
        if redactor.policy != "off" and len(content):
            pattern = triggers() + (f"|{pii_triggers()}" if redactor.pii else "")
            hits = content.str.contains(pattern).fill_null(False).arg_true()
            if len(hits):
                values = []
                for i, text in zip(hits.to_list(), content.gather(hits).to_list(), strict=True):
                    text, found = redactor.scrub(text)
                    values.append(text)
                    redactions.extend((base + i + 1, 1, {"turn": base + i + 1, "type": k, "field": "content"})
                                      for k in found)
                content = content.scatter(hits, pl.Series(values, dtype=pl.Utf8))
        limit = self.ctx.settings.max_turn_chars
        long = content.str.len_chars() > limit
        if long.any():
            self.summary.truncated += int(long.sum())
            content = pl.select(pl.when(long).then(content.str.slice(0, limit)).otherwise(content)).to_series()
        return content

    def _extras(self, frame: pl.DataFrame, base: int, redactions: list) -> tuple[pl.Series, dict[int, Any]]:
        """Source fields: scrubbed, time keys renamed, encoded (rows with extra fields only)."""
        extra = frame["extra"]
        rows = extra.is_not_null().arg_true()
        scrubbed: dict[int, Any] = {}
        if not len(rows):
            return extra, scrubbed
        encoded = []
        for i, text in zip(rows.to_list(), extra.gather(rows).to_list(), strict=True):
            found: list[str] = []
            value = self.ctx.redactor.scrub_tree(orjson.loads(text), found)
            scrubbed[i] = value
            fields = raw_time_keys(value)
            encoded.append(orjson.dumps(fields).decode())
            self.checked.append({"at": base + i, "sourceFields": fields})
            redactions.extend((base + i + 1, 2, {"turn": base + i + 1, "type": k, "field": "sourceFields"})
                              for k in found)
        return extra.scatter(rows, pl.Series(encoded, dtype=pl.Utf8)), scrubbed

    def _facts(self, frame: pl.DataFrame, content: pl.Series, scrubbed: dict[int, Any], base: int) -> None:
        """``Facts.observe`` on the turns that may hold a fact, in order."""
        words = "|".join(re.escape(w) for w in _FACT_WORDS)
        test = (content.str.contains(words) | frame["extra"].is_not_null() | (frame["role"] == "tool")
                | frame["kind"].is_in(["tool_call", "tool_result"]))
        rows = test.fill_null(False).arg_true().to_list()
        if not rows:
            return
        roles, kinds, names = frame["role"], frame["kind"], frame["speaker"]
        seen = [(base + i + 1, roles[i], kinds[i], names[i], content[i], scrubbed.get(i)) for i in rows]
        if self.facts is not None:
            self.facts.extend(seen)
            return
        observe = self.summary.facts.observe
        for row in seen:
            observe(*row)

    # -- times ------------------------------------------------------------------------------

    def _dates(self, frame: pl.DataFrame) -> pl.Series:
        """UTC ``YYYY-MM-DDTHH:mm:ssZ`` of the naive times in the source zone; null when unreadable."""
        offset = frame["offset"] if "offset" in frame.columns else None
        date, naive, unreadable = utc_dates(frame["time"], offset, frame["time_raw"], self.ctx.zone)
        s = self.summary
        s.naive_times += int(naive.sum())
        s.unreadable_times += int(unreadable.sum())
        s.unknown["turnsWithoutTime"] += int(date.null_count())
        if date.null_count() < len(date):
            s.saw_date(date.min())
        return date


def utc_dates(time: pl.Series, offset: pl.Series | None, time_raw: pl.Series, zone
              ) -> tuple[pl.Series, pl.Series, pl.Series]:
    """(UTC ``YYYY-MM-DDTHH:mm:ssZ`` of each time, null when there is none or it is unreadable; which
    times are naive; which are unreadable) as ``assemble._interactions`` reads each turn's time: a
    naive wall time is in ``zone``, one with an ``offset`` (seconds) is at that offset."""
    if zone.key == "UTC":
        utc = time.dt.replace_time_zone("UTC")
    else:
        utc = (time.dt.replace_time_zone(zone.key, ambiguous="earliest", non_existent="null")
               .dt.convert_time_zone("UTC"))
    naive = time.is_not_null()
    if offset is not None:  # times the source gives with a zone: wall time minus its offset
        aware = offset.is_not_null()
        fixed = pl.select(time - pl.duration(seconds=offset.fill_null(0))).to_series()
        fixed = fixed.dt.replace_time_zone("UTC")
        utc = pl.select(pl.when(aware).then(fixed).otherwise(utc)).to_series()
        naive = naive & ~aware
    year = utc.dt.year()
    date = pl.select(pl.when((year >= MIN_YEAR) & (year <= MAX_YEAR)).then(utc.dt.strftime(_ISO))).to_series()
    gaps = (naive & utc.is_null()).arg_true()
    if len(gaps):  # in a DST gap: Python's reading (the offset before the change)
        values = [to_utc_z(t.replace(tzinfo=zone), UTC) for t in time.gather(gaps).to_list()]
        date = date.scatter(gaps, pl.Series(values, dtype=pl.Utf8))
    unreadable = (time.is_not_null() & date.is_null()) | (time.is_null() & (time_raw.str.len_bytes() > 0))
    return date, naive, unreadable.fill_null(False)


@dataclass(slots=True)
class TurnRows:
    """A session's interaction rows as columns, kept from assembly so the audit datasets need not
    read the document back. ``frame()`` has the turns table's columns that come from the document
    (flows/datasets.py adds output path, session id and provenance)."""

    columns: pl.DataFrame | pl.LazyFrame  # lazy: a streamed session's row pieces, scanned
    speakers: dict[str, dict[str, Any]]

    def frame(self) -> pl.DataFrame | pl.LazyFrame:
        keys = list(self.speakers)

        def field(get) -> pl.Expr:
            return pl.col("speaker_key").replace_strict(keys, [get(self.speakers[k]) for k in keys],
                                                        return_dtype=pl.Utf8)

        c = pl.col
        return self.columns.select(
            c("ordinal"), c("role"), c("kind"), field(lambda e: e["speakerName"]).alias("speaker_name"),
            field(lambda e: e["model"]["provider"]).alias("provider"),
            field(lambda e: e["model"]["name"]).alias("model_name"),
            field(lambda e: e["model"]["version"]).alias("model_version"),
            field(lambda e: e["modelSource"]).alias("model_source"), field(lambda e: e["speaker"]).alias("speaker"),
            c("date"), c("content"),
            pl.concat_str(pl.lit("["), c("line_start").cast(pl.Utf8), pl.lit(","), c("line_end").cast(pl.Utf8),
                          pl.lit("]")).alias("source_lines"),
        )

def _speaker_keys(frame: pl.DataFrame) -> pl.Series:
    """Each turn's key in the speaker table: its speaker, and its model (the optional ``model``
    column, ``parsers.columns.MODEL``) when it names one."""
    if "model" not in frame.columns:
        return frame["speaker"]
    return frame.select(pl.when(pl.col("model").is_null()).then(pl.col("speaker"))
                        .otherwise(pl.concat_str(pl.col("speaker"), pl.lit("\x1f"), pl.col("model")))).to_series()


def _line(source: list[pl.Expr] | None = None) -> pl.Expr:
    """One interaction's JSON line, keys in the dict path's order; ``source``: the pieces of its
    ``"source"`` value (default: its line span)."""
    c = pl.col
    if source is None:
        source = [pl.lit('{"lines":['), c("line_start").cast(pl.Utf8), pl.lit(","), c("line_end").cast(pl.Utf8),
                  pl.lit("]}")]
    return pl.concat_str(
        pl.lit('{"ordinal":'), c("ordinal").cast(pl.Utf8), pl.lit(',"role":'), json_string(c("role")),
        pl.lit(',"kind":'), json_string(c("kind")), c("spk"),
        _optional("date", pl.concat_str(pl.lit('"'), c("date"), pl.lit('"'))),
        _optional("dateRaw", json_string(c("time_raw"))),
        pl.lit(',"content":'), json_string(c("content")), pl.lit(',"source":'), *source,
        c("raw"), _optional("sourceFields", c("extra")), pl.lit("}"),
    )


def lines_bytes(interactions: pl.DataFrame, first: bool) -> bytes:
    """The encoded lines of these interactions as they follow the head (``encode.join_lines``).
    Written by polars straight to bytes (a CSV of one unquoted column is the lines themselves): no
    Python string of the whole body is ever made."""
    if not interactions.height:
        return b""
    buffer = io.BytesIO()
    last = pl.int_range(pl.len()) == pl.len() - 1
    interactions.select(pl.when(last).then(pl.col("line")).otherwise(pl.col("line") + ",")).write_csv(
        buffer, include_header=False, quote_style="never")
    body = buffer.getbuffer()
    return (b"\n" if first else b",\n") + bytes(body[:-1])  # the CSV's final line end is not the document's
