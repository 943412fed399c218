"""Audit datasets: the sessions and turns tables of the documents under OUT/sessions, as polars tables.

One row per session document and one per interaction, with provenance columns (source path,
source sha256, span, grammar, status, output path, the run that last wrote the document), in a
deterministic order (output path, then ordinal).

A run never reads documents back for them: each shard builds the rows of the documents it
writes from the documents themselves (``Rows``), and the run writes them as Parquet *parts*,
``OUT/datasets/parts/<table>/<run id>/<shard>.parquet``, as its shards finish. A part row is keyed
by its document's ``output_path`` and ``output_sha256``, so the rows of given bytes are the same
whichever run wrote them. The tables are the rows of the *current* documents: for each path, the
latest revision in the ledger's index (revert and apply-diff add parts of their own), when the
document is still on disk; ``run_id`` (the latest run that wrote those bytes) and ``flag`` come from
the ledger. A current document without a part row (an output made before parts existed, a part
lost in a crash) is read once, so parts are a cache, never the truth. ``reconstruct export``
compacts the parts into one (``compact_parts``); the tables an auditor reads are ``audit.current``'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from normalizers.columns import TurnRows

if TYPE_CHECKING:
    from .ledger import Ledger

TABLES = ("sessions", "turns")
PARTS = Path("datasets") / "parts"
COMPACTED = "compacted"  # the part export leaves: the current rows of every part it read

SESSION_COLUMNS = {
    "output_path": pl.Utf8, "session_id": pl.Utf8, "title": pl.Utf8, "created_at": pl.Utf8, "status": pl.Utf8,
    "coverage_reason": pl.Utf8, "source_path": pl.Utf8, "source_sha256": pl.Utf8, "source_lines": pl.Utf8,
    "source_pointer": pl.Utf8, "grammar": pl.Utf8, "grammar_version": pl.Utf8, "interactions": pl.Int64,
    "source_turns": pl.Int64, "redactions": pl.Int64, "redaction_types": pl.Utf8, "output_sha256": pl.Utf8,
    "run_id": pl.Utf8, "flag": pl.Utf8,
}
TURN_COLUMNS = {
    "output_path": pl.Utf8, "session_id": pl.Utf8, "ordinal": pl.Int64, "role": pl.Utf8, "kind": pl.Utf8,
    "speaker_name": pl.Utf8, "provider": pl.Utf8, "model_name": pl.Utf8, "model_version": pl.Utf8,
    "model_source": pl.Utf8, "speaker": pl.Utf8, "date": pl.Utf8, "content": pl.Utf8, "source_lines": pl.Utf8,
    "source_pointer": pl.Utf8, "source_path": pl.Utf8, "grammar": pl.Utf8,
}
RECONCILIATION_COLUMNS = {
    "session_key": pl.Utf8, "output_path": pl.Utf8, "source_sha256": pl.Utf8, "source_path": pl.Utf8,
    "expected": pl.Int64, "reconstructed": pl.Int64, "new": pl.Int64, "unchanged": pl.Int64, "absent": pl.Int64,
    "edited": pl.Int64, "run_id": pl.Utf8,
}
# What a part holds: the rows of given bytes (run and flag are the ledger's, looked up when read);
# a turn carries its document's sha256 so that a query can keep the turns of current documents.
LEDGER_COLUMNS = ("run_id", "flag")
PART_COLUMNS = {
    "sessions": {k: v for k, v in SESSION_COLUMNS.items() if k not in LEDGER_COLUMNS},
    "turns": {**TURN_COLUMNS, "output_sha256": pl.Utf8},
}
KEY = ["output_path", "output_sha256"]
_CONSTANTS = ("output_path", "session_id", "source_path", "grammar", "output_sha256")
"""The turns columns a document's rows repeat from its sessions row."""
STAGED = PARTS / "turns" / ".staged"  # streamed documents' turns parts, until the run adopts them
STAGED_SESSIONS = PARTS / "sessions" / ".staged"  # streamed conversations' sessions parts (jsonstream batches)


