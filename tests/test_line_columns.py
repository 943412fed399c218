"""The generic columnar line engine: header patterns in Rust's syntax, fences, ISO stamps, IRC as columns."""

from __future__ import annotations

import re

import polars as pl
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from flows.core.process import process_bytes
from models.errors import Reason
from models.records import SourceText
from models.settings import Settings
from models.status import FileStatus
from normalizers.assemble import RunContext
from parsers.columns import (
    LineTable,
    Untranslatable,
    group_turns,
    inside_fences,
    iso_times,
    line_headers,
    rust_pattern,
    split_lines,
    turns_of,
)
from parsers.engine import fenced_regions
from parsers.grammars import _irc_columns, inferred, irc
from parsers.timeparse import parse_iso
from tests import oracle
from tests.helpers import columns_of, session_snapshot


def _reads_the_same(grammar, text: str, name: str) -> None:
    """``grammar``'s columnar parse of ``text`` gives its line-engine parse's sessions, turn for turn."""
    source = SourceText(text, name, "0" * 64, len(text), "utf-8")
    lined = [session_snapshot(s, 0) for s in oracle.parse(grammar, source, Settings())]
    columnar = columns_of(grammar, source)
    for s in columnar:
        s.turns = turns_of(s.frame)
    assert [session_snapshot(s, 0) for s in columnar] == lined


@pytest.mark.parametrize(("pattern", "why"), [
    (r"^(?=a)a", "lookahead"), (r"^(?!a)b", "negative lookahead"), (r"^(?<=a)b", "lookbehind"),
    (r"^(?<!a)b", "negative lookbehind"), (r"^(a)\1", "backreference"), (r"^(?P<x>a)(?P=x)", "backreference"),
    (r"^(a)?(?(1)b|c)", "conditional"), (r"^(?>a+)b", "atomic"), (r"^a++", "possessive"),
    (r"^a{2}+", "possessive"), (r"^a\nb", r"\\n"), (r"^a\sb", r"\\s"), (r"^[^a]+", "negated class"),
    (r"^[\s]", "line end"), (r"^a\Z", "text's ends"), (r"a", "anchored"), (r"^\W", "line end"),
])
def test_constructs_without_a_rust_equivalent_are_refused(pattern, why):
    with pytest.raises(Untranslatable, match=why):
        rust_pattern(regex.compile(pattern, regex.MULTILINE))


def test_flags_and_escapes_are_translated():
    assert rust_pattern(re.compile(r"^a\ b\-c{,2}x{y", re.M | re.I)) == r"(?i)^a b\-c{0,2}x\{y"
    assert rust_pattern(regex.compile(r"^[\p{L}~&[]\u00a0", regex.M)) == r"^[\p{L}\~\&\[]\x{00a0}"
    with pytest.raises(Untranslatable, match="DOTALL"):
        rust_pattern(re.compile(r"^a.", re.S))


def _agree(pattern, lines: list[str]) -> None:
    """The Rust pattern flags the lines the Python one matches, with the same groups and rest."""
    heads = line_headers(pl.Series(lines, dtype=pl.Utf8), rust_pattern(pattern))
    for i, line in enumerate(lines):
        m = pattern.match(line)
        assert heads.ok[i] == (m is not None), line
        if m is not None:
            assert heads.rest[i] == line[m.end():]
            assert {k: heads.groups[k][i] for k in heads.groups.columns} == m.groupdict()


_IRC_LINE = st.one_of(
    st.sampled_from(["2012-10-18T09:30:30+0000  <ann> hi", "2012-10-18 09:30:30\tann\thi", "10:00 <@ann> hi",
                     "10:01:02\t-!- x", "--- Day changed Thu Oct 18 2012", "--- Log opened", "99:99 x"]),
    st.text(alphabet="0129:-T+ \t<>-!Dayopenchg", max_size=30),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_IRC_LINE, max_size=12))
def test_irc_headers_agree_line_by_line(lines):
    for pattern in irc.DIALECTS.values():
        _agree(pattern, [ln for ln in lines if "\n" not in ln])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="<>|#[]12:/ \tab.-'", max_size=25), max_size=10))
def test_inferred_headers_agree_line_by_line(lines):
    pattern = regex.compile(inferred.shape("<<2024/03/01 10:00>> alice | text"), regex.MULTILINE)
    _agree(pattern, lines)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["```", "~~~", "   ```py", "    ```", "x", "", "a```"]), max_size=14))
def test_fences_are_the_line_engines(lines):
    text = "\n".join(lines)
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    regions = fenced_regions(text)
    expected = [any(a < s < b for a, b in regions) for s in starts]
    got = inside_fences(pl.Series(lines, dtype=pl.Utf8)).to_list()
    if lines and lines[-1] == "":  # an empty last line starts at the text's end: no header can start there
        got, expected = got[:-1], expected[:-1]
    assert got == expected


