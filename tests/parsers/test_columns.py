"""A line grammar's table of lines (``Grammar.read``) gives the sessions of its turn-by-turn parse (the oracle's,
tests/oracle), turn for turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.records import SourceText
from models.settings import Settings
from parsers import registry
from parsers.columns import nonblank, split_lines, turns_of
from parsers.grammars._whatsapp_columns import header_dates, header_lines, headers
from parsers.grammars.whatsapp import _REST
from parsers.text import decode
from tests import oracle
from tests.helpers import CONFORMANCE, GOLDEN, ROOT, columns_of, session_snapshot
from tests.test_line_columns import _INF_LINE, _T_LINE

COLUMNAR = list(oracle.LINE_PARSES)


def _inputs(grammar: str) -> list[Path]:
    found = [p for p in (GOLDEN / grammar).rglob("*") if p.is_file() and not p.name.endswith(".expected.json")]
    for folder in (ROOT / "sample_logs", CONFORMANCE / "fixtures"):
        for p in sorted(folder.rglob("*.txt")) + sorted(folder.rglob("*.log")) + sorted(folder.rglob("*.md")):
            source = decode(p.read_bytes(), p.name)
            if registry.detect(source.text[:65536], p.name, threshold=0.5).grammar == grammar:
                found.append(p)
    return sorted(found)


def _both(grammar: str, source: SourceText):
    g = registry.get(grammar)
    lined = [session_snapshot(s, g.count_turns(s.raw)) for s in oracle.parse(g, source, Settings())]
    sessions = columns_of(g, source)
    columnar = []
    for s in sessions:
        s.turns = turns_of(s.frame)
        columnar.append(session_snapshot(s, g.count_turns(s.raw)))
    return lined, columnar


CASES = [(g, p) for g in COLUMNAR for p in _inputs(g)]


def test_there_are_columnar_cases():
    assert COLUMNAR and len(CASES) > 10


@pytest.mark.parametrize(("grammar", "path"), CASES, ids=lambda v: getattr(v, "name", v))
def test_columnar_parse_equals_the_line_engine(grammar, path):
    source = decode(path.read_bytes(), path.name)
    lined, columnar = _both(grammar, source)
    assert columnar == lined


@pytest.mark.parametrize("siblings", [(), ("IMG-1.jpg", "chat.txt")])
def test_attachments_are_checked_the_same(siblings):
    text = ("12/24/19, 11:23 - Ann: IMG-1.jpg (file attached)\n12/24/19, 11:24 - Ann: IMG-2.jpg (file attached)\n"
            "caption\n12/24/19, 11:25 - Bob: <Media omitted>\n")
    source = SourceText(text, "WhatsApp Chat with Ann.txt", "0" * 64, len(text), "utf-8", siblings=siblings)
    lined, columnar = _both("whatsapp", source)
    assert columnar == lined


_LINE = st.one_of(
    st.sampled_from(["12/24/19, 11:23 - Ann: hi", "[24.12.19, 11:23:05] Bob: yo", "24/12/2019, 23:59 - Ann joined",
                     "12/13/19, 0:05 - Ann: <Media omitted>", "\u200e[1/2/20, 9:01:00 AM] G: \u200eAnn added Bob",
                     "1/2/20, 25:61 - C: bad clock", "plain text", "", "  ", "31/2/21, 10:00 - D: no such day",
                     "[1/2/20, 10:00 - odd] x", "1/2/20, 10:00] Y: mismatched"]),
    st.text(alphabet="ab :[]/-\u200e\u00a0", max_size=12),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINE, max_size=14), st.booleans())
def test_any_mix_of_lines_parses_the_same(lines, final_newline):
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    lined, columnar = _both("whatsapp", SourceText(text, "chat.txt", "0" * 64, len(text), "utf-8"))
    assert columnar == lined
    lines_ = split_lines(text)
    assert header_lines(lines_).to_list() == headers(lines_, _REST).ok.to_list()
    heads = headers(lines_, _REST)
    at, dates = header_dates(lines_)
    assert at.to_list() == heads.ok.arg_true().to_list()
    assert dates.to_list() == heads.groups["date"].filter(heads.ok).to_list()


@given(st.text(alphabet="a \t\n\x1c\u3000\u00a0", max_size=30))
def test_lines_and_blank_lines_as_python_sees_them(text):
    lines = split_lines(text)
    expected = text.split("\n")[:-1] if text.endswith("\n") else (text.split("\n") if text else [])
    assert lines.to_list() == expected
    assert nonblank(lines).to_list() == [bool(x.strip()) for x in expected]


def _snapshots(grammar, sessions) -> list:
    out = []
    for s in sessions:
        s.turns = turns_of(s.frame)
        out.append(session_snapshot(s, grammar.count_turns(s.raw)))
    return out


def _one_table_reads_like_each_alone(grammar: str, sources: list[SourceText]) -> None:
    """Every source of one table of lines gets the sessions it gets read alone (a text's lines never
    run into the next text's, and what a text decides for itself stays its own)."""
    g = registry.get(grammar)
    together = g.read(sources, Settings())
    assert len(together) == len(sources)
    for source, sessions in zip(sources, together, strict=True):
        assert _snapshots(g, sessions) == _snapshots(g, columns_of(g, source)), source.name


@pytest.mark.parametrize("grammar", COLUMNAR)
def test_every_input_of_a_grammar_in_one_table(grammar):
    paths = [p for g, p in CASES if g == grammar]
    sources = [decode(p.read_bytes(), p.name) for p in paths]
    _one_table_reads_like_each_alone(grammar, sources + sources[:1])  # the same text twice, too


_TEXT = st.lists(_LINE, max_size=8).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_TEXT, st.booleans()), min_size=1, max_size=5))
def test_any_mix_of_chats_in_one_table(chats):
    """Texts with and without headers, empty, day-first beside month-first: one table, each its own."""
    texts = [text + ("\n" if newline and text else "") for text, newline in chats]
    sources = [SourceText(t, f"WhatsApp Chat with {i}.txt", "0" * 64, len(t), "utf-8") for i, t in enumerate(texts)]
    _one_table_reads_like_each_alone("whatsapp", sources)



