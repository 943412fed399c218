"""The validation gate (P-RECONSTRUCT): a document passes, passes as partial, or is quarantined.

Checks, all run, every failure collected with a reason code (the gate never stops at the first):

1. JSON syntax: the bytes to be written are UTF-8, LF only, one JSON object and nothing else.
2. Speaker: every ``speaker`` fully matches ``^[^()]+ \\([^:]+:[^@]+@[^)]+\\)$`` and mirrors
   ``speakerName`` and ``model``; every model field is a non-empty string.
3. Turn count: interactions equal the independent source turn count, or the history carries
   ``coverage: "partial"`` with a ``coverageReason``. Source accounting (validators.accounting):
   whatever of the source lies in no interaction and no declared region is named in that reason
   with the code ``unaccounted_source``.
4. Timestamps: ``createdAt``, every ``date`` and every key named like a time is
   ``YYYY-MM-DDTHH:mm:ssZ`` and a real calendar instant (keys holding raw source values are exempt).
5. Schema: the document validates against models.document.SessionDocument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson
import polars as pl
import regex
from pydantic import ValidationError

from models.document import ISO_Z_PATTERN, SPEAKER_PATTERN, Interaction, SessionDocument
from models.errors import Reason

from .accounting import Accounting

SPEAKER = regex.compile(SPEAKER_PATTERN)
ISO_Z = regex.compile(ISO_Z_PATTERN)
CHECKS = ("jsonSyntax", "speakerRegex", "turnCount", "sourceAccounting", "timestamps", "schema")
_CHECK_OF = {
    Reason.JSON_SYNTAX: "jsonSyntax",
    Reason.SPEAKER_FORMAT: "speakerRegex",
    Reason.SPEAKER_MIRROR: "speakerRegex",
    Reason.MODEL_FIELD: "speakerRegex",
    Reason.TURN_COUNT: "turnCount",
    Reason.UNACCOUNTED_SOURCE: "sourceAccounting",
    Reason.TIMESTAMP_FORMAT: "timestamps",
    Reason.SCHEMA: "schema",
    Reason.SNAPSHOT_MERGE: "snapshotMerge",  # validators/snapshots.py, on merged documents only
}
MAX_LISTED = 50


@dataclass(frozen=True, slots=True)
class GateFailure:
    reason: Reason
    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason.value, "path": self.path, "message": self.message}


@dataclass(slots=True)
class GateResult:
    failures: list[GateFailure] = field(default_factory=list)
    partial: bool = False
    accounted: bool = True

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def reasons(self) -> list[str]:
        return sorted({f.reason.value for f in self.failures})

    def summary(self) -> dict[str, str]:
        """Each check's result; source accounting that found gaps (and said so) is ``partial``."""
        failed = {_CHECK_OF[f.reason] for f in self.failures}
        out = {c: ("fail" if c in failed else "pass") for c in CHECKS}
        if not self.accounted and out["sourceAccounting"] == "pass":
            out["sourceAccounting"] = "partial"
        return out


@lru_cache(maxsize=4096)
def is_timestamp_key(key: str) -> bool:
    k = key.lower()
    if "raw" in k:
        return False
    return k in ("date", "timestamp") or key.endswith(("At", "Date", "Timestamp"))


def valid_instant(value: Any) -> bool:
    if not (isinstance(value, str) and ISO_Z.fullmatch(value)):
        return False
    try:
        datetime.fromisoformat(value[:-1])
    except ValueError:
        return False
    return True


