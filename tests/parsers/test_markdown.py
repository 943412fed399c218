"""Markdown transcripts: the session's own role vocabulary, exporter furniture, accounting, detection."""

from __future__ import annotations

import io

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from flows.core.ranges import Blocks, decoded, raw_blocks, turn_chunks
from models.records import SourceText
from parsers import registry
from parsers.columns import LineTable, turns_of
from tests.helpers import read_one, session_snapshot
from validators.accounting import LineIndex, account

G = registry.get("markdown")


def _parse(text, name="chat.md"):
    sessions = read_one(G, SourceText(text, name, "0" * 64, len(text), "utf-8"))
    for s in sessions:
        assert account(s, LineIndex(text)).clean
        assert G.count_turns(s.raw) == len(s.turns)
    return sessions


def _turns(text):
    (s,) = _parse(text)
    return [(t.speaker, t.content) for t in s.turns]


def test_headings_of_another_level_or_not_a_role_stay_in_the_answer():
    text = ("## 👤 User\nHow?\n\n## 🤖 Assistant\nLike this.\n\n## Summary\nDone.\n\n### User\nquoted\n\n"
            "## 👤 User\nThanks\n")
    assert _turns(text) == [("User", "How?"), ("Assistant", "Like this.\n\n## Summary\nDone.\n\n### User\nquoted"),
                            ("User", "Thanks")]


def test_bold_labels_and_said_suffixes_and_inline_labels():
    text = ("**You said:**\nhi\n\n**ChatGPT said:**\nME: a line\nYOU: another\n**Step 1:** not a turn\n\n"
            "**You:** inline text\n")
    assert _turns(text) == [("You", "hi"), ("ChatGPT", "ME: a line\nYOU: another\n**Step 1:** not a turn"),
                            ("You", "inline text")]


def test_headings_and_bold_labels_in_one_file_are_both_turn_styles():
    text = "## User\na\n\n## Assistant\nb\n\n**User:** c\n**Assistant:** d\n"
    assert [c for _, c in _turns(text)] == ["a", "b", "c", "d"]


def test_a_single_bold_metadata_label_is_not_a_turn():
    text = "# Chat\n**Model:** gpt-4o\n**Date:** 2025-01-01\n\n## User\nhi\n\n## Assistant\nhello\n"
    (s,) = _parse(text)
    assert [t.speaker for t in s.turns] == ["User", "Assistant"]
    assert s.turns[1].model.name == "gpt-4o" and s.title == "Chat"
    assert [r.kind for r in s.regions] == ["preamble"]


def test_fenced_code_never_starts_a_turn():
    text = "#### User:\n```md\n#### Assistant:\n**User:** x\n```\n#### Assistant:\nok\n"
    assert _turns(text) == [("User", "```md\n#### Assistant:\n**User:** x\n```"), ("Assistant", "ok")]


def test_rules_between_turns_and_exporter_banners_are_boilerplate():
    text = ("> Exported with AI Exporter on 2025-01-01\n\n---\n\n### 🤖 Assistant\nFirst --- inline\n\n---\n\n"
            "middle paragraph\n\n---\n\n### 👤 User\nq\n\n---\n*Powered by AI Exporter*\n")
    (s,) = _parse(text)
    assert [t.content for t in s.turns] == ["First --- inline\n\n---\n\nmiddle paragraph", "q"]
    assert [(r.kind, r.lines) for r in s.regions] == [
        ("boilerplate", (1, 3)), ("boilerplate", (12, 12)), ("boilerplate", (17, 18))]


def test_names_with_times_when_the_file_has_no_role_words():
    text = "## Alice — 2025-08-24 10:00\nhi\n\n## Bob (2025-08-24 10:01:30)\nhey\n\n## Notes — 2025\nstays\n"
    (s,) = _parse(text)
    assert [(t.speaker, t.time_raw) for t in s.turns] == [("Alice", "2025-08-24 10:00"), ("Bob", "2025-08-24 10:01:30")]
    assert s.turns[1].content == "hey\n\n## Notes — 2025\nstays"


def test_an_unreadable_heading_time_is_kept_raw():
    (s,) = _parse("## User — Feb 12, 2026, 6:38 PM\nhi\n")
    assert (s.turns[0].speaker, s.turns[0].time, s.turns[0].time_raw) == ("User", None, "Feb 12, 2026, 6:38 PM")
    assert s.warnings == ["1 turn times could not be read: time left empty, raw text kept"]