_STAMP = st.one_of(
    st.builds(lambda y, mo, d, h, mi, s, z, t: f"{y:04d}-{mo:02d}-{d:02d}{t}{h:02d}:{mi:02d}:{s:02d}{z}",
              st.integers(1960, 2105), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25),
              st.integers(0, 61), st.integers(0, 61), st.sampled_from(["", "Z", "+0000", "+02:00", "-0530", "+2500"]),
              st.sampled_from(["T", " "])),
    st.sampled_from(["2020-01-01 10:00", " 2020-01-01T10:00:00Z ", "2020-01-01T10:00:00.5Z", "x"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_STAMP, max_size=8))
def test_iso_stamps_read_as_columns_as_parse_iso_reads_them(stamps):
    wall, offset = iso_times(pl.Series(stamps, dtype=pl.Utf8), parse_iso)
    for raw, w, o in zip(stamps, wall.to_list(), offset.to_list(), strict=True):
        expected = parse_iso(raw)
        assert w == (expected.replace(tzinfo=None) if expected else None), raw
        assert o == (int(expected.utcoffset().total_seconds()) if expected and expected.tzinfo else None), raw


_NICKS = st.sampled_from(["ann", "@bob", "+c\u00e9", "x_y"])
_BODY = st.one_of(
    st.builds(lambda n, t: f"<{n}> {t}", _NICKS, st.text(alphabet="ab #&(:", max_size=8)),
    st.builds(lambda n: f"* {n} waves", _NICKS), st.builds(lambda n: f"-{n}- notice", _NICKS),
    st.sampled_from(["-!- ann [~a@h] has joined #chan", "*** bob has quit", "--> c has joined #x",
                     "<-- d has left #x", "-- Mode #x [+o ann] by bob", "-!- ann is now known as bo",
                     "*** kim was kicked from #x by op (bye)", "-!- Irssi: Join to #x was synced", "plain"]),
)


def _irc_log(draw_lines, dialect: str) -> str:
    out = []
    for i, (kind, body) in enumerate(draw_lines):
        if kind == "cont" or (kind == "marker" and dialect == "irssi"):
            out.append(body)
        elif dialect == "supybot":
            out.append(f"2012-10-18T09:{i % 60:02d}:30+0{i % 3}00  {body}")
        elif dialect == "weechat":
            prefix, _, rest = body.partition(" ")
            out.append(f"2012-10-18 09:{i % 60:02d}:3{i % 10}\t{prefix.strip('<>')}\t{rest}")
        else:
            out.append(f"{i % 25:02d}:{i % 61:02d} {body}")
    return "\n".join(out) + "\n"


_IRC_ROWS = st.lists(st.one_of(
    st.tuples(st.just("turn"), _BODY),
    st.tuples(st.just("cont"), st.sampled_from(["  continued", "", "#other (chan)"])),
    st.tuples(st.just("marker"), st.sampled_from(["--- Day changed Thu Oct 18 2012", "--- Log opened Feb 30 2012",
                                                  "--- Log closed", "--- Log opened Thu Oct 18 09:00:00 2012"])),
), max_size=14)


@settings(max_examples=150, deadline=None)
@given(_IRC_ROWS, st.sampled_from(["supybot", "weechat", "irssi"]))
def test_any_irc_log_reads_the_same_as_columns(rows, dialect):
    _reads_the_same(irc.Irc(), _irc_log(rows, dialect), "x.log")


def test_an_irc_log_polars_cannot_read_is_quarantined_with_the_reason(monkeypatch):
    """No other route: a header pattern Rust's regex refuses fails the inputs read with it, each with the reason."""
    def refused(lines, rust):
        raise Untranslatable("Rust's regex refused the header pattern: test")

    monkeypatch.setattr(_irc_columns, "line_headers", refused)
    text = "2012-10-18T09:30:30+0000  <ann> hi\n"
    got = process_bytes(text.encode(), "x.log", RunContext.from_settings(Settings()))
    assert (got.status, got.reasons, got.grammar) == (FileStatus.QUARANTINED, [Reason.UNTRANSLATABLE.value], "irc")
    assert "Rust's regex refused the header pattern" in got.detail and not got.sessions


_T_HEAD = st.sampled_from(["User: ", "Assistant: ", "Assistant (openai:gpt-4o@2024-08-06): ", "Ann: ", "Bob (work): ",
                           "[2025-08-24 10:00:00] Ann: ", "2025-08-24T10:00:00Z Bob: ", "[10:00] Cy: ", "Note: ",
                           "[10:05] ", "[2025/08/06 13:23] ", "2025-08-24T10:00:00+02:00 ", "ChatGPT said: ",
                           "Tool: ", "This is far too many words to be a name: ", "[25:99] Dee: ", "Ann:",
                           "[x] \u00a0"])
_T_LINE = st.one_of(
    st.builds(lambda h, t: h + t, _T_HEAD, st.text(alphabet="ab :\t\x1c", max_size=6)),
    st.sampled_from(["", "plain text", "```", "Session: two", "  indented: x"]),
)
_FRONT = st.sampled_from(["", "---\ndate: 2025-08-24\n---\n", "---\ntitle: T\nsession_id: abc\n---\n",
                          "---\ntimezone: Europe/Stockholm\nmodel: openai:gpt-4o\n---\n"])