class _Collector:
    def __init__(self) -> None:
        self.failures: list[GateFailure] = []
        self.counts: dict[Reason, int] = {}

    def add(self, reason: Reason, path: str, message: str) -> None:
        n = self.counts.get(reason, 0) + 1
        self.counts[reason] = n
        if n <= MAX_LISTED:
            self.failures.append(GateFailure(reason, path, message))
        elif n == MAX_LISTED + 1:
            self.failures.append(GateFailure(reason, path, f"more {reason.value} failures not listed"))

    def merge(self, other: _Collector) -> None:
        """Add what another collector found after this one (the next range of a session): its
        listed failures again, then its unlisted ones counted."""
        listed: dict[Reason, int] = {}
        for f in other.failures:
            if listed.get(f.reason, 0) < MAX_LISTED:
                listed[f.reason] = listed.get(f.reason, 0) + 1
                self.add(f.reason, f.path, f.message)
        for reason, n in other.counts.items():
            for _ in range(n - listed.get(reason, 0)):
                self.add(reason, "$", "")


ISO_Z_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def bad_instant(values: pl.Expr) -> pl.Expr:
    """Where a column of times holds a value ``valid_instant`` refuses (nulls are no value): one
    expression over the column. polars' parser takes what ``datetime`` does not (year 0, second 60):
    those are refused by position, the format being fixed."""
    parsed = values.str.strptime(pl.Datetime, ISO_Z_FORMAT, strict=False)
    good = (values.str.contains(ISO_Z_PATTERN) & parsed.is_not_null()
            & (values.str.slice(0, 4) != "0000") & (values.str.slice(17, 2) != "60"))
    return values.is_not_null() & ~good.fill_null(False)


def _names_a_time(text: bytes) -> bool:
    """Whether orjson's text of an object holds a key ``is_timestamp_key`` may accept: one ending in
    ``At":``, or in ``date":`` or ``timestamp":`` in any case (orjson escapes only quotes, backslashes
    and control characters, and no other character lower-cases to these ASCII letters)."""
    if b'At":' in text:
        return True
    lower = text.lower()
    return b'date":' in lower or b'timestamp":' in lower


def _may_hold_times(doc: dict[str, Any]) -> bool:
    """Whether ``_walk_times`` of ``doc`` (``createdAt`` aside) could find anything: False only when no key
    named like a time is in its envelope's JSON text (the history's interactions, which the walk skips,
    left out). A document the text cannot show (not a plain envelope, or not serialisable) is walked."""
    artifacts = doc.get("artifacts")
    history = artifacts.get("Chatthistorik") if isinstance(artifacts, dict) else None
    if not isinstance(history, dict):
        return True
    shown = {k: v for k, v in doc.items() if k != "createdAt"}
    shown["artifacts"] = {**artifacts, "Chatthistorik": {**history, "interactions": []}}
    try:
        text = orjson.dumps(shown)
    except TypeError:
        return True
    return _names_a_time(text)


def _walk_times(node: Any, path: str, out: _Collector) -> None:
    """Every key named like a time under ``node`` (the interactions aside) holds a valid instant.
    Runs for every interaction's source fields: paths are built only where needed."""
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(v, (dict, list)):
                if v is not None and is_timestamp_key(k) and not valid_instant(v):
                    out.add(Reason.TIMESTAMP_FORMAT, f"{path}.{k}", f"{v!r} is not YYYY-MM-DDTHH:mm:ssZ")
            elif k != "interactions":
                _walk_times(v, f"{path}.{k}", out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, (dict, list)):
                _walk_times(v, f"{path}[{i}]", out)


FULL_PARSE_LIMIT = 64 * 1024 * 1024


def _check_syntax(encoded: bytes, out: _Collector) -> None:
    """Up to FULL_PARSE_LIMIT bytes the document is parsed back; above it (a session of a million
    turns) it is checked as UTF-8 with its object delimiters, since orjson serialised one dict."""
    if encoded.startswith(b"\xef\xbb\xbf"):
        out.add(Reason.JSON_SYNTAX, "$", "starts with a BOM")
    if b"\r" in encoded:
        out.add(Reason.JSON_SYNTAX, "$", "contains CR characters")
    stripped = encoded.strip()
    if not (stripped.startswith(b"{") and stripped.endswith(b"}")):
        out.add(Reason.JSON_SYNTAX, "$", "not a single clean JSON object")
    if len(encoded) > FULL_PARSE_LIMIT:
        try:
            encoded.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.add(Reason.JSON_SYNTAX, "$", f"not UTF-8: {exc}")
        return
    try:
        if not isinstance(orjson.loads(encoded), dict):
            out.add(Reason.JSON_SYNTAX, "$", "root is not an object")
    except orjson.JSONDecodeError as exc:
        out.add(Reason.JSON_SYNTAX, "$", f"invalid JSON or UTF-8: {exc}")