def _outcome(take, *args) -> list | str:
    """What ``take(*args)`` gives, or the name of the error it raised (a source's own failure)."""
    try:
        return take(*args)
    except Exception as exc:  # compared by its type: the same failure on both routes
        return type(exc).__name__


def _lined(grammar, source: SourceText) -> list:
    return [session_snapshot(s, grammar.count_turns(s.raw)) for s in oracle.parse(grammar, source, Settings())]


def _one_table_reads_like_the_line_engine(grammar: str, sources: list[SourceText]) -> None:
    """Every source of one table of lines gets the sessions, or the failure, of its line-engine parse."""
    g = registry.get(grammar)
    together = g.read(sources, Settings())
    assert len(together) == len(sources)
    for source, sessions in zip(sources, together, strict=True):
        assert _outcome(_snapshots, g, sessions) == _outcome(_lined, g, source), source.name


def _source(text: str, name: str) -> SourceText:
    return SourceText(text, name, "0" * 64, len(text.encode()), "utf-8")


# Front matter that each transcript decides for itself: no day, a day for clock times, a zone and a model,
# another zone, a zone that does not exist (that source's own failure).
_T_FRONT = st.sampled_from(["", "---\ndate: 2025-08-24\n---\n", "---\ntitle: T\nsession_id: abc\n---\n",
                            "---\ntimezone: Europe/Stockholm\nmodel: openai:gpt-4o\n---\n",
                            "---\ntimezone: Asia/Tokyo\ndate: 2025-01-02\n---\n", "---\ntimezone: Mars/Olympus\n---\n"])
