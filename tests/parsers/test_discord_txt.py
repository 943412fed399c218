"""DiscordChatExporter's plain-text export: preamble, message blocks, sections, postamble count."""

from datetime import datetime

from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.records import SourceText
from models.settings import Settings
from parsers import registry
from parsers.columns import turns_of
from parsers.grammars.discord_txt import SECTIONS, DiscordTxt
from parsers.text import decode
from tests.helpers import read_one
from tests.oracle import discord_txt
from validators.accounting import LineIndex, account

GRAMMAR = DiscordTxt()
RULE = "=" * 62


def _parse(lines, name="Guild - chan [123456789012345678].txt"):
    source = decode(("\n".join(lines) + "\n").encode(), name)
    (session,) = read_one(GRAMMAR, source, Settings())
    return source, session


def _export(*messages, count=None):
    body = [RULE, "Guild: G", "Channel: C / chan", RULE, ""]
    for m in messages:
        body += [*m, "", ""]
    return [*body, RULE, f"Exported {count if count is not None else len(messages)} message(s)", RULE]


def test_day_first_dates_are_decided_from_the_whole_file_and_recorded():
    source, s = _parse(_export(["[05/03/2024 21:12] ann", "a"], ["[14/03/2024 07:30] bo", "b"]))
    assert [t.time for t in s.turns] == [datetime(2024, 3, 5, 21, 12), datetime(2024, 3, 14, 7, 30)]
    assert any("dmy" in a for a in s.assumptions)
    assert s.session_id == "123456789012345678" and s.title == "G / C / chan"
    assert account(s, LineIndex(source.text)).clean


def test_the_exporters_own_count_finds_a_message_the_parse_lost():
    _, s = _parse(_export(["[2024-03-05 21:12:00] ann", "a"], count=2))
    assert GRAMMAR.count_turns(s.raw) == 2 and len(s.turns) == 1  # the gate makes such a session partial


def test_sections_after_a_blank_line_are_not_content_but_a_section_word_in_text_is():
    _, s = _parse(_export(["[2024-03-05 21:12:00] ann", "see {Attachments} below", "", "{Attachments}", "https://x/a.png",
                           "", "{Reactions}", "👍 (2)"]))
    (t,) = s.turns
    assert t.content == "see {Attachments} below\n[attachment: https://x/a.png]"
    assert t.extra == {"reactions": "👍 (2)"}


def test_a_system_notification_is_a_system_turn_with_its_actor():
    _, s = _parse(_export(["[2024-03-05 21:12:00] ann", "Pinned a message."]))
    assert (s.turns[0].role, s.turns[0].speaker, s.turns[0].extra) == ("system", "System", {"actor": "ann"})


def test_only_the_exporters_preamble_is_claimed():
    plain = "[2024-03-05 21:12:00] ann\nhello\n"
    assert GRAMMAR.detect(plain, "x.txt") == 0.0
    text = "\n".join(_export(["[2024-03-05 21:12:00] ann", "hello"]))
    assert registry.detect(text, "x.txt", threshold=0.5).grammar == "discord-txt"


_STAMPS = ["01-Jan-20 01:33 AM", "3/5/2024 9:12 AM", "14/03/2024 07:30", "5/3/2024 9:13 PM",
           "2024-03-05T21:12:00+01:00", "2024-03-05 21:12:00", "Tuesday 10:00", "05.03.2024 21:12",
           "13/13/2024 9:99 PM", "3/4/24, 10:00 PM"]
_LINES = st.one_of(
    st.builds(lambda stamp, who, pin: f"[{stamp}] {who}{' (pinned)' if pin else ''}", st.sampled_from(_STAMPS),
              st.sampled_from(["Tyrrrz#5447", "ann.lee", "bo", "ReleaseBot#0042", "a (pinned) b"]), st.booleans()),
    st.sampled_from([*SECTIONS, "https://cdn.discordapp.com/attachments/1/2/x.png", "👍 (2) 🎉", "Pinned a message.",
                     "Started a thread. Plans", "Joined the server.", "Added ann to the group.", "hello", "", "  ",
                     "see {Attachments} below", "Guild: X", "Topic: t", RULE, "Exported 3 message(s)", "\u00a0"]))
"""Lines of DiscordChatExporter text exports: message headers (every date shape, pinned or not), section blocks,
notices, text, preamble-like and closing-like lines."""
_EXPORTS = st.builds(
    lambda head, lines, tail: "\n".join([*head, *lines, *tail]) + "\n",
    st.sampled_from([[], [RULE, "Guild: G", "Channel: C / chan", RULE, ""],
                     [RULE, "Guild: G", "Channel: C / chan", "Topic: t", "After: 3/1/2024 12:00 AM", RULE, "", ""]]),
    st.lists(_LINES, max_size=30),
    st.sampled_from([[], ["", RULE, "Exported 3 message(s)", RULE], [RULE, "Exported 1,234 message(s)", RULE],
                     [RULE, "Exported , message(s)", RULE], [RULE, "Exported 2 message(s)", RULE, ""]]))


def _snapshot(session, counted):
    from tests.helpers import session_snapshot

    return session_snapshot(session, counted)