_INTERACTION_KEYS = set(Interaction.model_fields)
_ROLES = {"user", "assistant", "system", "tool", "other"}
_MODEL_SOURCES = {"explicit", "session-default", "none"}


def _check_interactions(interactions: list[Any], out: _Collector) -> None:
    """Per-interaction checks, written out rather than through pydantic: a session can hold a
    million interactions and these cost a few attribute look-ups each."""
    seen: set[tuple] = set()
    for i, it in enumerate(interactions):
        where = f"$.artifacts.Chatthistorik.interactions[{i}]"
        if not isinstance(it, dict):
            out.add(Reason.SCHEMA, where, "not an object")
            continue
        if it.get("ordinal") != i + 1:
            out.add(Reason.SCHEMA, f"{where}.ordinal", f"{it.get('ordinal')!r}, expected {i + 1}")
        if it.get("role") not in _ROLES:
            out.add(Reason.SCHEMA, f"{where}.role", f"{it.get('role')!r} is not one of {sorted(_ROLES)}")
        if not isinstance(it.get("content"), str) or not isinstance(it.get("kind"), str):
            out.add(Reason.SCHEMA, where, "content and kind must be strings")
        if not isinstance(it.get("source"), dict) or it.get("modelSource") not in _MODEL_SOURCES:
            out.add(Reason.SCHEMA, where, "source must be an object and modelSource explicit|session-default|none")
        if not it.keys() <= _INTERACTION_KEYS:
            out.add(Reason.SCHEMA, where, f"unexpected keys {sorted(it.keys() - _INTERACTION_KEYS)}")
        name, model, speaker = it.get("speakerName"), it.get("model"), it.get("speaker")
        date = it.get("date")
        if date is not None and not valid_instant(date):
            out.add(Reason.TIMESTAMP_FORMAT, f"{where}.date", f"{date!r} is not YYYY-MM-DDTHH:mm:ssZ")
        extra = it.get("sourceFields")
        if extra:
            _walk_times(extra, f"{where}.sourceFields", out)
        if isinstance(model, dict):
            key = (name, speaker, model.get("provider"), model.get("name"), model.get("version"))
            if key in seen:  # same speaker fields as an earlier turn: already checked
                continue
            seen.add(key)
        _check_speaker(where, name, model, speaker, out)


def _check_speaker(where: str, name: Any, model: Any, speaker: Any, out: _Collector) -> None:
    """The speaker fields of one interaction: non-empty strings, the regex, the mirror."""
    fields = [model.get(f) if isinstance(model, dict) else None for f in ("provider", "name", "version")]
    if not (isinstance(name, str) and name.strip()):
        out.add(Reason.MODEL_FIELD, f"{where}.speakerName", f"must be a non-empty string, got {name!r}")
    for f, v in zip(("provider", "name", "version"), fields, strict=True):
        if not (isinstance(v, str) and v.strip()):
            out.add(Reason.MODEL_FIELD, f"{where}.model.{f}", f"must be a non-empty string, got {v!r}")
    if not (isinstance(speaker, str) and SPEAKER.fullmatch(speaker)):
        out.add(Reason.SPEAKER_FORMAT, f"{where}.speaker", f"{speaker!r} fails the speaker regex")
    elif isinstance(name, str) and all(isinstance(v, str) for v in fields):
        expected = f"{name} ({fields[0]}:{fields[1]}@{fields[2]})"
        if speaker != expected:
            out.add(Reason.SPEAKER_MIRROR, f"{where}.speaker", f"{speaker!r} does not mirror {expected!r}")