_T_EXTRA = st.sampled_from(["Title: A chat", "Participants: Ann, Bob", "Session: two", "Ann: again", "Bob (work): hi",
                            "[10:00] Cy: clock", "[10:05] notice"])
_TRANSCRIPT = st.tuples(_T_FRONT, st.lists(st.one_of(_T_LINE, _T_EXTRA), max_size=10), st.booleans()).map(
    lambda t: t[0] + "\n".join(t[1]) + ("\n" if t[2] and t[1] else ""))


@settings(max_examples=150, deadline=None)
@given(st.lists(_TRANSCRIPT, min_size=1, max_size=5))
@example(["---\ntimezone: Europe/Stockholm\nmodel: openai:gpt-4o\n---\n[2025-08-24 10:00:00] User: a\nAssistant: b\n",
          "---\ntimezone: Mars/Olympus\n---\nUser: a\n", "", "---\ntimezone: Asia/Tokyo\ndate: 2025-01-02\n---\n"
          "[10:00] Cy: a\n[10:05] notice\nNote: kept\nCy: b\nSession: two\n[10:00] Cy: c\n",
          "Title: T\nParticipants: Ann, Bob\n\nAnn: hi\nBob: yo\n[10:00] Ann: clock\nAssistant: m\n"])
def test_any_mix_of_transcripts_in_one_table(texts):
    """Transcripts with and without headers, empty, with sessions, export headers, labels accepted or not,
    front matter of their own (a day, a zone, a model, a zone that fails): one table, each its own."""
    _one_table_reads_like_the_line_engine("transcript", [_source(t, f"chat-{i}.txt") for i, t in enumerate(texts)])


_HASH_LINE = st.one_of(
    st.builds(lambda n, who, t: f"#{n} [{who}] {t}", st.integers(1, 99), st.sampled_from(["maria", "it-bot", "Jon"]),
              st.text(alphabet="ab (:)", max_size=6)),
    st.sampled_from(["", "still jammed", "Exported by ChatVault"]),
)
_INFERRED = st.one_of(st.lists(_INF_LINE, max_size=10), st.lists(_HASH_LINE, max_size=10),
                      st.lists(st.one_of(_INF_LINE, _HASH_LINE), max_size=10)).map(lambda ls: "\n".join(ls) + "\n")


@settings(max_examples=150, deadline=None)
@given(st.lists(_INFERRED, min_size=1, max_size=6))
def test_any_mix_of_inferred_logs_in_one_table(texts):
    """Logs of two header shapes and of none, mixed and empty: each learns its own header, and the logs
    of one learnt header share a table."""
    _one_table_reads_like_the_line_engine("inferred", [_source(t, f"log-{i}.log") for i, t in enumerate(texts)])


_M_FRONT = st.sampled_from(["", "---\ntitle: T\nmodel: openai:gpt-4o\n---\n", "---\ntimezone: Europe/Stockholm\n---\n",
                            "---\ntimezone: Asia/Tokyo\nsession_id: s1\n---\n", "---\ntimezone: Mars/Olympus\n---\n"])
_M_LINE = st.sampled_from([
    "## User", "## Assistant", "### User", "**User:** hi", "**Assistant:**", "## Summary", "```", "````", "~~~",
    "text", "", "---", "> quoted", "### chat-1", "## Alice — 2025-01-01 10:00", "## User — 2025-01-01 10:00:00",
    '<time datetime="2025-01-01T10:00:00">x</time>', "*Exported with X*", "[top](#a)", "Model: gpt-4o", "# Title",
    "Session: s2", "## Assistant (openai:gpt-4o)", "## tool (browser)", "## User — Feb 1, 2026"])
_MARKDOWN = st.tuples(_M_FRONT, st.lists(_M_LINE, max_size=16), st.booleans()).map(
    lambda t: t[0] + "\n".join(t[1]) + ("\n" if t[2] and t[1] else ""))


