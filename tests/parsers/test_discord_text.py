"""Discord client copy-paste text: continuation stamps are turns, relative days get no date, and
the client's furniture (edited markers, BOT tags, replies, dividers) is read, not kept as text."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.records import SourceText
from models.settings import Settings
from parsers import registry
from parsers.grammars import _discord_columns as columns
from parsers.grammars._discord_columns import NO_REPLY
from parsers.text import decode
from tests.helpers import read_one, session_snapshot
from tests.parsers.test_markdown import streamed
from validators.accounting import LineIndex, account

DT = registry.get("discord-text")


def parse(text: str, name: str = "paste.txt"):
    source = decode(text.encode(), name)
    (session,) = read_one(DT, source, Settings())
    assert DT.count_turns(session.raw) == len(session.turns)
    assert account(session, LineIndex(source.text)).clean
    return session


def test_each_continuation_stamp_is_its_own_turn_with_the_author_line_date():
    s = parse("Ines — 11/03/2023 9:15 PM\nfirst\n[9:16 PM]\nsecond\n[9:17 PM]third on the stamp line\n")
    assert [(t.speaker, t.content, t.time_raw) for t in s.turns] == [
        ("Ines", "first", "11/03/2023 9:15 PM"), ("Ines", "second", "9:16 PM"),
        ("Ines", "third on the stamp line", "9:17 PM")]
    assert s.turns[1].time.hour == 21 and s.turns[1].time.minute == 16


def test_relative_days_keep_the_raw_stamp_and_invent_no_date():
    s = parse("Ola — Yesterday at 11:02 PM\nhi\n[11:05 PM]\nstill there?\nKim — Today at 7:30 AM\nmorning\n")
    assert all(t.time is None for t in s.turns)
    assert [t.time_raw for t in s.turns] == ["Yesterday at 11:02 PM", "11:05 PM", "Today at 7:30 AM"]
    assert s.turns[0].extra == {"relativeDay": "Yesterday"}
    assert s.warnings and "Today/Yesterday" in s.warnings[0]


def test_bot_tags_edited_markers_and_replies():
    s = parse("Sam — 2023-05-02 10:00\nthe cache is stale (edited)\n↪ @Sam the cache is stale\n"
              "Helper BOT — 2023-05-02 10:01\nCache cleared.\n")
    assert (s.turns[0].content, s.turns[0].extra) == ("the cache is stale", {"edited": True})
    assert (s.turns[1].speaker, s.turns[1].role, s.turns[1].lines) == ("Helper", "other", (3, 5))
    assert s.turns[1].extra == {"bot": "BOT", "replyTo": "Sam", "replyPreview": "the cache is stale"}


@pytest.mark.parametrize("context", ["↪ @Sam the cache is stale", "╭ @Sam the cache is stale",
                                     "┌──@Sam the cache is stale", "┌── @Sam the cache is stale"])
def test_every_reply_context_shape_belongs_to_the_next_turn(context):
    s = parse(f"Sam — 2023-05-02 10:00\nthe cache is stale\n{context}\nAnn — 2023-05-02 10:01\nfixed\n")
    assert s.turns[0].content == "the cache is stale" and s.turns[1].lines == (3, 5)
    assert s.turns[1].extra == {"replyTo": "Sam", "replyPreview": "the cache is stale"}


def test_a_transcript_with_dashes_is_not_discord_text():
    text = "User: what is an em dash — like this?\nAssistant: a long dash — used for breaks\n"
    assert DT.detect(text, "t.txt") == 0.0
    detected = registry.detect(text, "t.txt", threshold=0.5)
    assert detected.grammar != "discord-text"


STAMPS = ("Maya Chen — 08/11/2023 1:30 PM\nfirst message\n[1:31 PM]\nsecond message\n[1:32 PM]\n"
          "Rafael Souza — 08/11/2023 1:35 PM\nreply here\n\n[1:00 PM]\nlate stamp\n[1:02 PM]\n\n"
          "Ann Lee — 08/11/2023 11:50 PM\nlate night\n[12:10 AM]\nafter midnight\n")


def test_a_time_stamp_line_is_never_an_empty_turn_and_never_invents_a_date():
    from parsers import registry
    from tests.helpers import columns_of, parse_text
    g = registry.get("discord-text")
    source, (s,) = parse_text("discord-text", STAMPS, "paste.txt")
    got = [(t.speaker, t.content, t.time.strftime("%d %H:%M")) for t in s.turns]
    assert got == [("Maya Chen", "first message", "08 13:30"), ("Maya Chen", "second message", "08 13:31"),
                   ("Rafael Souza", "reply here", "08 13:35"), ("Rafael Souza", "late stamp", "08 13:00"),
                   ("Ann Lee", "late night", "08 23:50"), ("Ann Lee", "after midnight", "09 00:10")]
    assert [r.lines for r in s.regions if "no text under it" in r.reason] == [(5, 5), (11, 12)]
    assert g.count_turns(s.raw) == 6
    (c,) = columns_of(g, source)
    assert [(sp, ct, t.strftime("%d %H:%M")) for sp, ct, t in c.frame.select("speaker", "content", "time").rows()] \
        == got


_DT_LINES = st.sampled_from([
    "Ann Lee — 13/08/2023 11:50 PM", "Bob — 08/11/2023 1:30 PM", "Deploy Bot BOT — Today at 5:03 AM",
    "Ann Lee — Yesterday at 23:59", "Cy — 2023-08-12 10:00", "[12:05 AM]", "[1:31 PM]and on the stamp line",
    "[11:59 PM]", "August 12, 2023", "↪ @Ann Lee shipping it now", "┌──@Bob: a preview", "text", "more (edited)",
    "", "### Ann — 2024-01-01 10:00", "#release-planning", "> quoted"])
"""Lines of Discord pastes: author lines (dates either way round, relative days, a BOT tag, a Markdown heading
that is none), continuation stamps, dividers, reply contexts, text."""


@settings(max_examples=300, deadline=None)
@example(["Bob — 08/11/2023 11:50 PM", "a", "[12:05 AM]", "b", "↪ @Ann Lee shipping it now",
          "Ann Lee — 13/08/2023 11:50 PM", "c"], 3)
@example(["#t", "[1:31 PM]and on the stamp line", "Bob — 08/11/2023 1:30 PM", "[11:59 PM]", "", "August 12, 2023",
          "┌──@Bob: a preview", "Bob — 08/11/2023 1:30 PM", "x (edited)"], 7)
@given(st.lists(_DT_LINES, min_size=1, max_size=30), st.integers(1, 48))
def test_a_stream_reads_what_the_whole_read_reads_or_says_why_not(lines, size):
    """Any mix of author lines, continuation stamps (past midnight, with no text), dividers, reply contexts (with
    and without an author line under them) and text, cut into blocks of any size: the streamed read gives the
    whole read's session, or says why it reads it whole."""
    text = "\n".join(lines) + "\n"
    got = streamed(text, size, DT, "paste.txt")
    if isinstance(got, str):
        assert got == NO_REPLY
        return
    (whole,) = read_one(DT, SourceText(text, "paste.txt", "0" * 64, len(text), "utf-8"))
    whole.raw = ""
    assert got == session_snapshot(whole, DT.count_turns(text))


@pytest.mark.parametrize("below, turns", [("Bob — 08/11/2023 1:35 PM\nhi", 2), ("not an author line", 2),
                                          ("", 2), (None, 2)])
def test_a_stamp_with_no_text_above_a_reply_context_is_no_turn(below, turns):
    """A stamp whose message was not copied, then a reply context: the context opens the next author line's message
    (the stamp is no turn), or, with no author line right under it, it is the stamp's text (a turn). The
    independent count agrees with the parse, the whole text and its blocks of any size."""
    text = "Ann — 08/11/2023 1:30 PM\nfirst\n[1:31 PM]\n\n↪ @Ann first" + (f"\n{below}" if below is not None else "")
    s = parse(text + "\n")
    assert len(s.turns) == turns and DT.count_turns(s.raw) == turns
    assert [r.reason for r in s.regions if "no text under it" in r.reason] == \
        ([columns.EMPTY_STAMP] if below and below.startswith("Bob") else [])
    for size in (1, 5, 17, 40):
        got = streamed(text + "\n", size, DT, "paste.txt")
        assert isinstance(got, str) or got["counted_turns"] == turns
