"""LINE text exports: clocks in every verified notation, quoted multi-line messages, system lines, and
detection that claims LINE's shapes and nothing of its neighbours'."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.settings import Settings
from parsers import registry
from parsers.grammars.line import Line, explained_share
from parsers.text import decode

HEAD = "[LINE] Chat history with Ann\nSaved on: 2024/05/02 21:14\n\n2024/05/01(Wed)\n"


def _parse(text, name="chat.txt"):
    (session,) = Line().parse(decode(text.encode(), name), Settings())
    return session


def _detect(text, name="chat.txt"):
    return registry.detect(text, name, threshold=Settings().detect_threshold)


@given(st.integers(0, 23), st.integers(0, 59), st.sampled_from(["ampm", "AM/PM", "ja", "zh"]))
def test_twelve_hour_clocks_read_as_the_same_time(hour, minute, style):
    twelve = hour % 12 or 12
    pm = hour >= 12
    clock = {"ampm": f"{twelve}:{minute:02d}{'pm' if pm else 'am'}",
             "AM/PM": f"{twelve}:{minute:02d} {'PM' if pm else 'AM'}",
             "ja": f"{'午後' if pm else '午前'}{twelve}:{minute:02d}",
             "zh": f"{'下午' if pm else '上午'}{twelve:02d}:{minute:02d}"}[style]
    session = _parse(f"{HEAD}{clock}\tAnn\thi\n")
    assert session.turns[0].time == datetime(2024, 5, 1, hour, minute)
    assert session.turns[0].time_raw == clock


@pytest.mark.parametrize("line", ["2024/05/01(Wed)", "2024/5/1（水）", "2024.05.01 Wednesday", "Wed, 05/01/2024",
                                  "2024/5/1周三", "2024/05/01（週三）"])
def test_every_date_line_shape_dates_the_messages_after_it(line):
    session = _parse(f"[LINE] Chat history with Ann\n\n{line}\n10:15\tAnn\thi\n")
    assert session.turns[0].time == datetime(2024, 5, 1, 10, 15)


def test_a_quoted_multi_line_message_is_one_turn_without_its_quotes():
    session = _parse(f'{HEAD}10:15\tAnn\t"one\n\ntwo"\n10:16\tBo\t"kept" as typed\n')
    assert [t.content for t in session.turns] == ["one\n\ntwo", '"kept" as typed']
    assert session.turns[0].lines == (5, 7)


def test_lines_without_a_name_are_system_turns():
    session = _parse(f"{HEAD}10:15\t\tBo joined the group.\n10:16\tAnn unsent a message.\n")
    assert [(t.speaker, t.role, t.content) for t in session.turns] == [
        ("System", "system", "Bo joined the group."), ("System", "system", "Ann unsent a message.")]


def test_messages_before_any_date_line_keep_no_time_and_are_counted_in_a_warning():
    session = _parse("[LINE] Chat history with Ann\n\n10:15\tAnn\thi\n")
    assert session.turns[0].time is None and session.turns[0].time_raw == "10:15"
    assert session.warnings and "1 turn time could not be read" in session.warnings[0]


def test_the_export_header_is_declared_and_read():
    session = _parse(HEAD + "10:15\tAnn\thi\n")
    assert session.title == "Chat history with Ann" and session.meta["savedOn"] == "2024/05/02 21:14"
    assert [(r.kind, r.lines) for r in session.regions] == [("session_header", (1, 3)), ("boilerplate", (4, 4))]


def test_a_whole_export_is_detected_as_line_with_a_margin():
    detection = _detect(HEAD + "10:15\tAnn\thi\n10:16\tBo\thello\n")
    assert detection.grammar == "line" and detection.margin >= 0.5, detection.scores


@pytest.mark.parametrize("text", [
    "10:15\tAnn\thi\n10:16\tBo\thello\n",  # tab-separated clock lines alone: too common to claim
    "[01/05/2024, 10:15:00] Ann: hi\n[01/05/2024, 10:16:00] Bo: hello\n",  # WhatsApp
    "01/05/2024, 10:15 - Ann: hi\n",
    "[10:15] <ann> hi\n[10:16] <bo> hello\n",  # IRC
    "Ann: hi\nBo: hello\n",  # a transcript
])
def test_neighbours_formats_score_nothing(text):
    assert explained_share(text) == 0.0


def test_count_turns_counts_message_lines_on_its_own():
    text = f'{HEAD}10:15\tAnn\t"a\nb"\n10:16\t\tBo joined the group.\n下午07:04\t小華\t好\n'
    assert Line().count_turns(text) == len(_parse(text).turns) == 3
