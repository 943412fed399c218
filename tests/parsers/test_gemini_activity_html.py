"""Gemini Apps Activity in Takeout's default HTML form (MyActivity.html): entries read into the JSON
form's entries and read as that form is; times with their zone abbreviation. Before this grammar the
page was no grammar's (quarantined ``no_grammar``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import orjson
import pytest

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.grammars.gemini_activity_html import takeout_time
from parsers.text import decode
from tests.helpers import GOLDEN
from validators.accounting import Accountant

PAGE = GOLDEN / "gemini-activity-html" / "Gemini Apps" / "MyActivity.html"


def _cell(body: str) -> str:
    return ('<div class="outer-cell mdl-cell"><div class="mdl-grid"><div class="header-cell"><p class="mdl-typography'
            f'--title">Gemini Apps<br></p></div><div class="content-cell mdl-typography--body-1">{body}</div>'
            '<div class="content-cell mdl-typography--caption"><b>Products:</b><br>&emsp;Gemini Apps<br></div>'
            '</div></div>')


@pytest.mark.parametrize(("text", "when"), [
    ("Jun 1, 2025, 10:15:22 AM CEST", datetime(2025, 6, 1, 8, 15, 22, tzinfo=UTC)),
    ("Jun 1, 2025, 10:15:22\u202fPM PST", datetime(2025, 6, 2, 6, 15, 22, tzinfo=UTC)),
    ("Jan 5, 2024, 12:00:01 AM GMT+05:30", datetime(2024, 1, 4, 18, 30, 1, tzinfo=UTC)),
    ("Jun 1, 2025, 10:15:22 AM", datetime(2025, 6, 1, 10, 15, 22)),
    ("Jun 1, 2025, 10:15:22 AM IST", datetime(2025, 6, 1, 10, 15, 22)),  # ambiguous: naive
    ("Prompted hi", None)])
def test_takeout_times(text, when):
    got = takeout_time(text)
    assert got == when and (got is None or (got.tzinfo is None) == (when.tzinfo is None))


def test_the_golden_page_is_one_complete_session_oldest_first():
    source = decode(PAGE.read_bytes(), "Gemini Apps/MyActivity.html")
    assert registry.detect(source.text[:65536], source.name, threshold=0.5).grammar == "gemini-activity-html"
    g = registry.get("gemini-activity-html")
    (s,) = g.parse(source, Settings())
    assert [(t.speaker, t.kind) for t in s.turns] == [
        ("User", "message"), ("Gemini", "message"), ("System", "action"), ("User", "message"), ("Gemini", "message"),
        ("System", "action")]
    assert s.turns[4].content == ("Here are the notes in three bullets:\nBudget approved & signed\n"
                                  "Launch moved to July\nTwo hires")
    assert s.turns[3].extra == {"subtitles": ["Attached 1 file."]}
    assert s.turns[0].time.utcoffset() == timezone(timedelta(hours=2)).utcoffset(None)
    assert s.warnings == ["time zone abbreviations not read (IST): those times are naive, the configured source "
                          "zone applies"]
    assert g.count_turns(s.raw) == 6 and Accountant.of(source).account(s, True).clean


def test_a_prompt_over_several_lines_and_a_response_right_after_the_time():
    page = _cell("Prompted first line<br>second line<br>Jun 1, 2025, 10:15:22 AM UTC<p>Answer</p>")
    (s,) = registry.get("gemini-activity-html").parse(decode(page.encode(), "MyActivity.html"), Settings())
    assert [(t.speaker, t.content) for t in s.turns] == [("User", "first line\nsecond line"), ("Gemini", "Answer")]


def test_the_product_writes_a_complete_document():
    got = process_bytes(PAGE.read_bytes(), "MyActivity.html", RunContext.from_settings(Settings()))
    (doc,) = [orjson.loads(s.encoded) for s in got.sessions]
    assert doc["artifacts"]["ByggLogg"]["grammar"]["id"] == "gemini-activity-html"
    assert doc["artifacts"]["Chatthistorik"].get("coverage") != "partial"
