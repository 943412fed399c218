"""A detection sample read once for every grammar: its lines, non-blank lines and parsed JSON, shared.

``registry.detect`` and ``registry.detect_many`` hand every detector the same ``Sample``: a ``str`` (so a
detector's rules read it as the text it always was) that also keeps what detectors derive from it. The
helpers below take any ``str``: on a ``Sample`` they compute once and keep the result, on a plain string
(a test calling one detector) they compute it. What they return is shared between detectors and never
modified by them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import orjson

FULL = 65536
"""A sample this long may have been cut at the end of the detection window (inside a line)."""

T = TypeVar("T")
BAD_JSON = object()
"""``json_line``'s value for a line that is not JSON."""


class Sample(str):
    """The first 64 KiB of one input, as text, with what detectors derived from it (``memo``)."""

    __slots__ = ("memo",)

    def __new__(cls, text: str) -> Sample:
        self = super().__new__(cls, text)
        self.memo = {}
        return self


def of(text: str) -> Sample:
    """``text`` as a Sample (itself when it already is one)."""
    return text if isinstance(text, Sample) else Sample(text)


def shared(sample: str, key: Any, make: Callable[[], T]) -> T:
    """What ``make`` derives from the sample, computed once per Sample under ``key``."""
    if not isinstance(sample, Sample):
        return make()
    try:
        return sample.memo[key]
    except KeyError:
        value = sample.memo[key] = make()
        return value


def lines(sample: str) -> list[str]:
    """The sample split at line ends (``str.split("\\n")``)."""
    return shared(sample, "lines", lambda: sample.split("\n"))


def nonblank(sample: str, limit: int) -> list[str]:
    """The non-blank lines among the first ``limit`` lines."""
    return shared(sample, ("nonblank", limit), lambda: [ln for ln in lines(sample)[:limit] if ln.strip()])


def whole_nonblank(sample: str, limit: int) -> list[str]:
    """``nonblank(limit)`` without its last line when the sample may end inside it (a full window)."""
    def make() -> list[str]:
        found = nonblank(sample, limit)
        return found[:-1] if len(sample) >= FULL and len(found) > 1 else found
    return shared(sample, ("whole", limit), make)


def json_line(sample: str, line: str) -> Any:
    """One line of the sample parsed as JSON (``BAD_JSON`` when it is not), parsed once per sample."""
    parsed: dict[str, Any] | None = sample.memo.setdefault("json", {}) if isinstance(sample, Sample) else None
    if parsed is not None and line in parsed:
        return parsed[line]
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        value = BAD_JSON
    if parsed is not None:
        parsed[line] = value
    return value