@pytest.mark.parametrize("text", [
    "# Changelog\n\n## [1.2.0] - 2024-01-01\n- fixes\n\n## [1.1.0] - 2023-12-01\n- more\n",
    "# Project\n\n## Installation\npip install x\n\n## Usage\nrun it\n",
    "# aider chat started at 2024-05-01 10:00:00\n\n#### fix the failing test\n\nDone.\n",
])
def test_documents_that_are_not_chats_are_not_claimed(text):
    assert G.detect(text, "README.md") == 0.0


def test_detection_share_leaves_out_loose_prose_before_the_first_turn():
    text = "Some notes I wrote.\nMore notes.\n\n## User\nhi\n## Assistant\nhello\n"
    assert G.detect(text, "x.md") == pytest.approx(4 / 6)


def test_numbered_exchanges_with_quoted_prompts():
    text = ("# T\n\n- [1: a](#chat-1)\n\n### chat-1\n\n> first\n> question\n\n###### ChatGPT said:\n\nanswer one\n\n"
            "---\n\n###### [top](#table-of-contents)\n\n### chat-2\n\n> second\n\nanswer two\n")
    (s,) = _parse(text)
    assert [(t.speaker, t.role, t.content) for t in s.turns] == [
        ("User", "user", "first\nquestion"), ("ChatGPT", "assistant", "answer one"),
        ("User", "user", "second"), ("Assistant", "assistant", "answer two")]
    assert G.detect(text, "x.md") == 1.0


def test_a_numbered_heading_inside_an_answer_of_a_role_headed_file_is_text():
    text = "## User\nquiz me\n\n## Assistant\n### Question 1\n> What is 2+2?\n\n### Question 2\n> And 3+3?\n"
    assert [s for s, _ in _turns(text)] == ["User", "Assistant"]


def test_prompt_and_response_headings_and_time_tags():
    text = ('## Prompt:\n<time datetime="2025-01-01T10:00:00.000Z" title="x">10:00</time>\n\nhi\n\n'
            "## Response:\nhello\n")
    (s,) = _parse(text)
    assert [(t.speaker, t.role, t.content, t.time_raw) for t in s.turns] == [
        ("Prompt", "user", "hi", "2025-01-01T10:00:00.000Z"), ("Response", "assistant", "hello", None)]


def test_a_session_line_inside_fenced_code_does_not_split_the_session():
    text = "Session: s-1\n## User\nmy config:\n```yaml\nsession: main\n```\n## Assistant\nok\n"
    (s,) = _parse(text)
    assert s.session_id == "s-1" and [t.speaker for t in s.turns] == ["User", "Assistant"]


CITED_EXPORT = (
    "# Chat\n\n"
    "## User (`aa11`) - 2024-12-05T18:06:29+00:00\n\nHow do I set it up?\n\n---\n\n"
    "## Assistant (`bb22`) - 2024-12-05T18:06:40+00:00\n\n"
    "\ue203To enhance the setup\ue204\ue200cite\ue202turn0search1\ue201 you can:\n\n"
    "- Add the block:\n  \ue203```xml\n  <a/>\n  ```\ue204\n- Restart.\n\n---\n\n"
    "## User (`cc33`) - 2024-12-05T18:07:29+00:00\n\nThanks\n\n---\n\n"
    "## Assistant (`dd44`) - 2024-12-05T18:07:40+00:00\n\nAlso:\n\n1. Edit:\n    ```\n    ## User\n    ```\n\n---\n\n"
    "## User (`ee55`) - 2024-12-05T18:08:00+00:00\n\nBye\n"
)


def test_message_id_sections_with_citation_marks_and_list_item_fences_keep_every_turn():
    (s,) = _parse(CITED_EXPORT)
    assert [(t.speaker, t.role, t.time_raw) for t in s.turns] == [
        ("User", "user", "2024-12-05T18:06:29+00:00"), ("Assistant", "assistant", "2024-12-05T18:06:40+00:00"),
        ("User", "user", "2024-12-05T18:07:29+00:00"), ("Assistant", "assistant", "2024-12-05T18:07:40+00:00"),
        ("User", "user", "2024-12-05T18:08:00+00:00")]
    assert all(t.time is not None for t in s.turns)
    assert "\ue203To enhance" in s.turns[1].content  # the marks stay in the text


