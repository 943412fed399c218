"""The current tables an auditor queries as they are: what they hold and how each is built.

Eight tables, kept under OUT/datasets/current by every run (``audit.publication``: bucketed Parquet
parts and a manifest) so that no manual ``export`` precedes a query:

- ``sessions``: the current documents (``audit.datasets``), with ``platform`` (the folder of the
  document's address: its session key's grammar), ``session_key``, ``title`` (the document's, null
  where its format has none), ``created_at``, ``first_at`` and ``last_at`` (its earliest and latest
  message time) as UTC timestamps, ``status`` and ``flag`` as enums, and ``revisions``;
- ``turns``: their interactions, with ``date`` a UTC timestamp and ``platform``, ``session_key`` and
  ``run_id`` repeated from the session;
- ``quarantine``: every file or session a run failed, with its reason codes, its detail and the
  command that reruns it;
- ``runs``: every run with its status, counts, duration and Prefect flow-run id when the flow recorded one;
- ``reconciliation``: what each snapshot of a session key brought (``audit.datasets.reconciliation``);
- ``revisions``: the revision index of every document path;
- ``links``: the possible links between session keys and a person's latest decision on each (``audit.links``);
- ``terms``: the search index, each word of the contents, speaker names and titles with its documents.

The manifest's stamp says which state of the ledger they hold (the latest run, its end, the revision
count): a reader whose ledger has moved on (a revert, a run that died before publishing) builds the
tables from the ledger instead (``build``), so the files are a cache, never the truth.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

import orjson
import polars as pl

from models.status import DocumentMark, RunStatus, SessionStatus

from . import datasets
from .ledger import Ledger
from .ledger.links import Decision

CURRENT = Path("datasets") / "current"


class Table(StrEnum):
    """The current tables."""

    SESSIONS = "sessions"
    TURNS = "turns"
    QUARANTINE = "quarantine"
    RUNS = "runs"
    RECONCILIATION = "reconciliation"
    REVISIONS = "revisions"
    LINKS = "links"
    TERMS = "terms"


class Quarantined(StrEnum):
    """What a quarantine row is about."""

    FILE = "file"
    SESSION = "session"


TABLES = tuple(t.value for t in Table)
WORD = r"\w+"  # a search term: a run of word characters, lowercased (audit/browse/data.py tokenizes alike)
UTC = pl.Datetime("us", "UTC")
ROW_GROUP = 100_000  # rows per Parquet row group: small enough for a sorted column's lookups to skip most
ISO_Z = "%Y-%m-%dT%H:%M:%SZ"
ORDER = {"sessions": ["output_path"], "turns": ["output_path", "ordinal"], "terms": ["term", "output_path"]}
"""The order of the rows of the tables split into buckets (each bucket, and each copy of the whole)."""


def enum(kind: type[StrEnum]) -> pl.Enum:
    """A column of an enum's values."""
    return pl.Enum([m.value for m in kind])


@dataclass(frozen=True, slots=True)
class Stamp:
    """Which ledger state published tables hold."""

    latest_run: str | None
    finished_at: str | None
    revisions: int

    @classmethod
    def of(cls, ledger: Ledger) -> Stamp:
        run_id = ledger.runs.latest_id()
        run = ledger.runs.get(run_id) if run_id else None
        return cls(run_id, run.finished_at if run else None, ledger.revisions.count())

    def dumps(self) -> bytes:
        return orjson.dumps({"latest_run": self.latest_run, "finished_at": self.finished_at,
                             "revisions": self.revisions})


def _timestamp(column: str) -> pl.Expr:
    return pl.col(column).str.to_datetime(ISO_Z, time_zone="UTC", strict=False).cast(UTC)


def _platform() -> pl.Expr:
    return pl.col("output_path").str.split("/").list.get(1, null_on_oob=True)


@dataclass(frozen=True, slots=True)
class Known:
    """What the ledger says of every document, read once for all the groups of documents a
    publication builds: the parts and revisions (``datasets.Known``), each document's session key
    and its number of revisions."""

    documents: datasets.Known
    keys: pl.DataFrame
    counts: pl.DataFrame

    @classmethod
    def of(cls, out_root: Path, ledger: Ledger) -> Known:
        return cls(datasets.Known.of(out_root, ledger), document_keys(ledger), revision_counts(ledger))