_COLUMN_CHECKS = (  # (flag, the column its message shows, reason, path under the interaction, message)
    ("badRole", "role", Reason.SCHEMA, ".role", "{!r} is not a role"),
    ("badText", "role", Reason.SCHEMA, "", "content and kind must be strings"),
    ("badDate", "date", Reason.TIMESTAMP_FORMAT, ".date", "{!r} is not YYYY-MM-DDTHH:mm:ssZ"),
)


def _column_failures(interactions: pl.DataFrame, base: int = 0) -> dict[int, list[tuple[Reason, str, str]]]:
    """The column checks of a table of interactions (a ``session`` column, each session's rows together
    and in order; ``base``: the index of each session's first row): by session, (reason, path, message)
    of each check in turn, at most MAX_LISTED of each, in row order."""
    c = pl.col
    marked = interactions.with_columns(
        at=pl.int_range(pl.len()).over("session") + base,
        badRole=(~c("role").is_in(sorted(_ROLES))).fill_null(True),
        badText=c("kind").is_null() | c("content").is_null(),
        badDate=bad_instant(c("date")))
    found: dict[int, list[tuple[Reason, str, str]]] = {}
    where = "$.artifacts.Chatthistorik.interactions[{}]"
    for flag, shown, reason, under, message in _COLUMN_CHECKS:
        rows = marked.filter(c(flag)).group_by("session", maintain_order=True).head(MAX_LISTED)
        for s, at, value in rows.select("session", "at", shown).iter_rows():
            found.setdefault(s, []).append((reason, where.format(at) + under, message.format(value)))
    return found


class SpeakerChecks:
    """``_check_speaker`` once per distinct speaker of a batch (its fields and their types), each session
    given the same failures at its own interaction's path."""

    __slots__ = ("_found",)

    def __init__(self) -> None:
        self._found: dict[tuple, list[tuple[Reason, str, str]]] = {}

    def check(self, where: str, name: Any, model: Any, speaker: Any, out: _Collector) -> None:
        fields = [model.get(f) if isinstance(model, dict) else None for f in ("provider", "name", "version")]
        key = (name, speaker, *fields)
        if not all(v is None or type(v) is str for v in key):  # equal values of other types may print apart
            _check_speaker(where, name, model, speaker, out)
            return
        found = self._found.get(key)
        if found is None:
            probe = _Collector()
            _check_speaker("", name, model, speaker, probe)
            found = self._found[key] = [(f.reason, f.path, f.message) for f in probe.failures]
        for reason, path, message in found:
            out.add(reason, where + path, message)


class FrameCheck:
    """The per-interaction checks over interaction columns (normalizers.columns), chunk by chunk.

    What the columns make true by construction is not checked again (ordinals are a range, keys
    are fixed, strings are strings); roles, kinds and dates are checked as columns, the speaker
    fields once per distinct speaker, source fields per row that has them."""

    def __init__(self, start: int = 0) -> None:
        self.out = _Collector()
        self.count = start  # a range of a session: the index of its first interaction

    def merge(self, other: FrameCheck) -> None:
        """The next range's checks (ranges in order)."""
        self.out.merge(other.out)
        self.count = other.count

    def speaker(self, at: int, entry: dict[str, Any]) -> None:
        """A speaker's fields, checked once where the session first meets it."""
        _check_speaker(f"$.artifacts.Chatthistorik.interactions[{at}]", entry["speakerName"], entry["model"],
                       entry["speaker"], self.out)

    def feed(self, interactions: pl.DataFrame, checked: list[dict[str, Any]],
             speakers: SpeakerChecks | None = None) -> None:
        """The next interactions of the session (``role``, ``kind``, ``content``, ``date`` columns) and
        what the columns cannot say of them (``items``)."""
        found = _column_failures(interactions.with_columns(session=pl.lit(0)), self.count)
        self.count += interactions.height
        for failure in found.get(0, ()):
            self.out.add(*failure)
        self.items(checked, speakers)

    @classmethod
    def batch(cls, interactions: pl.DataFrame, sizes: list[int], checked: list[list[dict[str, Any]]]
              ) -> list[FrameCheck]:
        """One check per session of a batch assembled as one table (``interactions`` with a ``session``
        column, ``sizes[i]`` rows of session ``i`` in order): each column check runs once over the batch,
        its failures given to their sessions."""
        checks, speakers = [cls() for _ in sizes], SpeakerChecks()
        found = _column_failures(interactions)
        for s, (n, items) in enumerate(zip(sizes, checked, strict=True)):
            checks[s].count = n
            for failure in found.get(s, ()):
                checks[s].out.add(*failure)
            checks[s].items(items, speakers)
        return checks

    def items(self, checked: list[dict[str, Any]], speakers: SpeakerChecks | None = None) -> None:
        """What the columns cannot say: each distinct speaker's fields, and source fields (``{"at": i,
        "sourceFields": ...}``); ``speakers``: the checks of the speakers met so far in the batch."""
        where, out = "$.artifacts.Chatthistorik.interactions[{}]", self.out
        speakers = speakers or SpeakerChecks()
        for item in checked:
            at = where.format(item["at"])
            if "sourceFields" in item:
                _walk_times(item["sourceFields"], f"{at}.sourceFields", out)
            else:
                speakers.check(at, item["speakerName"], item["model"], item["speaker"], out)