def session_row(doc: dict[str, Any]) -> dict:
    """A document's sessions row without its key (``output_path``, ``output_sha256``): from the
    envelope alone, so a document whose interactions are columns has one too."""
    arts = doc["artifacts"]
    log, hist, perf = arts["ByggLogg"], arts["Chatthistorik"], arts["ai_protocol_performance"]
    src = log["source"]
    lines = orjson.dumps(src.get("lines")).decode() if src.get("lines") else None
    return {
        "session_id": doc["sessionId"], "title": hist.get("title"), "created_at": doc["createdAt"],
        "status": "partial" if hist.get("coverage") == "partial" else "ok",
        "coverage_reason": hist.get("coverageReason"), "source_path": src["path"],
        "source_sha256": src["sha256"], "source_lines": lines, "source_pointer": src.get("pointer"),
        "grammar": log["grammar"]["id"], "grammar_version": log["grammar"]["version"],
        "interactions": perf["interactionCount"], "source_turns": perf["sourceTurnCount"],
        "redactions": perf["redactions"]["total"],
        "redaction_types": orjson.dumps(perf["redactions"].get("byType") or {}, option=orjson.OPT_SORT_KEYS).decode(),
    }


def turn_columns(session: dict, interactions: list[dict[str, Any]]) -> dict[str, list]:
    """The turns rows of interactions given as dicts, as columns without their key (``session``:
    the document's sessions row, for the columns a turn repeats)."""
    n = len(interactions)
    models = [it["model"] for it in interactions]
    spans = [it["source"] for it in interactions]
    return {
        "session_id": [session["session_id"]] * n, "ordinal": [it["ordinal"] for it in interactions],
        "role": [it["role"] for it in interactions], "kind": [it["kind"] for it in interactions],
        "speaker_name": [it["speakerName"] for it in interactions],
        "provider": [m["provider"] for m in models], "model_name": [m["name"] for m in models],
        "model_version": [m["version"] for m in models],
        "model_source": [it["modelSource"] for it in interactions], "speaker": [it["speaker"] for it in interactions],
        "date": [it.get("date") for it in interactions], "content": [it["content"] for it in interactions],
        "source_lines": [orjson.dumps(s["lines"]).decode() if s.get("lines") else None for s in spans],
        "source_pointer": [s.get("pointer") for s in spans], "source_path": [session["source_path"]] * n,
        "grammar": [session["grammar"]] * n,
    }


@dataclass(slots=True)
class DocumentRows:
    """The dataset rows of one document before it has a path and a sha256, taken from the
    document as it was assembled (never from its bytes): the sessions row and the turns, as lists
    (interactions assembled as dicts) or as a frame of the turns table's columns without the
    document-wide ones (interactions assembled as columns: ``normalizers.columns.TurnRows.frame``)."""

    session: dict
    turns: dict[str, list] | pl.DataFrame

    @classmethod
    def of(cls, doc: dict[str, Any], turn_frame: pl.DataFrame | None = None) -> DocumentRows:
        """The rows of an assembled document (``turn_frame``: its interactions when they are columns;
        else they are the dicts in the document)."""
        session = session_row(doc)
        if turn_frame is not None:
            return cls(session, turn_frame)
        return cls(session, turn_columns(session, doc["artifacts"]["Chatthistorik"]["interactions"]))

    def keyed(self, rel: str, sha256: str) -> tuple[dict, dict[str, list] | pl.DataFrame]:
        """The rows with their key (path and sha256), in the part's columns."""
        session = {"output_path": rel, **self.session, "output_sha256": sha256}
        if isinstance(self.turns, pl.DataFrame):
            return session, self._turn_frame(session)
        n = len(self.turns["ordinal"])
        return session, {"output_path": [rel] * n, **self.turns, "output_sha256": [sha256] * n}

    def _turn_frame(self, session: dict) -> pl.DataFrame:
        lit = {k: pl.lit(session[k], dtype=pl.Utf8)
               for k in ("output_path", "session_id", "source_path", "grammar", "output_sha256")}
        if "source_pointer" not in self.turns.columns:  # line turns: located by lines
            lit["source_pointer"] = pl.lit(None, dtype=pl.Utf8)
        return self.turns.with_columns(**lit).select(pl.col(k).cast(t) for k, t in PART_COLUMNS["turns"].items())


