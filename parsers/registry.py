"""The one registry of grammars: discovery, lookup and detection.

Adding a format means adding one module to parsers/grammars/ whose grammar class carries
``@register``; the registry imports every module there, in name order, and refuses duplicates.
Tests and the ``formats`` command read the registry, never a list written out by hand.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence

import polars as pl

from models.errors import DetectionError, Reason, RegistryError
from models.records import Detection

from .base import Grammar
from .linecount import LineCounts, LinePatterns, LineTable, polars_safe
from .sample import Sample, of

_GRAMMARS: dict[str, Grammar] = {}
_ORDERED: list[Grammar] = []
"""``all_grammars``' list, built once every module is loaded (detection reads it for every input)."""
_NEEDS: list[str] = []
"""Every needed string (``Grammar.detect_needs``) and the escape, sorted: what a sample is tested for."""
_LOADED = False
TIE_MARGIN = 1e-9
MARGIN = 0.1
"""Shares this close to the best are decided by specificity, not by the share."""


def register(cls: type[Grammar]) -> type[Grammar]:
    """Class decorator: add one instance of the grammar under its ``name``."""
    name = cls.name
    if name in _GRAMMARS:
        raise RegistryError(
            Reason.INTERNAL,
            f"grammar {name!r} registered twice ({type(_GRAMMARS[name]).__module__} and {cls.__module__})",
        )
    _GRAMMARS[name] = cls()
    _ORDERED.clear()  # built again, in name order, when next asked for
    _NEEDS.clear()
    _NEEDED_BY.clear()
    return cls


def grammar_modules() -> list[str]:
    """The modules of the grammars (one per grammar, and their shared helpers), in name order: what
    ``all_grammars`` imports, and what a process that forks workers can import once for all of them."""
    from . import grammars

    return [f"{grammars.__name__}.{info.name}"
            for info in sorted(pkgutil.iter_modules(grammars.__path__), key=lambda i: i.name)]


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    for module in grammar_modules():
        importlib.import_module(module)
    _LOADED = True


def all_grammars() -> list[Grammar]:
    """Every registered grammar, ordered by name."""
    _load()
    if not _ORDERED:
        _ORDERED[:] = [_GRAMMARS[k] for k in sorted(_GRAMMARS)]
    return list(_ORDERED)


def formats_markdown() -> str:
    """docs/formats.md, generated from the registry (`reconstruct formats --markdown`; a test keeps it current)."""
    def row(g: Grammar) -> str:
        kind = "JSON / database" if g.structured else "text"
        return f"| `{g.name}` | {g.version} | {kind} | " + g.description.replace("|", "\\|") + " |"

    rows = [row(g) for g in all_grammars()]
    return "\n".join([
        "# Formats",
        "",
        "Generated from the grammar registry by `reconstruct formats --markdown > docs/formats.md`; do not edit",
        "by hand (`tests/test_docs.py` fails when this page and the registry disagree). `reconstruct formats`",
        "prints the same grammars with an example input each, and `sample_logs/` holds a small file of each.",
        "How inputs are grouped, decoded and detected: [inputs.md](inputs.md).",
        "",
        "| grammar | version | kind | what it reads |",
        "|---|---|---|---|",
        *rows,
        "",
    ])


def get(name: str) -> Grammar:
    _load()
    try:
        return _GRAMMARS[name]
    except KeyError:
        raise RegistryError(
            Reason.UNKNOWN_GRAMMAR, f"no grammar {name!r}; registered: {', '.join(sorted(_GRAMMARS))}"
        ) from None