def check_bytes(encoded: bytes) -> list[GateFailure]:
    """Check 1 alone, on the exact bytes of a whole document (parsed back, up to FULL_PARSE_LIMIT)."""
    out = _Collector()
    _check_syntax(encoded, out)
    return out.failures


class ByteCheck:
    """Check 1 on a document's bytes as they are produced, never parsing the whole document again.

    The document is written as a head, interaction lines and a tail (normalizers.encode). Each
    interaction line is one orjson encoding of one object (or the same bytes built column-wise), so
    its keys are unique and ordered by construction; orjson writes NaN and infinities as ``null`` and
    refuses integers beyond 64 bits and strings that are not UTF-8 (a lone surrogate) before any byte
    is produced (the caller records that as a JSON syntax failure). What can still go wrong
    is checked here: the envelope (head and tail) is parsed back, being small; every piece is
    checked to be UTF-8 without CR; the whole starts with ``{`` and ends with ``}`` and one LF.
    """

    __slots__ = ("_out", "first", "last")

    def __init__(self) -> None:
        self._out = _Collector()
        self.first = b""
        self.last = b""

    def envelope(self, head: bytes, tail: bytes) -> None:
        """Parse the document with no interactions: the skeleton the lines go into, whose head
        opens and whose tail closes the document."""
        self.first, self.last = head[:3], tail[-2:]
        try:
            if not isinstance(orjson.loads(head + tail), dict):
                self._out.add(Reason.JSON_SYNTAX, "$", "root is not an object")
        except orjson.JSONDecodeError as exc:
            self._out.add(Reason.JSON_SYNTAX, "$", f"invalid JSON or UTF-8: {exc}")

    def feed(self, piece: bytes, encoded: bool = False) -> None:
        """One piece of the document, in any order (each whole: never cut inside a UTF-8 sequence).
        ``encoded``: the piece is interaction lines our encoders wrote from strings orjson or Arrow
        already hold as valid UTF-8 (both refuse anything else), so only CR is looked for."""
        if b"\r" in piece and Reason.JSON_SYNTAX not in self._out.counts:
            self._out.add(Reason.JSON_SYNTAX, "$", "contains CR characters")
        if not encoded and not piece.isascii():
            try:
                piece.decode("utf-8")
            except UnicodeDecodeError as exc:
                self._out.add(Reason.JSON_SYNTAX, "$", f"not UTF-8: {exc}")

    def lines(self, lines: pl.Series) -> None:
        """Interaction lines our encoders wrote (see ``feed``), as a column: only CR is looked for."""
        if lines.str.contains("\r", literal=True).any():
            self.feed(b"\r", encoded=True)

    def merge(self, other: ByteCheck) -> None:
        """What another check found in pieces of the same document (a range of its interactions)."""
        self._out.merge(other._out)

    def failures(self) -> list[GateFailure]:
        if self.first.startswith(b"\xef\xbb\xbf"):
            self._out.add(Reason.JSON_SYNTAX, "$", "starts with a BOM")
        if not (self.first.startswith(b"{") and self.last == b"}\n"):
            self._out.add(Reason.JSON_SYNTAX, "$", "not a single clean JSON object")
        return self._out.failures


