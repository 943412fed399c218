"""What the browser shows, read from the output root: lists through DuckDB over the current tables,
one document, its revisions and its sources from the files and the ledger. Nothing is written.
"""

from __future__ import annotations

import difflib
import hashlib
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from models.errors import AuditError, Reason

from .. import current, revisions, search
from ..ledger import Ledger, SourceSeen
from ..query import Catalog

PAGE = 50  # sessions per list page
TURNS_PAGE = 200  # interactions per session page
SORTS = ("last_at", "first_at", "interactions", "platform", "session_key", "title", "status", "redactions",
         "revisions", "source_path", "output_path")
LIST_COLUMNS = ("output_path", "platform", "session_key", "session_id", "title", "source_path", "interactions",
                "first_at",
                "last_at", "status", "coverage_reason", "redactions", "revisions", "grammar", "run_id", "flag")
SOURCE_CONTEXT = 3  # lines shown around a span
KEPT_DOCUMENTS = 4  # parsed documents kept for the next page of the same session


@dataclass(frozen=True, slots=True)
class Filters:
    """A sessions list request: search text, filters, order and page (all optional)."""

    q: str = ""
    match: str = "words"  # words: every word of q, whole (the index); substring: q anywhere (a scan)
    platform: str = ""
    status: str = ""
    coverage: str = ""
    grammar: str = ""
    run: str = ""
    since: str = ""
    until: str = ""
    sort: str = "last_at"
    order: str = "desc"
    page: int = 1

    @classmethod
    def of(cls, params: dict[str, str]) -> Filters:
        known = {k: params[k].strip() for k in cls.__slots__ if k in params and k != "page"}
        if known.get("sort") not in SORTS:
            known.pop("sort", None)
        if known.get("order") not in ("asc", "desc"):
            known.pop("order", None)
        if known.get("match") not in ("words", "substring"):
            known.pop("match", None)
        try:
            page = max(1, int(params.get("page", "1")))
        except ValueError:
            page = 1
        return cls(**known, page=page)

    def where(self, found: list[str] | None = None) -> tuple[str, list[Any]]:
        """The SQL condition and its parameters (``found``: the documents a word search kept, rarest
        word first: ``audit.search.matching``)."""
        terms, args = ["TRUE"], []
        for column in ("platform", "status", "grammar"):
            if getattr(self, column):
                terms.append(f"{column} = ?")
                args.append(getattr(self, column))
        if self.run:
            terms.append("run_id = ?")
            args.append(self.run)
        if self.coverage == "full":
            terms.append("coverage_reason IS NULL")
        elif self.coverage == "partial":
            terms.append("coverage_reason IS NOT NULL")
        if self.since:
            terms.append("last_at >= CAST(? AS TIMESTAMPTZ)")
            args.append(self.since)
        if self.until:
            terms.append("first_at < CAST(? AS TIMESTAMPTZ) + INTERVAL 1 DAY")
            args.append(self.until)
        if self.q and self.match == "substring":  # any part of a word: a scan of every turn
            terms.append("(title ILIKE ? OR output_path IN "
                         "(SELECT output_path FROM turns WHERE content ILIKE ? OR speaker_name ILIKE ?))")
            args += [f"%{self.q}%"] * 3
        elif found is not None:  # whole words, looked up in the sorted index
            terms.append("output_path IN (SELECT unnest(?::VARCHAR[]))")
            args.append(found)
        return " AND ".join(terms), args

    def params(self, **change: Any) -> dict[str, Any]:
        """The query parameters of this request with some changed (for links), without empty ones."""
        values = {**asdict(self), **change}
        return {k: v for k, v in values.items()
                if v not in ("", None) and (k, v) not in (("page", 1), ("match", "words"))}


@dataclass(slots=True)
class Listing:
    rows: list[dict[str, Any]]
    total: int
    filters: Filters
    facets: dict[str, list[str]] = field(default_factory=dict)

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // PAGE))