def detect(sample: str, name: str, *, threshold: float, forced: str | None = None) -> Detection:
    """Pick the grammar that explains the most of a sample, with a margin.

    Every grammar reports the share of the sample's records it explains (comparable across
    grammars). Candidates at or above ``threshold`` and within ``MARGIN`` of the best share
    contend; among them the most specific grammar wins (a platform's own headers beat a generic
    transcript reading of the same lines), then the higher share. The winner's margin is its lead
    over the best rival that specificity does not rule out; none at all is a tie.

    Raises DetectionError (no grammar, or a tie at the top) with every candidate's share.
    """
    if forced:
        get(forced)
        return Detection(forced, 1.0, {forced: 1.0}, forced=True)
    return _decide(_scores(sample, name), name, threshold)


def detect_many(samples: Sequence[tuple[str, str]], *, threshold: float,
                forced: str | None = None) -> list[Detection | DetectionError]:
    """``detect`` of every (sample, name), in order, each as its Detection or its DetectionError: the
    same shares and the same decision, for a batch of inputs at once.

    Each sample is read once for every grammar (``parsers.sample.Sample``); which ``detect_needs`` each
    holds is one polars test per needed string over all samples, and the line patterns of the grammars
    that score from them (``Grammar.detect_lines``) are counted over one table of all the samples' lines
    (``parsers.linecount.LineTable``, built once). A detector that fails fails its own input only."""
    if forced:
        get(forced)
        return [Detection(forced, 1.0, {forced: 1.0}, forced=True) for _ in samples]
    texts = [of(s) for s, _ in samples]
    table = [i for i, s in enumerate(texts) if polars_safe(s)]  # a lone surrogate stays out of polars
    held = _held_many([texts[i] for i in table])
    counted = _counted_many([texts[i] for i in table], held)
    holds: list[frozenset[str] | None] = [None] * len(texts)
    counts: list[dict[str, LineCounts]] = [{} for _ in texts]
    for row, i in enumerate(table):
        holds[i], counts[i] = held[row], counted[row]
    out: list[Detection | DetectionError] = []
    for text, (_, name), hold, count in zip(texts, samples, holds, counts, strict=True):
        try:
            out.append(_decide(_scores(text, name, holds=hold, counts=count), name, threshold))
        except DetectionError as exc:
            out.append(exc)
    return out


def _held_many(texts: list[Sample]) -> list[frozenset[str]]:
    """The ``detect_needs`` strings (and the escape ``\\u``) each sample holds, tested by polars."""
    needs = _needs()
    if not texts:
        return []
    found = pl.DataFrame({"sample": texts}, schema={"sample": pl.String}).select(
        pl.col("sample").str.contains(s, literal=True).alias(str(k)) for k, s in enumerate(needs))
    columns = [found.to_series(k).to_list() for k in range(len(needs))]
    return [frozenset(s for s, column in zip(needs, columns, strict=True) if column[row])
            for row in range(len(texts))]


def _counted_many(texts: list[Sample], held: list[frozenset[str]]) -> list[dict[str, LineCounts]]:
    """Per sample, the line counts of every grammar that scores from them and is a candidate for it: one
    query over one table of the samples' lines per set of candidate samples."""
    out: list[dict[str, LineCounts]] = [{} for _ in texts]
    by_rows: dict[tuple[int, ...], dict[str, LinePatterns]] = {}
    limits = [0] * len(texts)  # the lines of each sample its rules read
    for grammar in all_grammars():
        rows = tuple(row for row, hold in enumerate(held) if _candidate(grammar, hold))
        if grammar.detect_lines is not None and rows:
            by_rows.setdefault(rows, {})[grammar.name] = grammar.detect_lines
            for row in rows:
                limits[row] = max(limits[row], grammar.detect_lines.limit)
    if not by_rows:
        return out
    table = LineTable(texts, limits)
    for rows, rules in by_rows.items():
        counted = table.count(rules, None if len(rows) == len(texts) else list(rows))
        for name, counts in counted.items():
            for row in rows:
                out[row][name] = counts[row]
    return out


def _candidate(grammar: Grammar, holds: frozenset[str]) -> bool:
    """Whether a sample holding ``holds`` of the needed strings is worth the grammar's detector."""
    return not grammar.detect_needs or ESCAPE in holds or not holds.isdisjoint(grammar.detect_needs)


