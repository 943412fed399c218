"""Line-pattern counts for detection: one sample by the grammar's own regex, or the samples of many
inputs at once as polars expressions over one table of their lines.

A grammar whose detection rule is a share of header lines declares its patterns (``LinePatterns``; the
lines an earlier alternative of its header takes are a pattern's ``unless``) and scores from their counts
(``Grammar.detect_counted``). ``count`` reads one sample in Python; ``LineTable`` puts every line of every
sample in one table (an ``input`` column), tests each pattern as a Rust regex (``columns.rust_pattern``:
the exact translation the column route uses, refused where there is none) and aggregates per input with
``group_by``, for many rules in one query. ``tests/parsers/test_detect_fast.py`` compares the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import polars as pl

from models.errors import DetectionError, Reason
from parsers.columns import PY_SPACE, rust_pattern, unnamed
from parsers.sample import lines, nonblank


@dataclass(frozen=True)
class LinePatterns:
    """Named line patterns tested at the start of each non-blank line among a sample's first ``limit``."""

    limit: int
    patterns: dict[str, Any]
    """name -> compiled ``re``/``regex`` pattern, anchored with ``^``."""
    unless: dict[str, Any] = field(default_factory=dict)
    """name -> a pattern (anchored with ``^``) whose lines the pattern of that name does not count: which
    alternative of a header matched, where an earlier alternative takes the line first."""

    def test(self, key: str, line: str) -> bool:
        """Whether the pattern ``key`` counts the line (it matches, and its ``unless`` does not)."""
        if not self.patterns[key].match(line):
            return False
        return key not in self.unless or not self.unless[key].match(line)

    @cached_property
    def rust(self) -> dict[str, str]:
        """The patterns in Rust's syntax (raises ``Untranslatable`` for one that has no exact equivalent)."""
        return {k: unnamed(rust_pattern(p)) for k, p in self.patterns.items()}

    @cached_property
    def rust_unless(self) -> dict[str, str]:
        """The ``unless`` patterns in Rust's syntax, as ``rust``."""
        return {k: unnamed(rust_pattern(p)) for k, p in self.unless.items()}

    def column_tests(self) -> dict[str, pl.Expr]:
        """Per pattern, the polars test of a ``line`` column that ``test`` makes of one line."""
        line = pl.col("line")
        tests = {k: line.str.contains(p) for k, p in self.rust.items()}
        for k, p in self.rust_unless.items():
            tests[k] = tests[k] & ~line.str.contains(p)
        return tests


@dataclass(frozen=True)
class LineCounts:
    """What the patterns found in one sample: its non-blank lines, and per pattern the lines it matches
    and the index (among the non-blank lines) of the first."""

    lines: int
    hits: dict[str, int] = field(default_factory=dict)
    first: dict[str, int | None] = field(default_factory=dict)


def count(sample: str, rule: LinePatterns) -> LineCounts:
    """The counts of one sample, by the patterns themselves."""
    lines = nonblank(sample, rule.limit)
    hits: dict[str, int] = {}
    first: dict[str, int | None] = {}
    for key in rule.patterns:
        found = [i for i, ln in enumerate(lines) if rule.test(key, ln)]
        hits[key], first[key] = len(found), (found[0] if found else None)
    return LineCounts(len(lines), hits, first)


def polars_safe(sample: str) -> bool:
    """True when the sample can be a polars string (UTF-8: no lone surrogate from a lenient decode)."""
    try:
        sample.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class LineTable:
    """The first lines of many samples (``limits``: how many of each) in one polars table (``input``, ``raw``:
    its index among the sample's lines, ``line``, ``blank``), built once and counted by any number of rules
    that read no further. Every sample must be ``polars_safe``."""

    def __init__(self, samples: list[str], limits: list[int]) -> None:
        inputs: list[int] = []
        every: list[str] = []
        self.limits = limits
        for i, (sample, limit) in enumerate(zip(samples, limits, strict=True)):
            own = lines(sample)[:limit]
            inputs.extend([i] * len(own))
            every.extend(own)
        table = pl.DataFrame({"input": inputs, "line": every}, schema={"input": pl.UInt32, "line": pl.String})
        blank = pl.col("line").str.strip_chars(PY_SPACE).str.len_bytes() == 0  # as ``str.strip`` sees it
        self.table = table.with_columns(pl.int_range(pl.len(), dtype=pl.UInt32).over("input").alias("raw"),
                                        blank.alias("blank"))

    def count(self, rules: dict[str, LinePatterns], rows: list[int] | None = None) -> dict[str, list[LineCounts]]:
        """Per rule (by name), the counts of every sample in order (``count`` of each), from one query;
        ``rows``: only those samples are read (the others' counts are empty)."""
        most = max(rule.limit for rule in rules.values())
        if any(self.limits[row] < most for row in (range(len(self.limits)) if rows is None else rows)):
            raise DetectionError(Reason.INTERNAL, f"a line rule reads {most} lines, more than the table holds")
        kept = ~pl.col("blank") if rows is None else ~pl.col("blank") & pl.col("input").is_in(rows)
        aggregated = (
            self.table.lazy()
            .filter(kept)
            .with_columns(pl.int_range(pl.len(), dtype=pl.UInt32).over("input").alias("at"))
            .group_by("input")
            .agg([e for name, rule in rules.items() for e in _aggregations(name, rule)])
            .collect()
        )
        out = {name: [LineCounts(0, dict.fromkeys(r.patterns, 0), dict.fromkeys(r.patterns))] * len(self.limits)
               for name, r in rules.items()}
        for row in aggregated.iter_rows(named=True):
            for name, rule in rules.items():
                out[name][row["input"]] = LineCounts(row[f"{name}\0lines"],
                                                     {k: row[f"{name}\0hits\0{k}"] for k in rule.patterns},
                                                     {k: row[f"{name}\0first\0{k}"] for k in rule.patterns})
        return out


def _aggregations(name: str, rule: LinePatterns) -> list[pl.Expr]:
    """A rule's counts of one input's non-blank lines (``at``: each one's index among them): the lines
    within its limit, and per pattern the lines it counts and the first."""
    within = pl.col("raw") < min(rule.limit, _MAX_RAW)
    exprs = [within.sum().alias(f"{name}\0lines")]
    for k, test in rule.column_tests().items():
        hit = test & within
        exprs += [hit.sum().alias(f"{name}\0hits\0{k}"), pl.col("at").filter(hit).min().alias(f"{name}\0first\0{k}")]
    return exprs


_MAX_RAW = 2**32 - 1
"""The largest line index the ``raw`` column holds (a limit above it takes every line)."""


def count_many(samples: list[str], rule: LinePatterns) -> list[LineCounts]:
    """The counts of every sample, in order, from one table of all their lines. Every sample must be
    ``polars_safe``."""
    return LineTable(samples, [rule.limit] * len(samples)).count({"rule": rule})["rule"]