class Archive:
    """One output root, read-only. Safe to share between request threads."""

    def __init__(self, out_root: Path, ledger_path: Path) -> None:
        self.out_root = out_root
        self.ledger_path = ledger_path
        self._lock = threading.Lock()
        self._catalog: tuple[bytes, Catalog] | None = None
        self._facets: tuple[bytes, dict[str, list[str]]] = (b"", {})
        self._documents: dict[tuple[str, int, int], dict[str, Any]] = {}  # oldest first

    @contextmanager
    def ledger(self):
        if not self.ledger_path.is_file():
            raise AuditError(Reason.NOT_FOUND, f"no ledger at {self.ledger_path}: nothing has run into {self.out_root}")
        ledger = Ledger(self.ledger_path, read_only=True)
        try:
            yield ledger
        finally:
            ledger.close()

    def sql(self, statement: str, args: list[Any] | None = None) -> list[dict[str, Any]]:
        """Rows of one query over the current tables (the views rebuilt when the ledger moved on)."""
        with self.ledger() as ledger:
            stamp = current.Stamp.of(ledger).dumps()
            with self._lock:
                if self._catalog is None or self._catalog[0] != stamp:
                    if self._catalog is not None:
                        self._catalog[1].close()
                    self._catalog = (stamp, Catalog(self.out_root, ledger))
                return self._catalog[1].run(statement, args).rows(named=True)

    # -- sessions ---------------------------------------------------------------------------------
    def sessions(self, filters: Filters) -> Listing:
        """One page of the list (a top-N sort: only the page's rows are kept), and how many match."""
        found = search.matching(self.sql, filters.q) if filters.q and filters.match == "words" else None
        where, args = filters.where(found)
        total = self.sql(f"SELECT count(*) AS n FROM sessions WHERE {where}", args)[0]["n"]
        rows = self.sql(f"SELECT {', '.join(LIST_COLUMNS)} FROM sessions WHERE {where} "
                        f"ORDER BY {filters.sort} {filters.order} NULLS LAST, output_path LIMIT {PAGE} "
                        f"OFFSET {(filters.page - 1) * PAGE}", args)
        return Listing(rows, total, filters, self.facets())

    def facets(self) -> dict[str, list[str]]:
        """The values each filter offers (computed once per state of the tables)."""
        with self._lock:
            known = self._facets if self._catalog is not None and self._facets[0] == self._catalog[0] else None
        if known is not None:
            return known[1]
        found = self.sql("SELECT list(DISTINCT platform ORDER BY platform) AS platform, "
                         "list(DISTINCT grammar ORDER BY grammar) AS grammar, "
                         "list(DISTINCT status ORDER BY status) AS status FROM sessions")[0]
        found["run"] = [r["run_id"] for r in self.sql("SELECT run_id FROM runs ORDER BY seq DESC")]
        facets = {k: [v for v in (vs or []) if v is not None] for k, vs in found.items()}
        with self._lock:
            self._facets = (self._catalog[0], facets)
        return facets

    def document(self, rel: str) -> dict[str, Any]:
        """A current session document, parsed (``rel``: its path under OUT, ``sessions/...``); the last
        few are kept while their file is unchanged, so paging through a long session parses it once."""
        path = self._inside(rel, "sessions")
        try:
            stat = path.stat()
            key = (rel, stat.st_mtime_ns, stat.st_size)
            with self._lock:
                if key in self._documents:
                    return self._documents[key]
            doc = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise AuditError(Reason.NOT_FOUND, f"{rel}: no readable session document ({exc})") from exc
        with self._lock:
            self._documents[key] = doc
            while len(self._documents) > KEPT_DOCUMENTS:
                self._documents.pop(next(iter(self._documents)))
        return doc

    def session_row(self, rel: str) -> dict[str, Any] | None:
        rows = self.sql("SELECT * FROM sessions WHERE output_path = ?", [rel])
        return rows[0] if rows else None

    def _inside(self, rel: str, top: str) -> Path:
        root = (self.out_root / top).resolve()
        path = (self.out_root / rel).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            raise AuditError(Reason.NOT_FOUND, f"no document {rel!r} under {top}/")
        return path

    # -- revisions --------------------------------------------------------------------------------
    def revisions(self, rel: str) -> list[dict[str, Any]]:
        with self.ledger() as ledger:
            return [asdict(r) for r in ledger.revisions.history(rel)]

    def revision(self, rel: str, rev: int) -> dict[str, Any]:
        """A revision of a document, parsed from the revision store."""
        found = [r for r in self.revisions(rel) if r["rev"] == rev]
        if not found:
            raise AuditError(Reason.NOT_FOUND, f"{rel} has no revision {rev}")
        try:
            return orjson.loads(revisions.get_blob(self.out_root, found[0]["sha256"]))
        except (OSError, ValueError, revisions.RevisionError) as exc:
            raise AuditError(Reason.NOT_FOUND, f"{rel} revision {rev}: its blob is not readable ({exc})") from exc

    def diff(self, rel: str, a: int, b: int) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
        """Two revisions compared: the messages added, removed or changed (by ordinal), and the unified
        diff of the documents as indented JSON, as (kind, line) with kind add, del, hunk or same."""
        old, new = self.revision(rel, a), self.revision(rel, b)
        text = [orjson.dumps(d, option=orjson.OPT_INDENT_2).decode().splitlines() for d in (old, new)]
        lines = difflib.unified_diff(*text, f"{rel} rev {a}", f"{rel} rev {b}", n=3, lineterm="")
        kinds = {"+": "add", "-": "del", "@": "hunk"}
        return message_changes(old, new), [(kinds.get(line[:1], "same"), line) for line in lines]

    # -- runs and quarantine ----------------------------------------------------------------------
    def runs(self) -> list[dict[str, Any]]:
        return self.sql("SELECT * FROM runs ORDER BY seq DESC")

    def run(self, run_id: str) -> dict[str, Any]:
        rows = self.sql("SELECT * FROM runs WHERE run_id = ?", [run_id])
        if not rows:
            raise AuditError(Reason.NOT_FOUND, f"no run {run_id!r} in the ledger")
        with self.ledger() as ledger:
            counts = asdict(ledger.runs.counts(run_id))
        return {**rows[0], "counts": counts,
                "quarantine": self.sql("SELECT * FROM quarantine WHERE run_id = ? ORDER BY source_key, ordinal",
                                       [run_id]),
                "reconciliation": self.sql("SELECT * FROM reconciliation WHERE run_id = ? ORDER BY session_key",
                                           [run_id])}

    def quarantined(self, run_id: str, source_key: str) -> dict[str, Any]:
        rows = self.sql("SELECT * FROM quarantine WHERE run_id = ? AND source_key = ? ORDER BY ordinal NULLS FIRST",
                        [run_id, source_key])
        if not rows:
            raise AuditError(Reason.NOT_FOUND, f"run {run_id} quarantined nothing under {source_key!r}")
        return {"run_id": run_id, "source_key": source_key, "entries": rows, "records": self._records(source_key)}

    def _records(self, source_key: str) -> list[dict[str, Any]]:
        """The quarantine records written for an input (OUT/quarantine/<key>.d/*.json)."""
        folder = self.out_root / "quarantine" / f"{source_key}.d"
        root = (self.out_root / "quarantine").resolve()
        if not folder.resolve().is_relative_to(root) or not folder.is_dir():
            return []
        out = []
        for path in sorted(folder.glob("*.json")):
            try:
                out.append({"file": path.relative_to(self.out_root).as_posix(), **orjson.loads(path.read_bytes())})
            except (OSError, orjson.JSONDecodeError) as exc:
                out.append({"file": path.relative_to(self.out_root).as_posix(), "unreadable": str(exc)})
        return out

    # -- sources ----------------------------------------------------------------------------------
    def source(self, sha256: str, lines: tuple[int, int] | None, pointer: str | None) -> dict[str, Any]:
        """An input by its sha256: where it was read, and the lines (or JSON pointer) asked for,
        from the file when it is still where a run read it with the same bytes."""
        with self.ledger() as ledger:
            seen = ledger.inputs.read_at(sha256)
        view: dict[str, Any] = {"sha256": sha256, "seen": [{"source_path": s.source_path, "run_id": s.run_id}
                                                           for s in seen],
                                "lines": list(lines) if lines else None, "pointer": pointer, "found": None,
                                "problem": None, "excerpt": [], "value": None}
        located = _locate(seen, sha256)
        if isinstance(located, str):
            view["problem"] = located
            return view
        view["found"] = str(located)
        raw = located.read_bytes()
        if lines:
            view["excerpt"] = _excerpt(raw, lines)
        if pointer is not None:
            view["value"] = _pointed(raw, pointer)
        return view


