"""The current tables on disk, OUT/datasets/current: bucketed Parquet parts and a manifest, rewritten
only where documents changed.

``sessions``, ``turns`` and ``terms`` are split into buckets (``BUCKETS``: 1, 64 and 16) by a hash of
the document's output path (``<table>/<bucket>-<generation>.parquet``, each sorted as its whole table
is), so that a run rewrites only the buckets of the documents it changed. What changed is read from the ledger, not
from the run: each document's *state* (its bytes' sha256, session key, writing run, flag and number
of revisions) is compared with the state the published ``sessions`` rows hold; a document whose state
differs, that appeared or that went, marks its bucket, and the bucket is rewritten from its other
documents' published rows and the changed documents' rows built from the parts (``audit.datasets``).
The ledger's own tables (``quarantine``, ``runs``, ``reconciliation``, ``revisions``) are small beside
the turns and are rewritten whole.

``manifest.json`` names every file and holds the stamp (the state of the ledger they hold); it is
replaced last and atomically, so a reader sees one publication whole. Files of the publication
before stay one more publication (a reader may still be reading them), then go. Without a manifest
of this layout's version and bucket count, a publication rebuilds every bucket. A run that changed
nothing but its own row (every input skipped or only noted) rewrites no table but ``runs`` (``publish_run``).
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
import uuid
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import orjson
import polars as pl

from . import current, datasets
from .files import atomic_write
from .ledger import Ledger

MANIFEST = "manifest.json"
VERSION = 2  # of the layout and its columns: a manifest of another version is rebuilt whole
BUCKETS = {"sessions": 1, "terms": 16, "turns": 64}
"""Buckets of each table split by document: the turns, by far the largest, in the most (a run rewrites
a 64th of them per bucket it touches); the search index in fewer, since each search reads every
bucket's footer several times; the sessions (a row per document) whole, since every list page reads
them. Each count divides the next, so a document's terms bucket is its turns bucket modulo 16."""
BUCKETED = tuple(BUCKETS)
STATE = ("output_path", "output_sha256", "session_key", "run_id", "flag", "revisions")
"""The columns of a sessions row that say whether a document's published rows still stand."""
EMPTY = "empty"  # the manifest's bucket name of an empty table's one file (a view needs its columns)
LEGACY = ("stamp.json", *(f"{t}.parquet" for t in current.TABLES))  # the layout before buckets


def bucket_of(paths: pl.Series, buckets: int) -> pl.Series:
    """Each output path's bucket of ``buckets``: a stable hash (sha256), the same in every process and version."""
    return pl.Series("bucket", [int.from_bytes(hashlib.sha256(p.encode()).digest()[:4], "big") % buckets
                                for p in paths], dtype=pl.Int64)


