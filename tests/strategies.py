"""Hypothesis strategies for round-trip tests: a seeded chat every grammar can render."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from hypothesis import strategies as st

NAMES = ("Alice", "Bob", "Carol Smith", "Åsa Öberg", "Dr. Feather", "José", "mlomb", "Zoë-Lynn")
_WORD = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZåäöéü0123456789,.!?'",
    min_size=1,
    max_size=12,
)
_LINE = st.lists(_WORD, min_size=1, max_size=8).map(" ".join).map(lambda s: "x" + s)


@dataclass(frozen=True)
class GenTurn:
    speaker: str
    content: str
    time: datetime


@dataclass(frozen=True)
class GenSession:
    turns: tuple[GenTurn, ...]


@st.composite
def sessions(draw, names=NAMES, multiline: bool = True, max_turns: int = 12, min_turns: int = 1,
             since: datetime = datetime(2001, 1, 1)) -> GenSession:
    """A chat of min_turns..max_turns turns, times ascending by whole seconds from ``since``, some turns
    multi-line."""
    pool = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True))
    start = draw(st.datetimes(min_value=since, max_value=datetime(2030, 12, 31)))
    start = start.replace(microsecond=0)
    n = draw(st.integers(min_turns, max_turns))
    turns = []
    t = start
    for _ in range(n):
        t = t + timedelta(seconds=draw(st.integers(0, 86_400)))
        lines = draw(st.lists(_LINE, min_size=1, max_size=3 if multiline else 1))
        turns.append(GenTurn(draw(st.sampled_from(pool)), "\n".join(lines), t))
    return GenSession(tuple(turns))