def rows(rel: str, sha256: str, doc: dict[str, Any]) -> tuple[dict, list[dict]]:
    """The sessions row and the turns rows of a document read from its bytes (raises on anything
    that is not one)."""
    session, turns = DocumentRows.of(doc).keyed(rel, sha256)
    return session, [dict(zip(turns, values, strict=True)) for values in zip(*turns.values(), strict=True)]


@dataclass(slots=True)
class StreamedRows:
    """A streamed session's interaction rows, written by its ranges as they read: Arrow IPC pieces
    of ``TurnRows.columns`` in order (a list per range), and the session's speaker table they refer to."""

    pieces: list[list[Path]]
    """Each range's pieces."""
    speakers: dict[str, dict[str, Any]]

    def files(self) -> list[Path]:
        return [p for group in self.pieces for p in group]

    def discard(self) -> None:
        for piece in self.files():
            piece.unlink(missing_ok=True)


class Rows:
    """The dataset rows of the documents one shard wrote, in the order written."""

    def __init__(self) -> None:
        self.sessions: list[dict] = []
        self.turns: dict[str, list] = {k: [] for k in PART_COLUMNS["turns"]}
        self._frames: list[pl.DataFrame] = []  # turns of earlier documents, once a frame came
        self._keyed: list[tuple[pl.DataFrame, dict]] = []  # column turns waiting for their keys, in order
        self.staged: list[Path] = []
        """Turns parts of streamed documents, written by the worker, adopted by the run (``adopt``)."""

    def add(self, rel: str, sha256: str, doc: DocumentRows) -> None:
        if isinstance(doc.turns, pl.DataFrame):  # keyed with the others at once: a frame per call costs
            session = {"output_path": rel, **doc.session, "output_sha256": sha256}  # more than its rows
            self.sessions.append(session)
            self._flush_lists()
            self._keyed.append((doc.turns, session))
            return
        session, turns = doc.keyed(rel, sha256)
        self.sessions.append(session)
        self._flush_keyed()
        for k, column in self.turns.items():
            column.extend(turns[k])

    def _flush_lists(self) -> None:
        if self.turns["ordinal"]:
            self._frames.append(self._listed())
            self.turns = {k: [] for k in PART_COLUMNS["turns"]}

    def _flush_keyed(self) -> None:
        """The waiting column turns as one frame, each document's key and constants added as columns."""
        if not self._keyed:
            return
        own = [k for k in PART_COLUMNS["turns"] if k not in _CONSTANTS]
        # one call for the shard's documents, whatever their mix (line turns have no source pointer: null)
        turns = pl.concat([f for f, _ in self._keyed], how="diagonal_relaxed")
        if "source_pointer" not in turns.columns:
            turns = turns.with_columns(source_pointer=pl.lit(None, dtype=pl.Utf8))
        turns = turns.select(own)
        counts = [f.height for f, _ in self._keyed]
        constants = {k: pl.Series(k, [s[k] for (_, s), n in zip(self._keyed, counts, strict=True) for _ in range(n)],
                                  dtype=pl.Utf8) for k in _CONSTANTS}
        self._frames.append(turns.with_columns(**constants)
                            .select(pl.col(k).cast(t) for k, t in PART_COLUMNS["turns"].items()))
        self._keyed = []

    def _listed(self) -> pl.DataFrame:
        return pl.DataFrame(self.turns, schema=PART_COLUMNS["turns"])

    def add_streamed(self, out_root: Path, rel: str, sha256: str, envelope: dict[str, Any],
                     streamed: StreamedRows) -> None:
        """A streamed document: its sessions row from its envelope, its turns from the row pieces its
        ranges wrote as they read, one staged part per range (memory bounded by a range, whatever
        the session's size); the pieces are removed and the document is never read back."""
        session = {"output_path": rel, **session_row(envelope), "output_sha256": sha256}
        stem = f".{hashlib.sha256(rel.encode()).hexdigest()[:16]}.{sha256[:16]}"
        (out_root / STAGED).mkdir(parents=True, exist_ok=True)
        constants = {"output_path": rel, "session_id": session["session_id"], "source_pointer": None,
                     "source_path": session["source_path"], "grammar": session["grammar"], "output_sha256": sha256}
        staged: list[Path] = []
        try:
            for i, group in enumerate([g for g in streamed.pieces if g] or [[]]):
                staged.append(out_root / STAGED / f"{stem}.{i:05d}.parquet.tmp")
                _range_part(group, streamed.speakers, constants, staged[-1])
        except BaseException:
            for path in staged:
                path.unlink(missing_ok=True)
            raise
        finally:
            streamed.discard()
        self.sessions.append(session)
        self.staged.extend(staged)

    def discard(self) -> None:
        for path in self.staged:
            path.unlink(missing_ok=True)
        self.staged.clear()

    def take(self) -> dict[str, pl.DataFrame]:
        """``frames``, the rows then emptied (the streamed documents' staged parts stay listed): a shard
        writes its rows out a batch at a time instead of holding them all (flows/core/shard.py)."""
        frames = self.frames()
        self.sessions, self._frames = [], []
        self.turns = {k: [] for k in PART_COLUMNS["turns"]}
        return frames

    def frames(self) -> dict[str, pl.DataFrame]:
        """The rows as part frames (compact to send from a worker: columns, not dicts)."""
        self._flush_keyed()
        turns = [*self._frames, self._listed()]
        return {"sessions": pl.DataFrame(self.sessions, schema=PART_COLUMNS["sessions"]),
                "turns": turns[0] if len(turns) == 1 else pl.concat(turns, how="vertical")}