@settings(max_examples=150, deadline=None)
@given(st.lists(_MARKDOWN, min_size=1, max_size=5))
@example(["---\ntimezone: Europe/Stockholm\n---\n## User — 2025-01-01 10:00:00\na\n## Assistant\nb\n",
          "---\ntimezone: Mars/Olympus\n---\n## User\na\n", "", "# T\nModel: gpt-4o\n**User:** a\n**Assistant:**\nb\n",
          "## User\na\nSession: s2\n### chat-1\n> q\nanswer\n"])
@example(["---\n---"])  # front matter whose closing line has no line end: no body, no rule line after it
def test_any_mix_of_markdown_transcripts_in_one_table(texts):
    """Markdown transcripts with and without front matter (a zone, a model, a zone that fails), sessions,
    fences, exchanges, other heading styles: one table, each source its own sessions or failure."""
    _one_table_reads_like_the_line_engine("markdown", [_source(t, f"chat-{i}.md") for i, t in enumerate(texts)])


_T_BATCH = ["User: hi\nAssistant: yo\n", "---\ndate: 2025-08-24\n---\n[10:00] Ann: a\n[10:01] Bob: b\n",
            "Session: one\nUser: a\nSession: two\nUser: b\n", ""]
_M_BATCH = ["## User\nhi\n## Assistant\nyo\n", "---\ntimezone: Asia/Tokyo\n---\n## User — 2025-01-01 10:00\na\n",
            "Session: one\n**User:** a\nSession: two\n**User:** b\n", ""]
_I_BATCH = ["<<2024/03/01 10:00>> alice | a\n<<2024/03/01 10:01>> bob | b\n<<2024/03/01 10:02>> alice | c\n",
            "#41 [maria] a\n#42 [jon] b\n#43 [maria] c\n",
            "<<2024/03/02 10:00>> carol | a\n<<2024/03/02 10:01>> dave | b\nmore\n<<2024/03/02 10:02>> carol | c\n",
            "no header here\n"]


@pytest.mark.parametrize(("grammar", "module", "step", "texts", "tables"), [
    ("transcript", "parsers.grammars._transcript_columns", "header_rows", _T_BATCH, 1),
    ("inferred", "parsers.grammars._inferred_columns", "line_headers", _I_BATCH, 2),  # two learnt headers
    ("markdown", "parsers.grammars._markdown_columns", "turn_frames", _M_BATCH, 1),
])
def test_a_batch_is_one_table_per_step(grammar, module, step, texts, tables, monkeypatch):
    """The header pattern runs once over the whole batch (once per distinct learnt header), not per input."""
    import importlib

    mod = importlib.import_module(module)
    calls, run = [], getattr(mod, step)
    monkeypatch.setattr(mod, step, lambda lines, *args: calls.append(len(lines)) or run(lines, *args))
    sources = [_source(t, f"in-{i}.txt") for i, t in enumerate(texts)]
    _one_table_reads_like_the_line_engine(grammar, sources)
    assert len(calls) == tables


def test_an_inferred_log_whose_own_learning_fails_fails_alone(monkeypatch):
    from parsers.grammars import inferred

    learn = inferred.Head.learnt

    def failing(head):
        if any(s.startswith("^\\#") for s in head.shapes):
            raise ValueError("cannot learn")
        return learn(head)

    monkeypatch.setattr(inferred.Head, "learnt", failing)
    sources = [_source(t, f"in-{i}.log") for i, t in enumerate(_I_BATCH)]
    read = registry.get("inferred").read(sources, Settings())
    with pytest.raises(ValueError, match="cannot learn"):
        list(read[1])
    for i in (0, 2, 3):
        assert _snapshots(inferred.Inferred(), read[i]) == _lined(inferred.Inferred(), sources[i])