def sessions_and_turns(out_root: Path, ledger: Ledger, problems: list[str] | None = None,
                       only: frozenset[str] | None = None,
                       known: Known | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The current sessions and turns, typed and with the columns an audit asks first (``only``: of
    the documents at these output paths; ``known``: what the ledger says of them, read before)."""
    known = Known.of(out_root, ledger) if known is None else known
    sessions, turns = datasets.tables(out_root, ledger, problems, only, known.documents)
    sessions = typed_sessions(sessions, turns.lazy(), known)
    return sessions, typed_turns(turns.lazy(), sessions).collect().sort("output_path", "ordinal")


def sessions_and_turn_scan(out_root: Path, ledger: Ledger, only: frozenset[str] | None,
                           known: Known) -> tuple[pl.DataFrame, pl.LazyFrame]:
    """The typed sessions and a scan of their turns as the parts hold them: neither read, nor sorted,
    nor yet unique (``datasets.scanned``), for a consumer that takes a large document apart
    (``audit.publication``; ``typed_turns`` gives them their columns)."""
    sessions, turns = datasets.scanned(out_root, ledger, only, known.documents)
    return typed_sessions(sessions, turns, known), turns


def typed_sessions(sessions: pl.DataFrame, turns: pl.LazyFrame, known: Known) -> pl.DataFrame:
    """The sessions typed, with the ledger's columns and their span (the earliest and latest of
    ``turns``, streamed: a turn twice does not change it)."""
    span = (turns.select("output_path", _timestamp("date")).group_by("output_path")
            .agg(first_at=pl.col("date").min(), last_at=pl.col("date").max()).collect(engine="streaming"))
    sessions = (sessions.join(known.keys, on=["output_path", "output_sha256"], how="left")
                .join(span, on="output_path", how="left").join(known.counts, on="output_path", how="left")
                .with_columns(_timestamp("created_at"), _platform().alias("platform"),
                              pl.col("revisions").fill_null(0), pl.col("status").cast(enum(SessionStatus)),
                              pl.col("flag").cast(enum(DocumentMark)))
                .sort("output_path"))
    front = ["output_path", "platform", "session_key", "session_id", "title", "created_at", "first_at", "last_at"]
    return sessions.select(*front, pl.exclude(front))


def typed_turns(turns: pl.LazyFrame, sessions: pl.DataFrame) -> pl.LazyFrame:
    """Turns typed, with the columns repeated from their session (of ``typed_sessions``), in their order."""
    carried = sessions.select("output_path", "platform", "session_key", "run_id").lazy()
    turns = turns.with_columns(_timestamp("date")).join(carried, on="output_path", how="left", maintain_order="left")
    return turns.select("output_path", "platform", "session_key", pl.exclude("output_path", "platform",
                                                                              "session_key"))


def document_keys(ledger: Ledger) -> pl.DataFrame:
    return pl.DataFrame(ledger.sessions.document_keys(), orient="row",
                        schema={"output_path": pl.Utf8, "output_sha256": pl.Utf8, "session_key": pl.Utf8})


def revision_counts(ledger: Ledger) -> pl.DataFrame:
    return revisions(ledger).group_by("output_path").agg(revisions=pl.len().cast(pl.Int64))


def quarantine(ledger: Ledger, out_root: Path) -> pl.DataFrame:
    """Every file or session a run failed: reason codes (a list), detail, and how to rerun it."""
    rows = []
    for run in ledger.runs.recent(limit=-1):
        for q in ledger.quarantine.of_run(run.run_id):
            rows.append({"run_id": run.run_id, "started_at": run.started_at, "what": q.what,
                         "source_key": q.source_key, "source_path": q.source_path, "ordinal": q.ordinal,
                         "session_id": q.session_id, "reasons": sorted(q.reasons), "detail": q.detail,
                         "rerun": f"reconstruct rerun --out {out_root} --run {run.run_id}"})
    schema = {"run_id": pl.Utf8, "started_at": pl.Utf8, "what": enum(Quarantined), "source_key": pl.Utf8,
              "source_path": pl.Utf8, "ordinal": pl.Int64, "session_id": pl.Utf8, "reasons": pl.List(pl.Utf8),
              "detail": pl.Utf8, "rerun": pl.Utf8}
    return pl.DataFrame(rows, schema=schema).with_columns(_timestamp("started_at"))


def runs(ledger: Ledger) -> pl.DataFrame:
    """Every run, newest first: its order (``seq``, 1 the first: two runs may start in the same second),
    status, counts, duration, its inputs and its Prefect flow-run id."""
    rows = []
    found = ledger.runs.recent(limit=-1)
    for i, run in enumerate(found):
        args = orjson.loads(run.args or "{}")
        rows.append({"seq": len(found) - i, **{k: v for k, v in asdict(run).items() if k != "args"},
                     "paths": [str(p) for p in args.get("paths", [])],
                     "prefect_flow_run_id": args.get("prefect_flow_run_id")})
    schema = {"seq": pl.Int64, "run_id": pl.Utf8, "started_at": pl.Utf8, "finished_at": pl.Utf8,
              "status": enum(RunStatus),
              "config_fingerprint": pl.Utf8, "pipeline_version": pl.Utf8, "files": pl.Int64,
              "files_skipped": pl.Int64, "files_quarantined": pl.Int64, "sessions_ok": pl.Int64,
              "sessions_partial": pl.Int64, "sessions_quarantined": pl.Int64, "seconds": pl.Float64,
              "paths": pl.List(pl.Utf8), "prefect_flow_run_id": pl.Utf8}
    return (pl.DataFrame(rows, schema=schema, strict=False)
            .with_columns(_timestamp("started_at"), _timestamp("finished_at")))


def revisions(ledger: Ledger) -> pl.DataFrame:
    schema = {"output_path": pl.Utf8, "rev": pl.Int64, "sha256": pl.Utf8, "note": pl.Utf8, "ts": pl.Utf8,
              "run_id": pl.Utf8}
    return pl.DataFrame(ledger.revisions.history(), schema=schema).with_columns(_timestamp("ts"))


def reconciliation(ledger: Ledger) -> pl.DataFrame:
    table = datasets.reconciliation(ledger)
    return table.with_columns(platform=pl.col("session_key").str.split(":").list.first())


def possible_links(ledger: Ledger) -> pl.DataFrame:
    """The possible links between session keys, each with a person's latest decision (``undecided``
    when none)."""
    rows = [{"key_a": r.a, "key_b": r.b, "evidence": r.evidence, "decision": r.decision}
            for r in ledger.links.possible()]
    schema = {"key_a": pl.Utf8, "key_b": pl.Utf8, "evidence": pl.Utf8, "decision": enum(Decision)}
    return pl.DataFrame(rows, schema=schema)


def terms(turns: pl.LazyFrame, sessions: pl.LazyFrame) -> pl.LazyFrame:
    """The search index: each lowercased word of the contents, speaker names and titles with the
    documents that hold it, sorted by word (so a lookup reads the few row groups whose range holds it)."""
    text = pl.concat_str([pl.col("content"), pl.col("speaker_name")], separator=" ", ignore_nulls=True)
    words = pl.concat([turns.select("output_path", text=text),
                       sessions.select("output_path", text=pl.col("title")).drop_nulls("text")])
    return (words.select("output_path", term=pl.col("text").str.to_lowercase().str.extract_all(WORD))
            .explode("term").drop_nulls("term").unique().sort("term", "output_path").select("term", "output_path"))


def ledger_tables(out_root: Path, ledger: Ledger) -> dict[str, pl.DataFrame]:
    """The tables read from the ledger alone (rewritten whole by each publication: they grow with
    runs and revisions, not with turns)."""
    return {"quarantine": quarantine(ledger, out_root), "runs": runs(ledger),
            "reconciliation": reconciliation(ledger), "revisions": revisions(ledger), "links": possible_links(ledger)}


def build(out_root: Path, ledger: Ledger, problems: list[str] | None = None) -> dict[str, pl.DataFrame]:
    """All the tables, from the ledger and the parts, in memory (the full rebuild)."""
    sessions, turns = sessions_and_turns(out_root, ledger, problems)
    return {"sessions": sessions, "turns": turns, **ledger_tables(out_root, ledger),
            "terms": terms(turns.lazy(), sessions.lazy()).collect()}