def _range_part(pieces: list[Path], speakers: dict[str, dict[str, Any]], constants: dict[str, Any],
                target: Path) -> None:
    """The turns part of one range of a streamed document, from its row pieces."""
    columns = PART_COLUMNS["turns"]
    if not pieces:
        pl.DataFrame(schema=columns).write_parquet(target)
        return
    frame = TurnRows(pl.concat([pl.read_ipc(p) for p in pieces]), speakers).frame()
    frame = frame.with_columns(pl.lit(v, pl.Utf8).alias(k) for k, v in constants.items())
    # lz4: a third less work than the parts' zstd, for parts as large as a chat of millions of turns
    frame.select(pl.col(k).cast(t) for k, t in columns.items()).write_parquet(target, compression="lz4")


@dataclass(slots=True)
class BatchParts:
    """The dataset rows of a batch of streamed documents (a JSON export's conversations), staged
    by the worker that wrote the documents: a sessions part and a turns part, the documents' keys
    as the worker named them (in order) and each document's number of turns. The shard, which
    settles names and refuses documents, keeps or rewrites them (``settle``)."""

    sessions: Path
    turns: Path
    keys: list[tuple[str, str]]
    counts: list[int]

    def files(self) -> list[Path]:
        """Turns first: the run adopts them in this order (a sessions row never precedes its turns)."""
        return [self.turns, self.sessions]

    def discard(self) -> None:
        for path in self.files():
            path.unlink(missing_ok=True)


def batch_paths(out_root: Path, stem: str) -> tuple[Path, Path]:
    """(sessions, turns) staged part files of the batch ``stem`` (so a shard can remove the parts
    of a batch whose worker was lost)."""
    return (out_root / STAGED_SESSIONS / f".{stem}.parquet.tmp", out_root / STAGED / f".{stem}.parquet.tmp")


