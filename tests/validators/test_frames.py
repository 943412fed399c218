"""The accounting of many frame sessions as one table (validators/frames.py) gives, field for field,
what the per-session accounting (tests/oracle/frames.py) gives each session, for every input the tests
know and for generated layouts of spans, regions, blank lines and sessions of one text."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.errors import ReconstructError
from models.records import ParsedSession, Region, RegionKind, ShapedLine
from models.settings import Settings
from parsers import registry
from parsers.text import decode
from tests.helpers import columns_of, known_inputs
from tests.oracle.frames import PerSession
from validators.accounting import Accountant
from validators.frames import _rust_shape, account_frames


def _frame_sessions(path: Path, columns: Settings):
    """(grammar, source, sessions read as frames) of an input a line grammar reads as columns, else None."""
    try:
        source = decode(path.read_bytes(), path.name)
        grammar = registry.get(registry.detect(source.text[:65536], path.name, threshold=0.5).grammar)
        sessions = columns_of(grammar, source, columns)
        return (grammar, source, sessions) if any(s.frame is not None for s in sessions) else None
    except ReconstructError:
        return None


def test_every_known_input_is_accounted_in_one_batch_as_one_session_at_a_time():
    """All frame sessions of all goldens, samples and conformance inputs accounted in ONE call."""
    columns = Settings()
    deferred, expected, names = [], [], []
    for path in known_inputs():
        read = _frame_sessions(path, columns)
        if read is None:
            continue
        grammar, source, sessions = read
        product = Accountant.of(source, lines=True, shape=grammar.turn_shape)
        oracle = PerSession.of(source, lines=True, shape=grammar.turn_shape)
        for i, parsed in enumerate(sessions):
            last = i == len(sessions) - 1
            item = product.defer(parsed, last)
            assert item is not None, path
            deferred.append(item)
            expected.append(oracle.account(parsed, last))
            names.append(f"{path.name}#{i}")
    got = account_frames(deferred)
    assert len(deferred) > 40  # the goldens and samples alone hold 46 frame sessions (more with ../shared)
    wrong = [(n, g, e) for n, g, e in zip(names, got, expected, strict=True) if g != e]
    assert not wrong, wrong[:3]


SHAPES = {
    "rust": r"^#### ",  # Rust's regex says it: matched as a column
    "python": r"^(?=> )>",  # a lookahead: matched line by line by Python's regex
    "none": None,
}
LINES = st.sampled_from(["x", "", " ", "\u3000", "#### h", "> q", "y z", "####x"])
SPAN = st.tuples(st.integers(-1, 16), st.integers(-1, 4)).map(lambda t: (t[0], t[0] + t[1]))


@st.composite
def _text_sessions(draw):
    """One text and its sessions in order: turn spans (gaps, overlaps, out of range), regions,
    declared lines and the session's own span, or none (the hull of its spans)."""
    lines = draw(st.lists(LINES, max_size=16))
    text = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
    sessions = []
    for _ in range(draw(st.integers(1, 3))):
        turns = draw(st.lists(SPAN, max_size=6))
        regions = [Region(RegionKind.BOILERPLATE, "test", lines=s) for s in draw(st.lists(SPAN, max_size=12))]
        shaped = [ShapedLine(n, "quoted") for n in draw(st.lists(st.integers(1, 16), max_size=3))]
        own = draw(st.one_of(st.none(), SPAN))
        frame = pl.DataFrame({"line_start": [a for a, _ in turns], "line_end": [b for _, b in turns]},
                             schema={"line_start": pl.Int64, "line_end": pl.Int64})
        sessions.append(ParsedSession(None, "none", [], lines=own, regions=regions, shaped=shaped, frame=frame))
    return text, draw(st.sampled_from(sorted(SHAPES))), sessions


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_text_sessions(), min_size=1, max_size=4), st.randoms(use_true_random=False), st.data())
def test_generated_layouts_account_in_batches_as_one_session_at_a_time(texts, rnd, data):
    """Sessions taken in order, text by text, and accounted in one batch or two (a text's sessions may
    straddle them, as a large read's do), the sessions of a batch in any order."""
    deferred, expected = [], []
    for text, shape, sessions in texts:
        product = Accountant([(None, text)], lines=True, shape=SHAPES[shape])
        oracle = PerSession([(None, text)], lines=True, shape=SHAPES[shape])
        for i, parsed in enumerate(sessions):
            last = i == len(sessions) - 1
            deferred.append(product.defer(parsed, last))
            expected.append(oracle.account(parsed, last))
    cut = data.draw(st.integers(0, len(deferred)))
    for batch in (list(range(cut)), list(range(cut, len(deferred)))):
        rnd.shuffle(batch)  # the batch's order is not the texts' order
        got = account_frames([deferred[i] for i in batch])
        for i, found in zip(batch, got, strict=True):
            assert found == expected[i]


def test_a_shape_rusts_regex_can_say_is_matched_as_a_column_and_one_with_a_lookaround_is_not():
    assert _rust_shape(SHAPES["rust"]) is not None
    assert _rust_shape(registry.get("irc").turn_shape) is not None  # alternatives anchored inside
    assert _rust_shape(SHAPES["python"]) is None
    assert _rust_shape(registry.get("whatsapp").turn_shape) is None


def test_an_empty_batch_accounts_nothing():
    assert account_frames([]) == []


def test_a_later_batch_finds_a_swallowed_header_on_the_first_line_it_reads():
    text = "#### a\nx\n#### b\n#### c\n"
    sessions = [ParsedSession(None, "none", [], lines=(a, b), frame=pl.DataFrame({"line_start": [s], "line_end": [e]}))
                for (a, b), (s, e) in [((1, 2), (1, 2)), ((3, 4), (4, 4))]]
    product = Accountant([(None, text)], lines=True, shape=SHAPES["rust"])
    oracle = PerSession([(None, text)], lines=True, shape=SHAPES["rust"])
    deferred = [product.defer(s, i == 1) for i, s in enumerate(sessions)]
    expected = [oracle.account(s, i == 1) for i, s in enumerate(sessions)]
    got = account_frames(deferred[:1]) + account_frames(deferred[1:])  # two batches
    assert got == expected and got[1].merged_listed == ["line 3"]