def _check_accounting(history: dict[str, Any], accounting: Accounting | None, out: _Collector) -> bool:
    """Gate check 3, second half: what the source accounting found unaccounted must be declared
    in the document (partial, with an ``unaccounted_source`` or ``possible_merged_turns`` reason, each
    code of what was found). Returns whether it was clean."""
    if accounting is None or accounting.clean:
        return True
    reason = history.get("coverageReason")
    said = isinstance(reason, str) and all(code.value in reason for code in accounting.codes())
    if history.get("coverage") != "partial" or not said:
        out.add(Reason.UNACCOUNTED_SOURCE, "$.artifacts.Chatthistorik.coverage",
                f"the source is not fully accounted for and the document does not say so: {accounting.reason()}")
    return False


def check(doc: dict[str, Any], encoded: bytes | None, source_turns: int, *, schema: bool = True,
          accounting: Accounting | None = None, frames: FrameCheck | None = None) -> GateResult:
    """Run every check on a document and (when given) the exact bytes that would be written.

    ``accounting`` is the source accounting of the session (validators.accounting), run on the
    source before the document was assembled. ``frames``: the interactions were checked as columns
    (they are encoded apart and the document's list is empty)."""
    out = frames.out if frames is not None else _Collector()
    if encoded is not None:
        _check_syntax(encoded, out)
    artifacts = doc.get("artifacts") if isinstance(doc.get("artifacts"), dict) else {}
    history = artifacts.get("Chatthistorik") if isinstance(artifacts.get("Chatthistorik"), dict) else {}
    interactions = history.get("interactions")
    if not isinstance(interactions, list):
        out.add(Reason.SCHEMA, "$.artifacts.Chatthistorik.interactions", "missing or not a list")
        interactions = []
    if frames is None:
        _check_interactions(interactions, out)
    else:
        interactions = range(frames.count)
    partial = history.get("coverage") == "partial"
    if "coverage" in history and not partial:
        out.add(Reason.TURN_COUNT, "$.artifacts.Chatthistorik.coverage", "the only flag value is 'partial'")
    if partial and not (isinstance(history.get("coverageReason"), str) and history["coverageReason"].strip()):
        out.add(Reason.TURN_COUNT, "$.artifacts.Chatthistorik.coverageReason", "partial without a reason")
    if len(interactions) != source_turns and not partial:
        out.add(Reason.TURN_COUNT, "$.artifacts.Chatthistorik.interactions",
                f"{len(interactions)} interactions for {source_turns} source turns, and no partial flag")
    accounted = _check_accounting(history, accounting, out)
    if not valid_instant(doc.get("createdAt")):
        out.add(Reason.TIMESTAMP_FORMAT, "$.createdAt", f"{doc.get('createdAt')!r} is not YYYY-MM-DDTHH:mm:ssZ")
    if _may_hold_times(doc):
        _walk_times({k: v for k, v in doc.items() if k != "createdAt"}, "$", out)
    if schema:
        try:
            # Interactions were checked above; the envelope goes through the pydantic models.
            envelope = {**doc, "artifacts": {**artifacts, "Chatthistorik": {**history, "interactions": []}}}
            SessionDocument.model_validate(envelope)
        except ValidationError as exc:
            for err in exc.errors()[:MAX_LISTED]:
                loc = "$." + ".".join(str(p) for p in err["loc"])
                out.add(Reason.SCHEMA, loc, err["msg"])
    return GateResult(out.failures, partial, accounted)