def _in_one_table_as_alone_and_by_line(grammar: str, texts: list[tuple[str, str, bool]]) -> None:
    """(text, file name, final newline) in one table: each read as alone, and as the line engine reads it."""
    sources = [SourceText(t + ("\n" if nl and t else ""), name, "0" * 64, len(t), "utf-8") for t, name, nl in texts]
    _one_table_reads_like_each_alone(grammar, sources)
    g = registry.get(grammar)
    for source, sessions in zip(sources, g.read(sources, Settings()), strict=True):
        lined = [session_snapshot(s, g.count_turns(s.raw)) for s in oracle.parse(g, source, Settings())]
        assert _snapshots(g, sessions) == lined


_IRC_BODY = st.sampled_from(["<ann> hi #chan", "<@bob> yo", "* ann waves", "-ann- notice", "plain",
                             "-!- ann [~a@h] has joined #chan", "*** bob has quit", "-- Mode #x [+o ann] by bob"])
_IRC_MARKER = {"irssi": ["--- Day changed Thu Oct 18 2012", "--- Log opened Feb 30 2012", "--- Log closed"],
               "bracketed": ["--- Day changed Sat Mar 02 2024", "--- Log opened Thu Oct 18 09:00:00 2012"],
               "xchat": ["**** BEGIN LOGGING AT Mon Dec 31 21:11:55 2001", "**** ENDING LOGGING AT Tue Jan 1 2002"],
               "weechat": ["2012-10-18 09:30:30\t****  Beginning of log  ****"], "supybot": []}


def _irc_line(dialect: str, i: int, body: str) -> str:
    clock = f"{i % 25:02d}:{i * 7 % 61:02d}"
    nick, _, rest = body.partition(" ")
    return {"supybot": f"2012-10-18T09:{i % 60:02d}:30+0{i % 3}00  {body}",
            "weechat": f"2012-10-18 09:{i % 60:02d}:3{i % 10}\t{nick.strip('<>')}\t{rest}",
            "irssi": f"{clock} {body}", "bracketed": f"[{clock}:0{i % 10}] {body}",
            "xchat": f"{('dec', 'jan', 'feb', 'xyz')[i % 4]} {i % 32:2d} {clock}:00 {body}"}[dialect]


@st.composite
def _irc_text(draw) -> str:
    dialect = draw(st.sampled_from(sorted(_IRC_MARKER)))
    rows = draw(st.lists(st.one_of(st.tuples(st.just("turn"), _IRC_BODY),
                                   st.tuples(st.just("cont"), st.sampled_from(["  continued", "", "#other"])),
                                   st.tuples(st.just("marker"), st.sampled_from(_IRC_MARKER[dialect] or [""]))),
                         max_size=10))
    lines = [_irc_line(dialect, i, body) if kind == "turn" else body for i, (kind, body) in enumerate(rows)]
    return "\n".join(lines)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.one_of(_irc_text(), st.just(""), st.text(alphabet="ab<> \n#", max_size=10)),
                          st.sampled_from(["x.log", "#chan_2024-03-01.log", "chat_42.log", "net_#rust_20240301.log"]),
                          st.booleans()), min_size=1, max_size=5))
def test_any_mix_of_irc_logs_in_one_table(logs):
    """Logs of every dialect, with and without headers or logger lines, empty, dated by their names or
    not: one table, each log read as alone and as the line engine reads it."""
    _in_one_table_as_alone_and_by_line("irc", logs)