def _decide(scores: dict[str, float], name: str, threshold: float) -> Detection:
    """The winner of the shares, as ``detect`` describes; DetectionError with every share when none wins."""
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    top = ranked[0][1]
    listing = ", ".join(f"{k}={v}" for k, v in ranked if v > 0) or "every grammar scored 0"
    if top < threshold:
        raise DetectionError(Reason.NO_GRAMMAR, f"no grammar explains >= {threshold} of the sample: {listing}",
                             path=name)
    floor = max(threshold, top - MARGIN)
    contenders = [(_GRAMMARS[k].specificity, v, k) for k, v in ranked if v >= floor]
    specificity, share, winner = max(contenders, key=lambda c: (c[0], c[1]))
    rivals = [v for k, v in ranked if k != winner and _GRAMMARS[k].specificity >= specificity]
    margin = round(share - max(rivals, default=0.0), 4)
    if margin <= TIE_MARGIN:
        raise DetectionError(Reason.AMBIGUOUS_GRAMMAR, f"tie at the top: {listing}", path=name)
    return Detection(winner, share, {k: v for k, v in ranked if v > 0}, margin=margin)


ESCAPE = "\\u"
"""JSON could spell a needed key through escapes: a sample holding one runs every detector."""


def _scores(sample: str, name: str, *, every: bool = False, holds: frozenset[str] | None = None,
            counts: dict[str, LineCounts] | None = None) -> dict[str, float]:
    """Every grammar's share of the sample. A grammar none of whose ``detect_needs`` the sample holds
    scores 0 without running its detector (``every``: run them all, as the tests compare). ``holds``: the
    needed strings the sample holds, when already known; ``counts``: line counts already made, by grammar."""
    sample = of(sample)
    if holds is None:
        holds = frozenset(s for s in _needs() if s in sample)
    grammars = all_grammars()
    scores = dict.fromkeys((g.name for g in grammars), 0.0)
    for grammar in grammars if every else _candidates(holds):
        try:
            if counts and grammar.name in counts:
                score = float(grammar.detect_counted(sample, name, counts[grammar.name]))
            else:
                score = float(grammar.detect(sample, name))
        except Exception as exc:  # a detector bug must not hide the other candidates
            raise DetectionError(
                Reason.INTERNAL, f"detector failed: {type(exc).__name__}: {exc}", path=name, grammar=grammar.name
            ) from exc
        scores[grammar.name] = round(min(max(score, 0.0), 1.0), 4)
    return scores


def _needs() -> list[str]:
    """Every grammar's needed strings and the escape, which a sample is tested for (sorted)."""
    if not _NEEDS:
        _NEEDS[:] = sorted({s for g in all_grammars() for s in g.detect_needs} | {ESCAPE})
    return _NEEDS


def _candidates(holds: frozenset[str]) -> list[Grammar]:
    """The grammars worth running on a sample that holds ``holds`` of the needed strings, in name order."""
    if ESCAPE in holds:
        return all_grammars()
    if not _NEEDED_BY:
        for g in all_grammars():
            for s in g.detect_needs or ("",):  # "": a grammar that needs nothing
                _NEEDED_BY.setdefault(s, set()).add(g.name)
    names = _NEEDED_BY.get("", set()).union(*(_NEEDED_BY.get(s, ()) for s in holds))
    return [g for g in all_grammars() if g.name in names]


_NEEDED_BY: dict[str, set[str]] = {}
"""The grammars that need each string ("": those that need none), for ``_candidates``."""


def conversation_of(file_name: str) -> tuple[str, str, int] | None:
    """(grammar, conversation key, part number) of a file that is one part of a conversation over
    several files (``Grammar.group_of``), by the first grammar in name order that claims it; else None."""
    for grammar in all_grammars():
        found = grammar.group_of(file_name)
        if found is not None:
            return grammar.name, *found
    return None
