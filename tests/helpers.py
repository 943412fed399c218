"""Test helpers shared by the test modules: golden snapshots of parsed sessions, shared paths."""

from __future__ import annotations

import functools
import importlib.util
import io
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from models.records import ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers import jsonsplit, registry
from parsers.columns import turns_of
from parsers.text import decode

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden"
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance"
CHECKER = SHARED / "tools" / "check_session_docs.py"
UPDATE_GOLDEN = os.environ.get("RECONSTRUCT_UPDATE_GOLDEN") == "1"


def known_inputs() -> list[Path]:
    """Every golden, sample and conformance input (the conformance set when ../shared holds it)."""
    found = [p for p in sorted(GOLDEN.rglob("*")) if p.is_file() and not p.name.endswith(".expected.json")]
    found += [p for p in sorted((ROOT / "sample_logs").rglob("*")) if p.is_file()]
    if CONFORMANCE.is_dir():
        found += [p for p in sorted((CONFORMANCE / "fixtures").rglob("*")) if p.is_file()]
    return found


def streamed_sessions(grammar, blob: bytes, source: SourceText, settings: Settings | None = None
                      ) -> list[ParsedSession]:
    """The sessions of a JSON export as the streamed read gives them (flows/core/jsonstream.py, one process):
    its list of conversations located (``NotStreamable`` when it is not), cut into entries, each entry
    through the grammar's ``parse_conversation``."""
    fp, shape, settings = io.BytesIO(blob), grammar.conversations, settings or Settings()
    at = jsonsplit.locate(fp, shape)
    return [s for e in jsonsplit.entries(fp, at=at, shape=shape)
            for s in grammar.parse_conversation(f"{at.pointer}/{e.index}", e.value, source, settings)]


def shared_path(path: Path) -> Path:
    """A path under ../shared, or the calling test skipped with the reason: ../shared is optional."""
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared is not beside this checkout")
    return path


def run_checker(path: Path) -> subprocess.CompletedProcess:
    """The independent contract checker of ../shared over a document or an output root (skips without it)."""
    return subprocess.run([sys.executable, str(shared_path(CHECKER)), str(path)], capture_output=True, text=True)


@functools.cache
def checker_module():
    """The contract checker loaded as a module, or None when ../shared is absent."""
    if not CHECKER.is_file():
        return None
    spec = importlib.util.spec_from_file_location("check_session_docs", CHECKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def turn_snapshot(turn: Turn) -> dict[str, Any]:
    return {
        "speaker": turn.speaker,
        "role": turn.role,
        "kind": turn.kind,
        "content": turn.content,
        "time": _time(turn.time),
        "time_raw": turn.time_raw,
        "model": [turn.model.provider, turn.model.name, turn.model.version] if turn.model else None,
        "lines": list(turn.lines) if turn.lines else None,
        "pointer": turn.pointer,
        "extra": turn.extra,
        **({"part": turn.part} if turn.part else {}),
    }


def session_snapshot(session: ParsedSession, counted: int) -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "id_source": session.id_source,
        "title": session.title,
        "created": _time(session.created),
        "lines": list(session.lines) if session.lines else None,
        "pointer": session.pointer,
        "counted_turns": counted,
        "coverage_reason": session.coverage_reason,
        "warnings": session.warnings,
        "assumptions": session.assumptions,
        "heuristics": [
            {"id": h.id, "description": h.description, "evidence": h.evidence} for h in session.heuristics
        ],
        "meta": session.meta,
        "regions": [
            {"kind": r.kind.value, "reason": r.reason, "lines": list(r.lines) if r.lines else None,
             "pointer": r.pointer, "content": r.content, **({"part": r.part} if r.part else {})}
            for r in session.regions
        ],
        "turns": [turn_snapshot(t) for t in session.turns],
        **({"shaped": [{"line": x.line, "reason": x.reason, **({"part": x.part} if x.part else {})}
                       for x in session.shaped]} if session.shaped else {}),
    }


def columns_of(grammar, source: SourceText, settings: Settings | None = None) -> list[ParsedSession]:
    """A grammar's sessions of one source as the product reads them (``Grammar.read`` of it alone): a
    line grammar's with their turns as a frame."""
    return list(grammar.read([source], settings or Settings())[0])