def test_a_batch_of_irc_logs_is_one_table_per_dialect(monkeypatch):
    """The header pattern runs once per dialect over all of a batch's logs, not once per log."""
    from parsers.grammars import _irc_columns

    calls = []
    real = _irc_columns.line_headers
    monkeypatch.setattr(_irc_columns, "line_headers", lambda lines, rust: calls.append(len(lines)) or real(lines, rust))
    texts = ["2012-10-18T09:30:30+0000  <ann> hi\n", "10:00 <ann> a\n10:01 <bob> b\n",
             "2012-10-18T09:31:30+0000  <bob> yo\n", "--- Day changed Thu Oct 18 2012\n10:02 <cy> c\n"]
    sources = [SourceText(t, f"{i}.log", "0" * 64, len(t), "utf-8") for i, t in enumerate(texts)]
    read = registry.get("irc").read(sources, Settings())
    assert sorted(calls) == [2, 4]  # supybot's two lines, irssi's four
    assert [len(next(iter(s)).frame) for s in read] == [1, 2, 1, 1]
    assert registry.get("irc").read([], Settings()) == []  # an empty batch: no table


_D_LINE = st.one_of(
    st.builds(lambda n, t, s: f"{n}{t} — {s}", st.sampled_from(["Maya Chen", "Bob", "### Ann", "Deploy"]),
              st.sampled_from(["", " BOT"]),
              st.sampled_from(["08/11/2023 1:30 PM", "13.08.2023 23:59", "11/08/2023 23:50", "Today at 5:03 AM",
                               "2023-08-11 11:58 PM", "31/02/2023 10:00", "08/13/2023 10:00"])),
    st.sampled_from(["[1:31 PM]", "[12:03 AM]", "[00:10]", "[1:32 PM]shared line", "August 12, 2023",
                     "↪ @Maya Chen shipping it", "┌──@Bob: text", "plain text (edited)", "", "  ", "#channel"]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(_D_LINE, max_size=8).map("\n".join),
                          st.sampled_from(["paste.txt", "chat_42.txt"]), st.booleans()), min_size=1, max_size=5))
def test_any_mix_of_discord_pastes_in_one_table(pastes):
    """Pastes with and without author lines, empty, day-first beside month-first, starting with a
    continuation stamp or ending with a reply context: one table, each read as alone and as the line
    engine reads it."""
    _in_one_table_as_alone_and_by_line("discord-text", pastes)


def test_a_batch_of_discord_pastes_is_one_table(monkeypatch):
    """The header pattern runs once over all of a batch's pastes, not once per paste."""
    from parsers.grammars import _discord_columns

    calls = []
    real = _discord_columns.line_headers
    monkeypatch.setattr(_discord_columns, "line_headers",
                        lambda lines, rust: calls.append(len(lines)) or real(lines, rust))
    texts = ["Ann — 13/08/2023 10:00\nhi\n[10:01]\nyo\n", "Bob — 08/13/2023 10:00\nhey\n", "",
             "[10:00]\n↪ @Ann hi\nAnn — 13.08.2023 10:00\nok\n"]
    sources = [SourceText(t, f"{i}.txt", "0" * 64, len(t), "utf-8") for i, t in enumerate(texts)]
    read = registry.get("discord-text").read(sources, Settings())
    assert calls == [10]
    frames = [next(iter(s)).frame for s in read]
    assert [f.height for f in frames] == [2, 1, 0, 1]
    assert frames[1]["time"].dt.day().to_list() == [13]  # its own month-first order beside a day-first paste
    assert registry.get("discord-text").read([], Settings()) == []  # an empty batch: no table


@pytest.mark.parametrize(("grammar", "module", "step", "texts"), [
    ("irc", "irc", "_conclude", ["2012-10-18T09:30:30+0000  <ann> hi\n", "10:00 <bob> yo\n", "10:01 <cy> c\n"]),
    ("discord-text", "discord_text", "_note_order", ["Ann — 13/08/2023 10:00\nhi\n", "Bob — 08/13/2023 10:00\nyo\n",
                                                     "Cy — 01/02/2023 10:00\nc\n"]),
])
def test_a_text_whose_own_decision_fails_fails_alone(grammar, module, step, texts, monkeypatch):
    """One text's own decision raising gives its failure, when its sessions are taken, and to it only."""
    import importlib

    mod = importlib.import_module(f"parsers.grammars.{module}")
    real = getattr(mod, step)

    def failing(session, *args):
        if "bob" in str(session.raw).lower():
            raise RuntimeError("its own failure")
        return real(session, *args)

    monkeypatch.setattr(mod, step, failing)
    sources = [SourceText(t, f"{i}.txt", "0" * 64, len(t), "utf-8") for i, t in enumerate(texts)]
    first, second, third = registry.get(grammar).read(sources, Settings())
    assert next(iter(first)).frame.height == 1 and next(iter(third)).frame.height == 1
    with pytest.raises(RuntimeError, match="its own failure"):
        list(second)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 24 * 60 - 1))), max_size=20))
