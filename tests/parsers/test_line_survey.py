"""A line grammar's surveys of an input's blocks, added up in order, are the survey of the whole input."""

from __future__ import annotations

from functools import reduce

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers import registry
from parsers.base import LineGrammar
from parsers.columns import LineTable
from parsers.text import decode
from tests.parsers.test_columns import CASES

LINE = [(g, p) for g, p in CASES if isinstance(registry.get(g), LineGrammar)]


def _decided(grammar: str, survey) -> tuple:
    """What only the whole input decides, per grammar."""
    if grammar == "whatsapp":
        return survey.order, survey.runs, survey.run_lines, survey.dialect
    if grammar == "irc":
        return survey.dialect, survey.counted
    if grammar == "markdown":
        return survey.styles, survey.exchange
    if grammar == "discord-text":
        return survey.order, survey.runs, survey.speakers, survey.authors
    if grammar == "inferred":
        return survey.learnt, survey.head, survey.shape, survey.first_like
    if grammar == "discord-txt":
        return survey.order, survey.runs, survey.post_line, survey.closing and survey.closing.groupdict()
    return survey.reading.accepted, survey.labels.shapes, survey.first


def _summary(grammar: str, survey) -> tuple:
    plain = survey.whole_only is None
    return (survey.lines, survey.whole_only is None, *((survey.counted, survey.turns, *_decided(grammar, survey))
                                                       if plain else ()))


@pytest.mark.parametrize(("grammar", "path"), LINE, ids=lambda v: getattr(v, "name", v))
@settings(max_examples=15, deadline=None)
@given(st.data())
def test_blocks_add_up_to_the_whole(grammar, path, data):
    g = registry.get(grammar)
    source = decode(path.read_bytes(), path.name)
    whole = g.survey([source], LineTable.of([source.text]), [1])[0]
    lines = source.text.split("\n")
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(len(lines) - 1, 1)), max_size=6))))
    blocks, first = [], 1
    for a, b in zip([0, *cuts], [*cuts, len(lines)], strict=True):
        if a >= b:
            continue
        text = "\n".join(lines[a:b]) + ("\n" if b < len(lines) else "")
        if text:
            blocks.append(g.survey([source], LineTable.of([text]), [first])[0])
        first += b - a
    if not blocks:
        return
    total = reduce(lambda s, more: s.then(more), blocks)
    if grammar == "markdown" and (total.whole_only or "").startswith("front matter not closed in the first block"):
        return  # a first block that ends inside the front matter reads the input whole (a stream's blocks are MiBs)
    assert _summary(grammar, total) == _summary(grammar, whole)
