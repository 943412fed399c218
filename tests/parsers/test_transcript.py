"""Plain-text transcripts: notices, preambles, what detection claims and what it leaves to others."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.records import SourceText
from parsers import registry
from tests.helpers import columns_of, read_one
from validators.accounting import LineIndex, account

G = registry.get("transcript")


def _parse(text, name="chat.txt"):
    return read_one(G, SourceText(text, name, "0" * 64, len(text), "utf-8"))


def test_a_timestamped_line_without_a_name_is_a_notice_of_its_own():
    text = ("[2025-01-02 10:00:00] Ann: hi\n[2025-01-02 10:00:05] Bob joined the call\n"
            "[2025-01-02 10:00:09] Bob: hello\n")
    (s,) = _parse(text)
    assert [(t.speaker, t.kind, t.content) for t in s.turns] == [
        ("Ann", "message", "hi"), ("System", "notice", "Bob joined the call"), ("Bob", "message", "hello")]
    assert s.turns[1].time_raw == "2025-01-02 10:00:05"
    assert G.count_turns(s.raw) == 3 and G.detect(text, "chat.txt") == 1.0


def test_a_pasted_log_line_in_another_timestamp_shape_stays_in_its_turn():
    text = "[10:00] Ann: the log says\n2025-01-02 10:00:01 ERROR disk full\n[10:01] Bob: ok\n"
    (s,) = _parse(text)
    assert [t.content for t in s.turns] == ["the log says\n2025-01-02 10:00:01 ERROR disk full", "ok"]
    assert G.count_turns(s.raw) == 2 and G.detect(text, "chat.txt") == 1.0


def test_the_text_before_the_first_turn_is_a_declared_preamble():
    text = "Interview with the night shift\n\nUser: what broke?\nAssistant: the pager.\n"
    (s,) = _parse(text)
    (region,) = s.regions
    assert (region.kind, region.lines, region.content) == ("preamble", (1, 2), "Interview with the night shift")
    assert account(s, LineIndex(text)).clean
    assert G.detect(text, "x.txt") == pytest.approx(2 / 3)


@pytest.mark.parametrize("text", [
    # WhatsApp iOS-style headers with dates this grammar cannot read, and their notices
    "[2016/08/06 13:23] Messages to this group are now secured with end-to-end encryption.\n"
    "[2016/08/06 13:23] Ann created group \"Hiking\"\n[2016/08/06 13:24] Ann: Saturday at 8?\n"
    "[2016/08/06 13:25] Bob: Works for me.\nBut I'll be late.\n",
    "[06/08/2016, 13:24:10] Ann: Saturday at 8?\n[06/08/2016, 13:25:01] Bob: Works for me.\n",
    # IRC and JSON Lines are not transcripts
    "[12:00] <ann> hi: there\n[12:01] <bob> hello\n",
    '{"session_id": "a", "role": "user", "content": "x"}\n{"session_id": "a", "role": "user", "content": "y"}\n',
])
def test_platform_lines_are_not_claimed(text):
    assert G.detect(text, "chat.txt") == 0.0


def test_markdown_role_headings_are_left_to_the_markdown_grammar():
    text = "## User\nToday: reviews.\nToday: more reviews.\n\n## Assistant\nNoted.\n"
    assert G.detect(text, "x.md") < registry.get("markdown").detect(text, "x.md")


def test_text_copied_from_the_chatgpt_page():
    text = "You said:\nWhat is a monad?\nChatGPT said:\nA monoid in the category of endofunctors.\nNote: joking.\n"
    (s,) = _parse(text)
    assert [(t.speaker, t.role, t.content) for t in s.turns] == [
        ("You", "user", "What is a monad?"),
        ("ChatGPT", "assistant", "A monoid in the category of endofunctors.\nNote: joking.")]
    assert G.count_turns(s.raw) == 2 and G.detect(text, "chat.txt") == 1.0


EXPORT_HEADERS = [
    "ChatArchiver export v2\nParticipants: User, Assistant\n\nUser: hi\nAssistant: hello\nUser: bye\n",
    "Title: Trip plans\nDate: 2024-12-05\nModel: gpt-4o\nExported: 2024-12-06\n\nUser: hi\nAssistant: hello\n",
    "With: Ann, Bob\n\nAnn: hi\nBob: hello\nAnn: and?\nBob: bye\n",
]


@pytest.mark.parametrize("text", EXPORT_HEADERS)
def test_export_headers_above_the_conversation_are_preamble_on_every_route(text):
    (s,) = _parse(text)
    speakers = [t.speaker for t in s.turns]
    assert not {"Participants", "Title", "Date", "Model", "Exported", "With"} & set(speakers)
    assert G.count_turns(s.raw) == len(s.turns)
    assert account(s, LineIndex(text)).clean
    assert s.regions[0].reason == "an exporter's Key: value header lines above the conversation"
    (c,) = columns_of(G, SourceText(text, "chat.txt", "0" * 64, len(text), "utf-8"))
    assert c.frame["speaker"].to_list() == speakers


def test_export_title_and_model_are_read():
    (s,) = _parse(EXPORT_HEADERS[1])
    assert s.title == "Trip plans"
    assert s.turns[1].model is not None and s.turns[1].model.name == "gpt-4o"


def test_a_model_speaker_of_a_gemini_chat_stays_a_speaker():
    (s,) = _parse("Model: Hello, how can I help?\nUser: hi\nModel: hello again\n")
    assert [t.speaker for t in s.turns] == ["Model", "User", "Model"]


_SCANNED = st.lists(st.sampled_from([
    "User: hi", "Assistant: yo", "Title: T", "Participants: Ann, Bob", "With: Ann and Bob", "Ann: hi", "Bob: yo",
    "Model: m", "[10:00] Date: x", "Notes: a, b", "", "text", "Session: two", "SESSION_ID: x", "conversation id: y",
    "ſession: long s", "SESS\u0130ON: dotted", "```", "  # Session: z",
]), max_size=10).map("\n".join)


@settings(max_examples=200, deadline=None)
@given(_SCANNED)
def test_the_scans_skipped_where_no_such_line_can_be_change_nothing(text):
    """The pre-checks that spare a text the Session-line and export-header scans only skip scans that
    would find nothing: with both forced to scan, every segment is the same."""
    from parsers import sessions
    from parsers.grammars import transcript

    fast = transcript.sessions_of(text, "chat.txt")
    may_name, may_export = sessions._may_name_sessions, transcript._may_export
    try:
        sessions._may_name_sessions, transcript._may_export = (lambda text: True), (lambda lines: True)
        assert transcript.sessions_of(text, "chat.txt") == fast
    finally:
        sessions._may_name_sessions, transcript._may_export = may_name, may_export