def test_midnight_wraps_as_columns_as_turn_by_turn(rows):
    """``_midnight`` moves the turns the line engine's walk moves: a turn whose clock, on its author
    line's day, is more than 12 h before the previous readable turn of that author line is a day on."""
    from datetime import datetime, timedelta

    import polars as pl

    from parsers.grammars._discord_columns import _midnight
    from tests.oracle.discord_text import midnight_passed

    rows = sorted(rows, key=lambda r: r[0])  # an author line's turns are consecutive
    day = datetime(2023, 8, 11)
    base = [None if m is None else day + timedelta(days=a, minutes=m) for a, m in rows]
    expected, previous = list(base), None
    for i, (when, (by, _)) in enumerate(zip(base, rows, strict=True)):
        if when is None:
            continue
        if previous is not None and previous[0] == by and midnight_passed(previous[1], when):
            when = expected[i] = when + timedelta(days=1)
        previous = (by, when)
    got = _midnight(pl.Series(base, dtype=pl.Datetime("us")), pl.Series([a for a, _ in rows], dtype=pl.Int64))
    assert got.to_list() == expected


def test_a_batch_of_turn_frames_is_one_frame_as_frame_by_frame():
    """``turncols.batch_frame`` joins runs of frame sessions at once: the rows of one frame per session."""
    import polars as pl

    from parsers.turncols import BATCH_SCHEMA, TurnColumns, _rows_frame, batch_frame, frame_turns

    texts = ["2012-10-18T09:30:30+0200  <ann> a\n2012-10-18T09:31:30Z  <bob> b\n", "10:00 <cy> c\n", "",
             "Ann — 13/08/2023 10:00\nhi\n"]
    frames = [next(iter(registry.get(g).read([SourceText(t, "x.log", "0" * 64, len(t), "utf-8")],
                                                         Settings())[0])).frame
              for g, t in zip(["irc", "irc", "irc", "discord-text"], texts, strict=True)]
    own = TurnColumns()
    own.add("Ann", "user", "typed")
    builders = [frames[0], frames[1], own, frames[2], frames[3], frames[0], TurnColumns()]
    expected = pl.concat([frame_turns(b, i) if isinstance(b, pl.DataFrame) else _rows_frame([i] * len(b.rows), b.rows)
                          for i, b in enumerate(builders)], how="vertical")
    got = batch_frame(builders)
    assert got.schema == pl.Schema(BATCH_SCHEMA)
    assert got.to_dicts() == expected.to_dicts()


def test_a_long_irc_log_decides_its_dialect_on_its_sample_in_a_table():
    """A log longer than its 64 KiB sample is decided on the sample, as ``parse`` decides it, beside short logs."""
    weechat = "".join(f"2012-10-18 09:{i % 60:02d}:30\tann\tline {i}\n" for i in range(2000))
    long = "#chan notes\n" + "x" * 70000 + "\n" + weechat  # past its sample: only the note and filler
    short = "10:00 <bob> yo\n"
    _in_one_table_as_alone_and_by_line("irc", [(long, "a.log", False), (short, "b.log", True),
                                               (weechat, "c.log", True)])


@pytest.mark.parametrize("grammar", COLUMNAR)
def test_an_empty_batch_reads_nothing(grammar):
    assert registry.get(grammar).read([], Settings()) == []