def test_a_fence_that_never_closes_hides_no_later_turn():
    text = "## User\nShow me\n\n## Assistant\n```python\nprint(1)\n\n## User\nAnd?\n\n## Assistant\nDone.\n"
    (s,) = _parse(text)
    assert [t.speaker for t in s.turns] == ["User", "Assistant", "User", "Assistant"]


def test_a_fence_line_with_an_info_string_does_not_close_a_block():
    text = "## User\nq\n\n## Assistant\n````md\n```python\n## User\n```\n````\nok\n\n## User\nnext\n"
    (s,) = _parse(text)
    assert [t.speaker for t in s.turns] == ["User", "Assistant", "User"]
    assert [(x.line, x.reason) for x in s.shaped] == [(7, "inside a fenced code block opened at line 5")]


_MD_TEXT = ["## User", "## Assistant", "**User:** hi", "## Summary", "```", "````", "text", "", "---"]
_MD_LINES = st.one_of(st.sampled_from(_MD_TEXT), st.sampled_from([
    *_MD_TEXT, "### User", "### Assistant", "**Assistant:**", "```py", "~~~", "```a`b", "> quoted", "### chat-1",
    "## Alice — 2025-01-01 10:00", "## User — 2025-01-01 10:00", '<time datetime="2025-01-01T10:00:00Z">x</time>',
    "*Exported with X*", "[top](#a)", "Model: gpt-4o", "# Title", "---\ntitle: T\n---", "Session: s2",
    "## Assistant said:"]))
"""Lines of Markdown transcripts, the usual ones (which stream) twice as often as the others."""


def streamed(text: str, size: int, grammar=G, name: str = "chat.md"):
    """The session a streamed read of ``grammar`` makes of ``text`` in blocks of ``size`` bytes
    (flows/core/spool.py's steps), or why it reads it whole."""
    data = text.encode()
    source = SourceText("", name, "0" * 64, len(data), "utf-8")
    total = None
    for found in Blocks().scans(io.BytesIO(data), size, lambda t, n: grammar.survey(
            [source], LineTable.of([t]), [n])[0].census(), 1):
        total = found if total is None else total.then(found)
    if total.whole_only is not None:
        return total.whole_only
    (session,) = grammar.sessions(source, total)
    frames = [grammar.frames([source], LineTable.of_lines(lines), [total], [[session]], [first])[0][0].frame
              for lines, first in turn_chunks(decoded(raw_blocks(io.BytesIO(data), size), 1), grammar.starts)]
    grammar.conclude([session], source, total, [])
    session.turns, session.frame = turns_of(pl.concat(frames)), None
    return session_snapshot(session, total.counted)


@settings(max_examples=300, deadline=None)
@example(["## User", "q", "## Assistant", "````", "x", "```", "## User", "```", "## Assistant", "y"], 3)
@example(["---", "```", "---", "## User", "```"], 12)  # a fence-like line in the front matter, which holds no turn
@example(["## User", "q", "```", "## Summary", "a", "b", "```", "## Assistant", "y", "*Exported with X*"], 5)
@example(["---\ntitle: T\n---", "# Title", "Model: gpt-4o", "", "**User:** hi", "**Assistant:**",
          '<time datetime="2025-01-01T10:00:00Z">x</time>', "ok", "---", "[top](#a)"], 40)
@given(st.lists(_MD_LINES, min_size=1, max_size=30), st.integers(1, 48))
def test_a_stream_reads_what_the_whole_read_reads_or_says_why_not(lines, size):
    """Any mix of role labels, fences (closed, never closed, not openers), exchanges and furniture, cut into
    blocks of any size: the streamed read gives the whole read's session, or says why it reads it whole."""
    text = "\n".join(lines) + "\n"
    got = streamed(text, size)
    if isinstance(got, str):
        assert got.endswith(": the Markdown transcript is read whole")
        return
    (whole,) = read_one(G, SourceText(text, "chat.md", "0" * 64, len(text), "utf-8"))
    counted, whole.raw = G.count_turns(whole.raw), ""  # the session's own text, as the pipeline counts it
    assert got == session_snapshot(whole, counted)