@settings(max_examples=300, deadline=None)
@given(_EXPORTS)
def test_the_table_read_gives_the_oracles_session(text):
    """Any mix of headers, sections, notices, text, preambles and closing lines: the product's table read gives
    the session of the turn-by-turn parse (tests/oracle)."""
    source = SourceText(text, "G - c [123456789012345678].txt", "0" * 64, len(text), "utf-8")
    (whole,) = read_one(GRAMMAR, source)
    (expected,) = discord_txt.parse(GRAMMAR, source, Settings())
    assert _snapshot(whole, GRAMMAR.count_turns(whole.raw)) == _snapshot(expected, GRAMMAR.count_turns(expected.raw))


@settings(max_examples=100, deadline=None)
@given(st.lists(_EXPORTS, min_size=1, max_size=3), st.booleans())
def test_a_partitioned_export_gives_the_oracles_session(texts, unreadable):
    """A partitioned export's parts (one of them unreadable, empty, or not) read in one batch beside a single file:
    the grouped source gets the turn-by-turn parse's session, its turns and regions naming their parts."""
    names = [f"G - c [123456789012345678]{f' [part {i + 1}]' if i else ''}.txt" for i in range(len(texts))]
    parts = tuple(SourceText("" if unreadable and i == len(texts) - 1 else t, f"in/{n}", "0" * 64, len(t), "utf-8")
                  for i, (t, n) in enumerate(zip(texts, names, strict=True)))
    group = SourceText("", "in/G - c [123456789012345678].txt", "0" * 64, 1, "utf-8", parts=parts)
    alone = SourceText(texts[0], "G - d [223456789012345678].txt", "0" * 64, len(texts[0]), "utf-8")
    read = GRAMMAR.read([alone, group], Settings())
    for source, sessions in zip((alone, group), read, strict=True):
        (got,) = sessions
        if got.frame is not None:
            got.turns, got.frame = turns_of(got.frame), None
        (expected,) = discord_txt.parse(GRAMMAR, source, Settings())
        assert _snapshot(got, GRAMMAR.count_turns(got.raw)) == _snapshot(expected, GRAMMAR.count_turns(expected.raw))


@settings(max_examples=300, deadline=None)
@example(f"{RULE}\nGuild: G\n{RULE}\n\n[3/5/2024 9:12 AM] a\nx\n\n{RULE}\nExported 1 message(s)\n{RULE}\n", 7)
@given(_EXPORTS, st.integers(1, 48))
def test_a_stream_reads_what_the_whole_read_reads(text, size):
    """The same exports cut into blocks of any size (flows/core/spool.py's steps): the streamed session is the
    whole read's, its independent count the whole text's."""
    got = _streamed(text, size)
    (whole,) = read_one(GRAMMAR, SourceText(text, "chat.txt", "0" * 64, len(text), "utf-8"))
    whole.raw = ""
    assert got == _snapshot(whole, GRAMMAR.count_turns(text))


def _streamed(text: str, size: int):
    """The session a streamed read makes of ``text`` in blocks of ``size`` bytes, each chunk's unread times added
    up for ``conclude`` as the ranges' merge does."""
    import io

    import polars as pl

    from flows.core.ranges import Blocks, decoded, raw_blocks, turn_chunks
    from parsers.columns import LineTable, turns_of
    from parsers.grammars._discord_columns import Chunk

    data = text.encode()
    source = SourceText("", "chat.txt", "0" * 64, len(data), "utf-8")
    total = None
    for found in Blocks().scans(io.BytesIO(data), size, lambda t, n: GRAMMAR.survey(
            [source], LineTable.of([t]), [n])[0].census(), 1):
        total = found if total is None else total.then(found)
    assert total.whole_only is None and total.apart
    (session,) = GRAMMAR.sessions(source, total)
    chunks = [GRAMMAR.frames([source], LineTable.of_lines(lines), [total], [[session]], [first])[0][0]
              for lines, first in turn_chunks(decoded(raw_blocks(io.BytesIO(data), size), 1), GRAMMAR.starts)]
    GRAMMAR.conclude([session], source, total, [Chunk(None, bad=sum(c.bad for c in chunks))])
    session.turns, session.frame = turns_of(pl.concat([c.frame for c in chunks])), None
    return _snapshot(session, total.counted)


@settings(max_examples=60, deadline=None)
@given(st.lists(_LINES, max_size=30), st.sampled_from([Settings(), Settings(source_tz="Europe/Stockholm")]))
def test_the_products_documents_are_the_oracles(lines, config):
    """Generated exports (with the preamble detection needs) through the product: the oracle's document bytes."""
    from flows.core.process import process_bytes
    from normalizers.assemble import RunContext
    from tests import oracle

    text = "\n".join([RULE, "Guild: G", "Channel: C / chan", RULE, "", *lines, RULE, "Exported 3 message(s)", RULE])
    name = "G - c [123456789012345678].txt"
    got = process_bytes(text.encode(), name, RunContext.from_settings(config))
    expected = oracle.documents(decode(text.encode(), name), config)  # None: not detected (no header)
    assert [s.encoded for s in got.sessions] == (expected or [])