def write_batch(out_root: Path, stem: str, documents: list[tuple[str, str, DocumentRows]]) -> BatchParts | None:
    """Stage the rows of a batch's documents ((path, sha256, rows) each, as the worker names them);
    None without documents. Nothing is left behind when the write fails."""
    if not documents:
        return None
    found = Rows()
    for rel, sha, doc in documents:
        found.add(rel, sha, doc)
    frames = found.frames()
    parts = BatchParts(*batch_paths(out_root, stem), [(rel, sha) for rel, sha, _ in documents],
                       [_turn_count(doc) for _, _, doc in documents])
    try:
        _stage(frames["sessions"], parts.sessions)
        _stage(frames["turns"], parts.turns)
    except BaseException:
        parts.discard()
        raise
    return parts


def _turn_count(doc: DocumentRows) -> int:
    return doc.turns.height if isinstance(doc.turns, pl.DataFrame) else len(doc.turns["ordinal"])


def _stage(frame: pl.DataFrame, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # lz4: a third less work than zstd, on a worker that has the next batch to read
    frame.write_parquet(target, compression="lz4")


def settle(parts: BatchParts, landed: list[tuple[str, str] | None]) -> list[Path]:
    """The staged files of a batch once the shard has emitted its documents (``landed``: each
    document's final path and sha256, in the worker's order, or None when it was not written: a
    duplicate id, the mass latch). Parts whose keys all stand are kept as written; otherwise the
    rows of documents not written are dropped and the others re-keyed; nothing is kept when no
    document was written."""
    if landed == parts.keys:
        return parts.files()
    if all(key is None for key in landed):
        parts.discard()
        return []
    kept = [key for key in landed if key is not None]
    mask = [key is not None for key in landed]
    try:
        sessions = pl.read_parquet(parts.sessions).filter(pl.Series(mask))
        _stage(sessions.with_columns(_keys(kept, [1] * len(kept))), parts.sessions)
        rows = [keep for keep, n in zip(mask, parts.counts, strict=True) for _ in range(n)]
        turns = pl.read_parquet(parts.turns).filter(pl.Series(rows, dtype=pl.Boolean))
        counts = [n for n, keep in zip(parts.counts, mask, strict=True) if keep]
        _stage(turns.with_columns(_keys(kept, counts)), parts.turns)
    except BaseException:
        parts.discard()
        raise
    return parts.files()


def _keys(keys: list[tuple[str, str]], counts: list[int]) -> list[pl.Series]:
    """The key columns of documents ``keys`` holding ``counts`` rows each."""
    return [pl.Series(name, [key[i] for key, n in zip(keys, counts, strict=True) for _ in range(n)], pl.Utf8)
            for i, name in enumerate(KEY)]


def _write_frame(frame: pl.DataFrame, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")  # readers never see a half-written part
    frame.write_parquet(tmp)
    tmp.replace(target)
    return target


def part_name(first_key: str) -> str:
    """A shard's part file name: from its first source key, so the same shard plan names it alike."""
    return hashlib.sha256(first_key.encode()).hexdigest()[:16] + ".parquet"


def write_part(out_root: Path, run_id: str, name: str, frames: dict[str, pl.DataFrame]) -> list[Path]:
    """Write a shard's (or a revert's) rows as parts of the run ``run_id``; nothing when empty."""
    if frames["sessions"].is_empty():
        return []
    return [_write_frame(frames[t], out_root / PARTS / t / run_id / name) for t in TABLES]


def adopt(out_root: Path, run_id: str, staged: list[str]) -> None:
    """Move the staged parts of streamed documents into the run's parts (after the ledger has
    their documents, as for every part): turns parts before sessions parts, so that a crash in
    between leaves turns without their sessions row, which the tables read again."""
    for name in sorted(staged, key=lambda n: Path(n).parent.parent.name == "sessions"):
        path = Path(name)
        target = out_root / PARTS / path.parent.parent.name / run_id / path.name[1:-len(".tmp")]
        target.parent.mkdir(parents=True, exist_ok=True)
        path.replace(target)


def _part_files(out_root: Path, table: str) -> list[Path]:
    base = out_root / PARTS / table
    return sorted(p for p in base.rglob("*.parquet") if not p.name.startswith(".")) if base.is_dir() else []


def _read_parts(files: list[Path], table: str, only: frozenset[str] | None = None) -> pl.DataFrame:
    """The rows of the parts that hold the table's columns, read (``_scan_parts``)."""
    return _scan_parts(files, table, only).collect()


def _scan_parts(files: list[Path], table: str, only: frozenset[str] | None = None) -> pl.LazyFrame:
    """A scan of the rows of the parts that hold the table's columns (``only``: of these output paths);
    a part written before a column existed (``title``) is passed over, so its documents are read once
    again (see ``_tables``)."""
    columns = PART_COLUMNS[table]
    files = [f for f in files if set(pl.read_parquet_schema(f)) >= columns.keys()]
    if not files:
        return pl.LazyFrame(schema=columns)
    scans = [pl.scan_parquet(f).select(list(columns)) for f in files]
    if only is not None:
        wanted = pl.Series(sorted(only), dtype=pl.Utf8).implode()
        scans = [scan.filter(pl.col("output_path").is_in(wanted)) for scan in scans]
    return pl.concat(scans, how="vertical")


def current_documents(out_root: Path, ledger: Ledger, only: frozenset[str] | None = None, *,
                      latest: dict[str, str] | None = None) -> pl.DataFrame:
    """(output_path, output_sha256) of every current document (``only``: among these paths): the
    index's latest revision of each path still on disk (``latest``: the index's, read before)."""
    latest = ledger.revisions.latest() if latest is None else latest
    present = [(p, h) for p, h in latest.items() if (only is None or p in only) and (out_root / p).is_file()]
    return pl.DataFrame(present, schema={"output_path": pl.Utf8, "output_sha256": pl.Utf8}, orient="row")


@dataclass(frozen=True, slots=True)
class Known:
    """The part files as listed, then what the ledger says of every document (each path's latest
    revision, writer and flag): listed first, since a run records a shard in the ledger before it
    writes the shard's part, so every listed part's rows are known to the ledger read after. Read
    once, it serves every group of documents a publication builds (audit/publication.py)."""

    files: dict[str, list[Path]]
    latest: dict[str, str]
    writers: dict
    flags: dict

    @classmethod
    def of(cls, out_root: Path, ledger: Ledger) -> Known:
        files = {t: _part_files(out_root, t) for t in TABLES}
        return cls(files, ledger.revisions.latest(), ledger.sessions.writers(), ledger.revisions.flags())


class Snapshot:
    """The part files and the current documents (``Known``; compaction may then remove exactly the
    listed files). ``only``: the documents at these output paths, not every one."""

    def __init__(self, out_root: Path, ledger: Ledger, only: frozenset[str] | None = None,
                 known: Known | None = None) -> None:
        known = Known.of(out_root, ledger) if known is None else known
        self.files = known.files
        self.only = only
        self.current = current_documents(out_root, ledger, only, latest=known.latest)
        self.writers = known.writers
        self.flags = known.flags


def tables(out_root: Path, ledger: Ledger | None = None, problems: list[str] | None = None,
           only: frozenset[str] | None = None, known: Known | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(sessions, turns) of every current session document under OUT/sessions (see the module's doc);
    ``only``: of the current documents at these output paths (with a ledger; ``known``: what it says, read before).

    Without a ledger (none given and none at OUT/ledger.sqlite) the documents on disk are read.
    A current document that is not a session document is left out and named in ``problems``.
    """
    if ledger is None:
        from .ledger import Ledger

        default = out_root / "ledger.sqlite"
        if not default.is_file():
            return _from_documents(out_root, {}, {}, problems)
        ledger = Ledger(default, read_only=True)
        try:
            return tables(out_root, ledger, problems, only)
        finally:
            ledger.close()
    return _tables(out_root, Snapshot(out_root, ledger, only, known), problems)


def _tables(out_root: Path, snap: Snapshot, problems: list[str] | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    sessions, turns = _scanned(out_root, snap, problems)
    return sessions, unique_turns(turns).collect().sort("output_path", "ordinal")


def unique_turns(turns: pl.LazyFrame) -> pl.LazyFrame:
    """A turn row once: the parts of two runs may hold the same rows (a document's rows are its bytes')."""
    return turns.unique(subset=["output_path", "ordinal"], keep="first")


def scanned(out_root: Path, ledger: Ledger, only: frozenset[str] | None = None,
            known: Known | None = None) -> tuple[pl.DataFrame, pl.LazyFrame]:
    """(sessions, turns) as ``tables`` has them, the turns a scan of the parts, not read, not sorted and
    not yet unique (``unique_turns``), so that their consumer may take a large document's apart."""
    return _scanned(out_root, Snapshot(out_root, ledger, only, known), None)


def parted(known: Known, keys: pl.DataFrame) -> pl.DataFrame:
    """Those of these documents' keys that a sessions part holds (the others are read from their
    documents, their turns with them: ``_scanned``)."""
    held = _read_parts(known.files["sessions"], "sessions", frozenset(keys["output_path"])).select(KEY)
    return keys.join(held, on=KEY, how="semi", maintain_order="left")


def turn_pieces(files: list[Path], path: str, sha256: str) -> list[pl.LazyFrame]:
    """One document's turn rows in the parts (``files``), as scans to read one after another, in
    ordinal order, each sorted and unique: a part's range of ordinals is a piece, and ranges that
    overlap (the same rows in the parts of two runs) make one. A document's turns are written in
    parts of a bounded number of rows each, so no piece holds the document whole."""
    columns = PART_COLUMNS["turns"]
    mine = (pl.col("output_path") == path) & (pl.col("output_sha256") == sha256)
    scans = [pl.scan_parquet(f).select(list(columns)).filter(mine)
             for f in files if set(pl.read_parquet_schema(f)) >= columns.keys()]
    if not scans:
        return []
    ranges = pl.concat([scan.select(first=pl.col("ordinal").min(), last=pl.col("ordinal").max(),
                                    source=pl.lit(i, dtype=pl.Int64)) for i, scan in enumerate(scans)])
    pieces: list[tuple[int, list[int]]] = []  # (last ordinal, sources) of each piece
    for first, last, source in ranges.collect().drop_nulls("first").sort("first", "source").iter_rows():
        if pieces and first <= pieces[-1][0]:
            pieces[-1] = (max(last, pieces[-1][0]), [*pieces[-1][1], source])
        else:
            pieces.append((last, [source]))
    return [unique_turns(pl.concat([scans[s] for s in sorted(sources)])).sort("ordinal").select(list(TURN_COLUMNS))
            for _, sources in pieces]


def _scanned(out_root: Path, snap: Snapshot, problems: list[str] | None) -> tuple[pl.DataFrame, pl.LazyFrame]:
    sessions = (_read_parts(snap.files["sessions"], "sessions", snap.only).join(snap.current, on=KEY, how="semi")
                .unique(subset=KEY, keep="first"))
    turns = _scan_parts(snap.files["turns"], "turns", snap.only).join(snap.current.lazy(), on=KEY, how="semi")
    unread = snap.current.join(sessions.select(KEY), on=KEY, how="anti")
    if unread.height:  # no part holds these: read the documents themselves, once
        turns = turns.join(unread.lazy(), on=KEY, how="anti")  # turn rows without their session row: read again
        extra = _read_documents(out_root, unread.rows(), problems)
        sessions = pl.concat([sessions, extra["sessions"]], how="vertical")
        turns = pl.concat([turns, extra["turns"].lazy()], how="vertical")
    return _finish(sessions, turns, snap.writers, snap.flags)


def _finish(sessions: pl.DataFrame, turns: pl.LazyFrame, writers: dict,
            flags: dict) -> tuple[pl.DataFrame, pl.LazyFrame]:
    """Add the ledger's columns, select the published columns, sort the sessions (the turns are
    sorted where they are collected or written)."""
    keys = sessions.select(KEY).rows()
    sessions = sessions.with_columns(
        pl.Series("run_id", [writers.get(k) for k in keys], dtype=pl.Utf8),
        pl.Series("flag", [flags.get(k[0]) for k in keys], dtype=pl.Utf8),
    )
    # string order of the relative path, as everywhere else (Path order differs: "telegram/" vs "telegram-html/")
    return sessions.select(list(SESSION_COLUMNS)).sort("output_path"), turns.select(list(TURN_COLUMNS))


def _read_documents(out_root: Path, keyed: list[tuple[str, str | None]],
                    problems: list[str] | None) -> dict[str, pl.DataFrame]:
    """Rows of these documents read from disk (``keyed``: path and the sha256 expected, or None)."""
    found = Rows()
    for rel, expected in keyed:
        try:
            raw = (out_root / rel).read_bytes()
            sha = hashlib.sha256(raw).hexdigest()
            if expected is not None and sha != expected:
                raise ValueError(f"its sha256 {sha} is not its latest revision {expected}")
            found.add(rel, sha, DocumentRows.of(orjson.loads(raw)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            if problems is not None:
                problems.append(f"{rel}: not a session document, left out of the datasets "
                                f"({type(exc).__name__}: {exc}); see `reconstruct verify`")
    return found.frames()


def _from_documents(out_root: Path, writers: dict, flags: dict,
                    problems: list[str] | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Without a ledger: every JSON file under OUT/sessions, read."""
    base = out_root / "sessions"
    paths = sorted(p.relative_to(out_root).as_posix() for p in base.rglob("*.json") if p.is_file()) \
        if base.is_dir() else []
    frames = _read_documents(out_root, [(p, None) for p in paths], problems)
    sessions, turns = _finish(frames["sessions"], frames["turns"].lazy(), writers, flags)
    return sessions, unique_turns(turns).collect().sort("output_path", "ordinal")


def compact(out_root: Path, snap: Snapshot, sessions: pl.DataFrame, turns: pl.DataFrame) -> None:
    """Replace the listed parts by one holding the current rows (what a query keeps of them)."""
    name = f"{uuid.uuid4().hex[:16]}.parquet"
    frames = {"sessions": sessions.select(list(PART_COLUMNS["sessions"])),
              "turns": turns.join(sessions.select("output_path", "output_sha256"), on="output_path", how="left")
                            .select(list(PART_COLUMNS["turns"]))}
    written = set(write_part(out_root, COMPACTED, name, frames))
    for table in TABLES:
        for path in snap.files[table]:
            if path not in written:
                path.unlink(missing_ok=True)
                if path.parent != out_root / PARTS / table / COMPACTED:
                    with contextlib.suppress(OSError):  # not empty: a run still writing there
                        path.parent.rmdir()


def reconciliation(ledger: Ledger) -> pl.DataFrame:
    """One row per snapshot of each session key, from the run that last reconciled the key (a merged
    key's snapshots in the merge's rank order, oldest first): expected (the source's own counter),
    reconstructed, and new, unchanged, absent, edited against the snapshots before it. Summed over a
    key's snapshots, ``new`` is its document's interactions: each message is counted once."""
    paths = {r.session_key: r.output_path for r in ledger.sessions.keyed()}
    sources = {(s.session_key, s.source_sha256): s.source_path for s in ledger.snapshots.all()}
    from .ledger.rows import ReconciliationRecord

    own = [f.name for f in fields(ReconciliationRecord) if f.name in RECONCILIATION_COLUMNS]
    rows = [{**{k: getattr(r, k) for k in own},  # its flat fields as they are: asdict would deep-copy each
             "output_path": paths.get(r.session_key), "source_path": sources.get((r.session_key, r.source_sha256))}
            for r in ledger.snapshots.reconciliation()]
    return pl.DataFrame(rows, schema=RECONCILIATION_COLUMNS).select(list(RECONCILIATION_COLUMNS))


def compact_parts(out_root: Path, ledger: Ledger) -> None:
    """Replace every part by one holding the rows of the current documents (``reconstruct export``)."""
    snap = Snapshot(out_root, ledger)
    compact(out_root, snap, *_tables(out_root, snap, None))