@dataclass(frozen=True, slots=True)
class Manifest:
    """Which file holds each bucket of each table (relative to the folder), and the stamp."""

    stamp: dict
    tables: dict[str, dict[str, str]]

    @classmethod
    def read(cls, folder: Path) -> Manifest | None:
        try:
            raw = orjson.loads((folder / MANIFEST).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        if not isinstance(raw, dict) or raw.get("version") != VERSION or raw.get("buckets") != BUCKETS:
            return None
        return cls(raw["stamp"], raw["tables"])

    def dumps(self) -> bytes:
        return orjson.dumps({"version": VERSION, "buckets": BUCKETS, "stamp": self.stamp, "tables": self.tables},
                            option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)

    def files(self, folder: Path) -> dict[str, list[Path]]:
        return {t: [folder / name for _, name in sorted(parts.items())] for t, parts in self.tables.items()}

    def complete(self, folder: Path) -> bool:
        """Whether it names a file of every table and each of its files is there."""
        files = self.files(folder)
        return set(files) == set(current.TABLES) and all(p.is_file() for paths in files.values() for p in paths)

    def names(self) -> set[str]:
        return {name for parts in self.tables.values() for name in parts.values()}


def published(out_root: Path, ledger: Ledger) -> dict[str, list[Path]] | None:
    """The published table files when they hold the ledger's current state, else None."""
    folder = out_root / current.CURRENT
    manifest = Manifest.read(folder)
    if manifest is None or manifest.stamp != stamp(ledger):
        return None
    return manifest.files(folder) if manifest.complete(folder) else None


def state(out_root: Path, ledger: Ledger, known: current.Known | None = None) -> pl.DataFrame:
    """Every current document's state as the ledger has it now (the ``STATE`` columns; ``known``: read before)."""
    known = current.Known.of(out_root, ledger) if known is None else known
    docs = datasets.current_documents(out_root, ledger, latest=known.documents.latest)
    writers, flags = known.documents.writers, known.documents.flags
    keys = docs.rows()
    return (docs.with_columns(pl.Series("run_id", [writers.get(k) for k in keys], dtype=pl.Utf8),
                              pl.Series("flag", [flags.get(k[0]) for k in keys], dtype=pl.Utf8))
            .join(known.keys, on=["output_path", "output_sha256"], how="left")
            .join(known.counts, on="output_path", how="left")
            .with_columns(pl.col("revisions").fill_null(0)).select(STATE))


def changed(now: pl.DataFrame, before: pl.DataFrame) -> frozenset[str]:
    """The output paths whose state differs between two state tables (or is in one only)."""
    def keyed(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.select("output_path", state=pl.concat_str(
            [pl.col(c).cast(pl.Utf8).fill_null("\x00") for c in STATE], separator="\x1f"))
    a, b = keyed(now), keyed(before)
    return frozenset(a.join(b, on=["output_path", "state"], how="anti")["output_path"].to_list()
                     + b.join(a, on=["output_path", "state"], how="anti")["output_path"].to_list())


def publish(out_root: Path, ledger: Ledger, *, full: bool = False) -> list[Path]:
    """Bring the tables up to the ledger's state: the buckets of the documents that changed (every
    bucket with ``full`` or without a manifest), the ledger's tables, then the manifest."""
    folder = out_root / current.CURRENT
    folder.mkdir(parents=True, exist_ok=True)
    now = stamp(ledger)
    previous = Manifest.read(folder)
    before = None if full else previous
    generation = uuid.uuid4().hex[:12]
    tables = {t: dict(before.tables.get(t, {})) if before else {} for t in current.TABLES}
    written = _buckets(out_root, ledger, Layout(folder, before, tables, generation))
    for name, frame in current.ledger_tables(out_root, ledger).items():
        tables[name] = {"": write_file(frame, folder, f"{name}-{generation}.parquet")}
        written.append(folder / tables[name][""])
    manifest = Manifest(now, tables)
    atomic_write(folder / MANIFEST, manifest.dumps())
    sweep(folder, manifest.names() | (previous.names() if previous else set()))
    return written


class Published(StrEnum):
    """What a run's publication of the current tables did."""

    REWRITTEN = "rewritten"  # the buckets of the documents that changed, and the ledger's tables
    RUN_ONLY = "unchanged: only the runs table took the run"  # nothing else changed (``publish_run``)
    UNPUBLISHED = "not published"  # they could not be written: readers build them from the ledger


def stamp(ledger: Ledger) -> dict:
    """The ledger's state as a manifest's stamp holds it."""
    return orjson.loads(current.Stamp.of(ledger).dumps())


def publish_run(out_root: Path, ledger: Ledger, before: dict) -> list[Path] | None:
    """The publication of a run that changed no document and no ledger table but ``runs`` (it recorded
    only skipped or noted inputs): when the published tables hold the ledger as it was before the run
    (``before``, its stamp then), no revision came since and every document they name is still there,
    only the runs table and the manifest are written, every other file kept as it is. None when that
    does not hold: ``publish`` is needed."""
    folder = out_root / current.CURRENT
    previous = Manifest.read(folder)
    now = stamp(ledger)
    if previous is None or previous.stamp != before or now["revisions"] != before["revisions"]:
        return None
    if not previous.complete(folder) or not _documents_there(out_root, previous.files(folder)["sessions"]):
        return None
    tables = {t: dict(parts) for t, parts in previous.tables.items()}
    tables["runs"] = {"": write_file(current.runs(ledger), folder, f"runs-{uuid.uuid4().hex[:12]}.parquet")}
    manifest = Manifest(now, tables)
    atomic_write(folder / MANIFEST, manifest.dumps())
    sweep(folder, manifest.names() | previous.names())
    return [folder / tables["runs"][""]]


def _documents_there(out_root: Path, sessions: list[Path]) -> bool:
    """Whether every document the published sessions name is still on disk (one removed by hand is no
    longer current: the tables must drop it)."""
    paths = pl.concat([pl.read_parquet(f, columns=["output_path"]) for f in sessions])["output_path"]
    root = str(out_root)
    return all(os.path.isfile(os.path.join(root, p)) for p in paths)  # os.path: a Path per document costs 3x


@dataclass(frozen=True, slots=True)
class Layout:
    """One publication being written: the folder, the manifest before (None: rebuild every bucket),
    the files of each table (updated as buckets are written) and the new files' generation."""

    folder: Path
    before: Manifest | None
    tables: dict[str, dict[str, str]]
    generation: str

    def write(self, name: str, bucket: str, frame: pl.DataFrame,
              large: dict[str, list[pl.LazyFrame]] | None = None) -> Path:
        """A bucket's file: its rows sorted as the table is, with the ``large`` documents' turns
        streamed into their place (``_streamed``)."""
        frame, file = frame.sort(current.ORDER[name]), f"{name}/{bucket}-{self.generation}.parquet"
        if not large:
            self.tables[name][bucket] = write_file(frame, self.folder, file)
        else:
            with tempfile.TemporaryDirectory(prefix=".pieces-", dir=self.folder) as staging:
                self.tables[name][bucket] = write_file(_streamed(frame, large, Path(staging)), self.folder, file)
        return self.folder / file

    def kept(self, name: str, bucket: int, only: frozenset[str] | None) -> pl.DataFrame | None:
        """The published rows of a bucket's documents that did not change (None: no such file)."""
        file = self.before.tables.get(name, {}).get(str(bucket)) if self.before else None
        if file is None:
            return None
        frame = pl.read_parquet(self.folder / file)
        return frame.filter(~pl.col("output_path").is_in(pl.Series(sorted(only or ()), dtype=pl.Utf8).implode()))


def _dirty(out_root: Path, ledger: Ledger, layout: Layout,
           known: current.Known) -> tuple[dict[str, set[int]], frozenset[str] | None]:
    """The buckets of each table to rewrite and the documents whose rows to build (None: all of them)."""
    if layout.before is None:
        return {name: set(range(n)) for name, n in BUCKETS.items()}, None
    was = pl.concat([pl.read_parquet(f, columns=list(STATE)) for f in layout.before.files(layout.folder)["sessions"]],
                    how="vertical_relaxed")
    only = changed(state(out_root, ledger, known), was)
    paths = pl.Series(sorted(only), dtype=pl.Utf8)
    return {name: set(bucket_of(paths, n).to_list()) for name, n in BUCKETS.items()}, only


def _buckets(out_root: Path, ledger: Ledger, layout: Layout) -> list[Path]:
    """Rewrite the buckets of the changed documents, a group of documents at a time (``_groups``: the
    run's memory is a group's turns, not the archive's); an empty table keeps one file without rows."""
    known = current.Known.of(out_root, ledger)
    dirty, only = _dirty(out_root, ledger, layout, known)
    if only is not None and not only:
        return []
    for name in BUCKETED:
        layout.tables[name].pop(EMPTY, None)
    written: list[Path] = []
    sessions: list[pl.DataFrame] = []
    empty: dict[str, pl.DataFrame] = {}
    count, groups = _groups(dirty, only, known)
    for group, paths in groups:
        part, scan = current.sessions_and_turn_scan(out_root, ledger, paths, known)
        large = _large(part, known)
        turns = current.typed_turns(datasets.unique_turns(
            scan.filter(~pl.col("output_path").is_in(pl.Series(sorted(large), dtype=pl.Utf8).implode()))),
            part).collect()
        new = {"sessions": part, "turns": turns, "terms": _terms(turns, part, large)}
        empty = {name: frame.clear() for name, frame in new.items()}
        sessions.append(part)
        for name in ("turns", "terms"):
            mine = {b for b in dirty[name] if b % count == group}
            written.extend(_rewrite(layout, name, mine, new[name], only, large if name == "turns" else {}))
        del new, turns
    if sessions:
        written.extend(_rewrite(layout, "sessions", dirty["sessions"], pl.concat(sessions, how="vertical"), only))
    for name in BUCKETED:
        if not layout.tables[name] and name in empty:
            written.append(layout.write(name, EMPTY, empty[name]))
    return written


ROW_BUDGET = 200_000
"""A document of more turns than this is never read whole: its turns are streamed from its parts,
a part at a time, into its bucket's file (``datasets.turn_pieces``, ``_streamed``)."""


def _large(part: pl.DataFrame, known: current.Known) -> dict[str, list[pl.LazyFrame]]:
    """The pieces of the typed turns of each document of more than ``ROW_BUDGET`` turns, by path."""
    big = part.filter(pl.col("interactions") > ROW_BUDGET).select(datasets.KEY)
    if big.is_empty():
        return {}
    files = known.documents.files["turns"]
    return {path: [current.typed_turns(piece, part) for piece in datasets.turn_pieces(files, path, sha)]
            for path, sha in datasets.parted(known.documents, big).rows()}


def _terms(turns: pl.DataFrame, part: pl.DataFrame, large: dict[str, list[pl.LazyFrame]]) -> pl.DataFrame:
    """The search index of a group's documents: a large document's words a piece at a time."""
    found = [current.terms(turns.lazy(), part.lazy()).collect()]
    none = part.clear().lazy()
    found += [current.terms(piece, none).collect() for pieces in large.values() for piece in pieces]
    return pl.concat(found).unique().sort("term", "output_path") if len(found) > 1 else found[0]


def _streamed(frame: pl.DataFrame, large: dict[str, list[pl.LazyFrame]], staging: Path) -> pl.LazyFrame:
    """A bucket's sorted turns with the pieces of its large documents put in their place, in order: each
    piece is first sorted into a file of its own in ``staging``, one at a time, then the files are
    scanned in order (a streaming engine would otherwise sort every piece at once)."""
    paths, pieces, start = frame["output_path"], [], 0
    for path in sorted(large):
        end = paths.search_sorted(path)
        pieces.append(frame.slice(start, end - start).lazy())
        for piece in large[path]:
            staged = staging / f"{len(pieces)}.parquet"
            piece.sink_parquet(staged, engine="streaming")
            pieces.append(pl.scan_parquet(staged))
        start = end
    return pl.concat([*pieces, frame.slice(start).lazy()], how="vertical_relaxed")


GROUPS = tuple(n for n in (1, 2, 4, 8, 16) if BUCKETS["terms"] % n == 0)
"""How many groups documents may be published in: each group is the documents of the terms buckets equal
modulo that count, hence of whole turns buckets (a document's terms bucket is its turns bucket modulo 16)."""
GROUP_DOCUMENTS = 2_000
"""At most this many changed documents per group (while the groups allow it): about what a shard of
small files hands the run's process already, so the publication does not raise its peak; a smaller
publication stays in one group, as fast as before."""


def _groups(dirty: dict[str, set[int]], only: frozenset[str] | None,
            known: current.Known) -> tuple[int, list[tuple[int, frozenset[str]]]]:
    """How many groups, and the changed documents (``only``; None: every current document) split into
    them: each group that holds one of them or a dirty turns or terms bucket (whose documents may all have gone)."""
    paths = sorted(only if only is not None else known.documents.latest)  # one gone from disk: built as none
    count = next((n for n in GROUPS if math.ceil(len(paths) / n) <= GROUP_DOCUMENTS), GROUPS[-1])
    buckets = bucket_of(pl.Series(paths, dtype=pl.Utf8), count).to_list()
    by_group: dict[int, set[str]] = {}
    for path, b in zip(paths, buckets, strict=True):
        by_group.setdefault(b, set()).add(path)
    wanted = set(by_group) | {b % count for name in ("turns", "terms") for b in dirty[name]}
    return count, [(g, frozenset(by_group.get(g, ()))) for g in sorted(wanted)]


def _rewrite(layout: Layout, name: str, buckets: set[int], rows: pl.DataFrame,
             only: frozenset[str] | None, large: dict[str, list[pl.LazyFrame]] | None = None) -> list[Path]:
    """These buckets of a table from the new ``rows`` of their changed documents (and the pieces of
    the ``large`` ones' turns) and the published rows of the others; a bucket left without rows is dropped."""
    split = _by_bucket(rows, BUCKETS[name])
    mine = _large_by_bucket(large or {}, BUCKETS[name])
    written = []
    for b in sorted(buckets):
        new = split.get(b, rows.clear())
        old = layout.kept(name, b, only)
        frame = new if old is None else pl.concat([old, new], how="vertical_relaxed")
        if frame.is_empty() and b not in mine:
            layout.tables[name].pop(str(b), None)
        else:
            written.append(layout.write(name, str(b), frame, mine.get(b)))
    return written


def _large_by_bucket(large: dict[str, list[pl.LazyFrame]], buckets: int) -> dict[int, dict[str, list[pl.LazyFrame]]]:
    """The large documents' pieces split by their document's bucket of a table."""
    paths = pl.Series(sorted(large), dtype=pl.Utf8)
    found: dict[int, dict[str, list[pl.LazyFrame]]] = {}
    for path, b in zip(paths, bucket_of(paths, buckets), strict=True):
        found.setdefault(b, {})[path] = large[path]
    return found


def _by_bucket(frame: pl.DataFrame, buckets: int) -> dict[int, pl.DataFrame]:
    """A table's rows split by their document's bucket of that table."""
    paths = frame["output_path"].unique()
    keyed = frame.join(pl.DataFrame({"output_path": paths, "bucket": bucket_of(paths, buckets)}),
                       on="output_path", how="left")
    return {k[0]: part.drop("bucket") for k, part in keyed.partition_by("bucket", as_dict=True).items()}


def write_file(frame: pl.DataFrame | pl.LazyFrame, folder: Path, name: str) -> str:
    """Write a table's file through a temporary one; a scan is streamed in (never held whole)."""
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    if isinstance(frame, pl.LazyFrame):
        frame.sink_parquet(tmp, row_group_size=current.ROW_GROUP, engine="streaming")
    else:
        frame.write_parquet(tmp, row_group_size=current.ROW_GROUP)
    tmp.replace(target)
    return name


def sweep(folder: Path, kept: set[str]) -> None:
    """Remove files of publications before the last two, and the files of the layout before buckets."""
    for name in LEGACY:
        (folder / name).unlink(missing_ok=True)
    for path in folder.rglob("*.parquet"):
        if path.relative_to(folder).as_posix() not in kept:
            path.unlink(missing_ok=True)


def tables(out_root: Path, ledger: Ledger, problems: list[str] | None = None) -> dict[str, pl.LazyFrame]:
    """Every current table as it is published (a scan of its files) or, when the files do not hold
    the ledger's state, built from the ledger and the parts in memory (``problems``: documents left out)."""
    files = published(out_root, ledger)
    if files is None:
        return {name: frame.lazy() for name, frame in current.build(out_root, ledger, problems).items()}
    return {name: pl.scan_parquet(paths) for name, paths in files.items()}