@settings(max_examples=200, deadline=None)
@given(_FRONT, st.lists(_T_LINE, max_size=14), st.booleans())
def test_any_transcript_reads_the_same_as_columns(front, lines, final_newline):
    from parsers.grammars.transcript import Transcript

    _reads_the_same(Transcript(), front + "\n".join(lines) + ("\n" if final_newline and lines else ""), "chat.txt")


_INF_LINE = st.one_of(
    st.builds(lambda s, n, t: f"<<{s}>> {n} | {t}", st.sampled_from(["2024/03/01 10:00", "2024/02/30 10:00",
                                                                     "2024/03/01 10:00:59", "7 10:00", "12"]),
              st.sampled_from(["alice", "Assistant", "bob smith", "x"]), st.text(alphabet="ab |:", max_size=6)),
    st.sampled_from(["", "continued", "<<not a header", "  "]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_INF_LINE, min_size=3, max_size=14))
def test_any_inferred_log_reads_the_same_as_columns(lines):
    _reads_the_same(inferred.Inferred(), "\n".join(lines) + "\n", "x.log")


def test_an_inferred_header_rust_cannot_express_fails_its_logs_alone(monkeypatch):
    """The logs of a learnt header Rust cannot express fail with the reason; a log of another header is read."""
    real = inferred.rust_pattern

    def refuse(pattern):
        if "<<" in pattern.pattern:
            raise Untranslatable("a lookahead")
        return real(pattern)

    monkeypatch.setattr(inferred, "rust_pattern", refuse)
    texts = ["<<2024/03/01 10:00>> alice | hi\n<<2024/03/01 10:01>> bob | yo\n<<2024/03/01 10:02>> alice | ok\n",
             "#41 [alice] hi\n#42 [bob] yo\n#43 [alice] ok\n"]
    sources = [SourceText(t, f"x{i}.log", "0" * 64, len(t), "utf-8") for i, t in enumerate(texts)]
    refused, read = inferred.Inferred().read(sources, Settings())
    with pytest.raises(Untranslatable, match="a lookahead"):
        list(refused)
    assert [len(s.frame) for s in read] == [3]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=3), min_size=1, max_size=3), st.sampled_from(["alice", "Bo b", "x"]))
def test_every_header_inferred_can_learn_runs_in_polars(punctuation, name):
    """Any line start ``shape`` generalises (digits, blanks, any punctuation or symbol, then a name) is a
    pattern Rust's regex runs, matching the line as Python's does: no learnt header is refused."""
    line = "1" + "".join(punctuation) + " " + name + ": text"
    pattern = inferred.shape(line)
    if pattern is None:
        return
    at = pattern.index("(?P<name>")
    python = regex.compile(f"^(?P<prefix>{pattern[1:at]}){pattern[at:]}", regex.MULTILINE)
    heads = line_headers(split_lines(line), rust_pattern(python))
    assert bool(heads.ok[0]) == (python.match(line) is not None)


_D_LINE = st.one_of(
    st.builds(lambda n, t, s: f"{n}{t} — {s}", st.sampled_from(["Maya Chen", "Bob", "### Ann", "> Cy", "Deploy"]),
              st.sampled_from(["", " BOT", " APP"]),
              st.sampled_from(["08/11/2023 1:30 PM", "13.08.2023 23:59", "Today at 5:03 AM", "Gestern um 17:03",
                               "2023-08-11 11:58 PM", "31/02/2023 10:00", "08/11/2023 25:00"])),
    st.sampled_from(["[1:31 PM]", "[12:03 AM]", "[1:32 PM]shared line", "[23:59]", "August 12, 2023",
                     "↪ @Maya Chen shipping it", "┌──@Bob: text", "plain text (edited)", "", "  (bearbeitet) ",
                     "#channel"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_D_LINE, max_size=14), st.booleans())
def test_any_discord_paste_reads_the_same_as_columns(lines, final_newline):
    from parsers.grammars.discord_text import DiscordText

    _reads_the_same(DiscordText(), "\n".join(lines) + ("\n" if final_newline and lines else ""), "paste.txt")


_TABLE_TEXT = st.lists(st.sampled_from(["H a", "b", "", "  ", "H c"]), max_size=6).map("\n".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_TABLE_TEXT, st.booleans()), min_size=1, max_size=5))
def test_a_table_of_texts_groups_each_text_as_alone(texts):
    """``LineTable``: each text's lines as ``split_lines`` gives them, and no turn runs across two texts."""
    texts = [t + ("\n" if newline else "") for t, newline in texts]
    table = LineTable.of(texts)
    together = group_turns(table.lines, table.lines.str.starts_with("H"), table=table)
    cuts = table.split(together["at"])
    for i, text in enumerate(texts):
        lines = split_lines(text)
        assert table.lines_of(i).to_list() == lines.to_list()
        alone = group_turns(lines, lines.str.starts_with("H"))
        mine = together.slice(cuts[i], cuts[i + 1] - cuts[i]).with_columns(pl.col("at") - table.bounds[i])
        assert mine.to_dicts() == alone.to_dicts()
