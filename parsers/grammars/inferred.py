"""A line-oriented format no registered grammar knows, with a repeated header prefix: inferred.

The shape of each line's start is generalised (digit runs -> ``\\d+``, white space -> ``\\s+``,
punctuation kept, the first word run -> the speaker, up to the next punctuation mark, which ends
the header). When one shape starts at least 3 lines and 40% of the non-blank lines (the rest
may be continuation lines), and has a digit or a punctuation mark before the speaker, it becomes
a header pattern, the file is parsed with it, and the pattern is recorded as a heuristic
``H-INFER-<hash>`` with its evidence in ``frankensteen_learning_db`` for a person to review and
promote to a grammar. The pattern is a guess, so coverage is always marked partial. Detection
scores low (0.5): any real grammar wins.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import regex

from models.records import Heuristic, ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.engine import split_blocks
from parsers.registry import register
from parsers.speakers import role_of

_TOKEN = regex.compile(r"\d+|[^\W\d_]+|[ \t]+|.")
_STAMP = regex.compile(
    r"(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})[ T]+(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}))?"
)
MIN_LINES, MIN_SHARE, SCORE = 3, 0.4, 0.5


def shape(line: str) -> str | None:
    """The regex of a line's header, or None when it has none (no name, or no prefix before it)."""
    parts: list[str] = []
    named = prefixed = False
    words = 0
    for tok in _TOKEN.findall(line[:80]):
        if named:
            if tok.isspace():
                continue
            if tok.isalnum() or tok in ".'-":
                words += 1
                if words > 4:
                    return None  # a sentence, not a name before a delimiter
                continue
            parts.append(r"[ \t]*" + regex.escape(tok) + r"[ \t]?")
            return "^" + "".join(parts)
        if tok.isdigit():
            parts.append(r"\d+")
            prefixed = True
        elif tok.isspace():
            parts.append(r"[ \t]+")
        elif tok.isalpha():
            if not prefixed:
                return None
            parts.append(r"(?P<name>[^\n]{1,40}?)")
            named = True
        else:
            parts.append(regex.escape(tok))
            prefixed = True
    return None


def infer(text: str) -> tuple[str, int, list[int]] | None:
    """(pattern, lines it starts, first line numbers) of the dominant header shape, if any."""
    numbered = [(i, ln) for i, ln in enumerate(text.split("\n")[:2000], 1) if ln.strip()]
    shapes = Counter()
    where: dict[str, list[int]] = {}
    for number, line in numbered:
        s = shape(line)
        if s:
            shapes[s] += 1
            where.setdefault(s, []).append(number)
    if not shapes:
        return None
    pattern, count = max(shapes.items(), key=lambda kv: (kv[1], kv[0]))
    if count < MIN_LINES or count < MIN_SHARE * len(numbered):
        return None
    return pattern, count, where[pattern][:5]


@register
class Inferred(Grammar):
    name = "inferred"
    version = "1"
    description = "Unknown line format with a repeated header prefix: pattern inferred, coverage partial"
    example = "<<2024/03/01 10:00>> alice | the header shape is learned from the file"

    def detect(self, sample: str, name: str) -> float:
        return SCORE if infer(sample) else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        text = source.text
        found = infer(text)
        if found is None:
            return
        pattern, count, samples = found
        header = regex.compile(pattern, regex.MULTILINE)
        hid = "H-INFER-" + hashlib.sha256(pattern.encode()).hexdigest()[:8].upper()
        session = ParsedSession(None, "none", [], raw=(pattern, text))
        session.lines = (1, text.count("\n") + (0 if text.endswith("\n") else 1))
        session.coverage_reason = (
            f"the header pattern was inferred from this file ({hid}); a guessed pattern cannot guarantee coverage"
        )
        session.heuristics.append(Heuristic(hid, "Header pattern inferred from a repeated line prefix", {
            "pattern": pattern, "linesMatched": count, "sampleLines": samples, "source": source.name,
        }))
        for block in split_blocks(text, header):
            if block.header is None:
                session.meta["preamble"] = block.body.strip("\n")
                continue
            prefix = block.header.group(0)[: block.header.start("name") - block.header.start()]
            speaker = block.header["name"].strip()
            when = None
            if m := _STAMP.search(prefix):
                try:
                    when = datetime(int(m["y"]), int(m["m"]), int(m["d"]), int(m["H"]), int(m["M"]), int(m["S"] or 0))
                except ValueError:
                    when = None
            session.turns.append(Turn(speaker, role_of(speaker), block.body, when, prefix.strip() or None, None,
                                      "message", (block.line_start, block.line_end)))
        yield session

    def count_turns(self, raw: Any) -> int:
        pattern, text = raw
        compiled = regex.compile(pattern)
        return sum(1 for line in text.split("\n") if compiled.match(line))