def read_one(grammar, source: SourceText, settings: Settings | None = None) -> list[ParsedSession]:
    """``columns_of`` with a frame's turns as ``Turn`` records, for tests that look at turns."""
    sessions = columns_of(grammar, source, settings)
    for session in sessions:
        if session.frame is not None:
            session.turns = turns_of(session.frame)
    return sessions


def text_source(text: str, name: str) -> SourceText:
    """A canonical text as the source of one file (tests that write their input inline)."""
    return SourceText(text, name, "0" * 64, len(text.encode()), "utf-8")


def parse_text(grammar: str, text: str, name: str) -> tuple[SourceText, list[ParsedSession]]:
    """The source of an inline text and the sessions one grammar makes of it."""
    source = text_source(text, name)
    return source, read_one(registry.get(grammar), source)


def load_source(path: Path, name: str | None = None) -> SourceText:
    return decode(path.read_bytes(), name or path.name)


def parse_file(path: Path, grammar: str, settings: Settings | None = None, *, name: str | None = None,
               companions: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Parse with one grammar and snapshot every session with its independent turn count."""
    settings = settings or Settings()
    g = registry.get(grammar)
    source = load_source(path, name)
    if companions:
        source = SourceText(source.text, source.name, source.sha256, source.size, source.encoding, companions)
    out = []
    for session in read_one(g, source, settings):
        out.append(session_snapshot(session, g.count_turns(session.raw)))
    return out


def dump(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def parsed_sessions(path: Path, grammar: str, *, name: str | None = None,
                    companions: dict[str, str] | None = None) -> tuple[SourceText, list[ParsedSession]]:
    """The source and the sessions one grammar makes of a file, with ``raw`` kept."""
    source = load_source(path, name)
    if companions:
        source = SourceText(source.text, source.name, source.sha256, source.size, source.encoding, companions)
    return source, read_one(registry.get(grammar), source)


def conversation_groups(folder: Path) -> dict[tuple[Path, str], list[Path]]:
    """The conversations over several files under a folder, as ingest groups them (``Grammar.group_of``):
    (their folder, their key within it) -> their files in part order, for groups of two files or more."""
    groups: dict[tuple[Path, str], list[tuple[int, Path]]] = {}
    files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
    for path in files:
        claim = registry.conversation_of(path.name)
        if claim is not None:
            groups.setdefault((path.parent, claim[1]), []).append((claim[2], path))
    for path in files:  # a file named as a conversation's key is its first part
        if (path.parent, path.name) in groups and registry.conversation_of(path.name) is None:
            groups[(path.parent, path.name)].append((0, path))
    return {k: [p for _, p in sorted(v)] for k, v in groups.items() if len(v) > 1}


def load_group(paths: list[Path], names: list[str], name: str,
               companions: dict[str, str] | None = None) -> SourceText:
    """The one source a conversation's files make (as ``flows.core.process.process_group`` hands it over)."""
    parts = tuple(decode(p.read_bytes(), n) for p, n in zip(paths, names, strict=True))
    return SourceText("", name, "0" * 64, sum(x.size for x in parts), "utf-8", companions or {}, parts=parts)


def parse_group(paths: list[Path], grammar: str, names: list[str], name: str,
                companions: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Parse a conversation's files as one source and snapshot every session, as ``parse_file`` does."""
    g = registry.get(grammar)
    source = load_group(paths, names, name, companions)
    return [session_snapshot(s, g.count_turns(s.raw)) for s in read_one(g, source)]


def key_document(out: Path, platform: str, ident: str = "*", name: str = "*.json") -> Path:
    """The one document of a session key under ``out`` (``sessions/<platform>/<key id>/<sessionId>.json``),
    found by its platform and, when known, its key id or file name."""
    found = sorted((out / "sessions" / platform).glob(f"{ident}/{name}"))
    assert len(found) == 1, found
    return found[0]


BREAKS_ZOOM = "10:02:15 From Ann Lee to Everyone:\n\tBREAKS-ZOOM\n"
"""A Zoom sample on which ``break_zoom_detection`` makes the detector fail."""


def break_zoom_detection(monkeypatch, error: Exception) -> None:
    """Make the zoom grammar's detector raise ``error`` on a sample holding ``BREAKS-ZOOM`` (a detector bug)."""
    zoom = registry.get("zoom")
    original = zoom.detect_counted

    def broken(sample, name, counts):
        if "BREAKS-ZOOM" in sample:
            raise error
        return original(sample, name, counts)

    monkeypatch.setattr(zoom, "detect_counted", broken)
