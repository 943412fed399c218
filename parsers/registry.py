"""The one registry of grammars: discovery, lookup and detection.

Adding a format means adding one module to parsers/grammars/ whose grammar class carries
``@register``; the registry imports every module there, in name order, and refuses duplicates.
Tests and the ``formats`` command read the registry, never a list written out by hand.
"""

from __future__ import annotations

import importlib
import pkgutil

from models.errors import DetectionError, Reason, RegistryError
from models.records import Detection

from .base import Grammar

_GRAMMARS: dict[str, Grammar] = {}
_ORDERED: list[Grammar] = []
"""``all_grammars``' list, built once every module is loaded (detection reads it for every input)."""
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
    return cls


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    from . import grammars

    for info in sorted(pkgutil.iter_modules(grammars.__path__), key=lambda i: i.name):
        importlib.import_module(f"{grammars.__name__}.{info.name}")
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
    scores = _scores(sample, name)
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


def _scores(sample: str, name: str, *, every: bool = False) -> dict[str, float]:
    """Every grammar's share of the sample. A grammar none of whose ``detect_needs`` the sample holds
    scores 0 without running its detector (``every``: run them all, as the tests compare)."""
    scores: dict[str, float] = {}
    escaped = "\\u" in sample  # JSON could spell a needed key through escapes
    for grammar in all_grammars():
        needs = grammar.detect_needs
        if needs and not every and not escaped and not any(s in sample for s in needs):
            scores[grammar.name] = 0.0
            continue
        try:
            score = float(grammar.detect(sample, name))
        except Exception as exc:  # a detector bug must not hide the other candidates
            raise DetectionError(
                Reason.INTERNAL, f"detector failed: {type(exc).__name__}: {exc}", path=name, grammar=grammar.name
            ) from exc
        scores[grammar.name] = round(min(max(score, 0.0), 1.0), 4)
    return scores


def conversation_of(file_name: str) -> tuple[str, str, int] | None:
    """(grammar, conversation key, part number) of a file that is one part of a conversation over
    several files (``Grammar.group_of``), by the first grammar in name order that claims it; else None."""
    for grammar in all_grammars():
        found = grammar.group_of(file_name)
        if found is not None:
            return grammar.name, *found
    return None