MESSAGE_FIELDS = ("speakerName", "role", "date", "content", "absent")


def message_changes(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The interactions that differ between two documents, by ordinal: added, removed or changed
    (with the fields that changed, before and after)."""
    before, after = ({it["ordinal"]: it for it in d["artifacts"]["Chatthistorik"]["interactions"]} for d in (old, new))
    out = []
    for ordinal in sorted(before.keys() | after.keys()):
        was, now = before.get(ordinal), after.get(ordinal)
        if was is None or now is None:
            it = now or was
            out.append({"ordinal": ordinal, "change": "added" if was is None else "removed",
                        "speakerName": it["speakerName"], "fields": {"content": (None, it["content"]) if was is None
                                                                     else (it["content"], None)}})
            continue
        fields = {k: (was.get(k), now.get(k)) for k in MESSAGE_FIELDS if was.get(k) != now.get(k)}
        if fields:
            out.append({"ordinal": ordinal, "change": "changed", "speakerName": now["speakerName"], "fields": fields})
    return out


def _locate(seen: list[SourceSeen], sha256: str) -> Path | str:
    """The file with these bytes, from the roots of the runs that read it; else why not."""
    tried = []
    for s in seen:
        for root in orjson.loads(s.args or "{}").get("paths", []):
            root = Path(root)
            candidate = root.parent / s.source_path if not root.is_file() else root
            if candidate in tried:
                continue
            tried.append(candidate)
            if candidate.is_file() and hashlib.sha256(candidate.read_bytes()).hexdigest() == sha256:
                return candidate
    if not seen:
        return "no run of this ledger read an input with these bytes"
    return ("not found with these bytes at " + ", ".join(map(str, tried)) if tried else
            "the runs that read it name no input root") + " (moved, changed, or inside an archive)"


def _excerpt(raw: bytes, lines: tuple[int, int]) -> list[dict[str, Any]]:
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n").split("\n")
    lo, hi = max(1, lines[0] - SOURCE_CONTEXT), min(len(text), lines[1] + SOURCE_CONTEXT)
    return [{"n": n, "text": text[n - 1], "span": lines[0] <= n <= lines[1]} for n in range(lo, hi + 1)]


def _pointed(raw: bytes, pointer: str) -> str:
    """The JSON value a pointer names (RFC 6901), indented; or why it cannot be shown."""
    try:
        value: Any = orjson.loads(raw)
        for token in [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]:
            value = value[int(token)] if isinstance(value, list) else value[token]
    except (orjson.JSONDecodeError, KeyError, IndexError, ValueError, TypeError) as exc:
        return f"(the pointer does not resolve in this file as JSON: {type(exc).__name__} {exc})"
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def jsonable(value: Any) -> Any:
    """Rows as JSON (timestamps as ISO 8601 Z)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
