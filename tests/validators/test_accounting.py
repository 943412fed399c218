"""Source accounting: independent of the grammars, every golden input is accounted for, and a turn
taken away from a grammar's result is found missing (DESIGN section 2, gate check 3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.records import ParsedSession, Region, RegionKind, Turn
from parsers import registry
from tests.helpers import GOLDEN, load_group, parsed_sessions, read_one
from tests.parsers.test_golden import CASES, GROUPS, _companions, _grammar_dir, group_case
from validators.accounting import Accountant, LineIndex, account, account_lines, message_records


def _sessions(path):
    grammar = _grammar_dir(path).name
    name = str(path.relative_to(_grammar_dir(path)))
    return parsed_sessions(path, grammar, name=name, companions=_companions(path))


def _accountings(source, sessions):
    index = LineIndex(source.text)
    return [account(s, index) for s in sessions]


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_every_golden_input_is_accounted_for(path):
    source, sessions = _sessions(path)
    for session, result in zip(sessions, _accountings(source, sessions), strict=True):
        # a conversation the export holds with no message at all (Claude, ChatGPT) has nothing to check
        assert result.checked > 0 or not (session.turns or session.regions), "the accounting found nothing to check"
        # a session its grammar already declares partial (a damaged line) may show what it lost
        assert result.clean or session.coverage_reason, result.reason()
        assert result.in_turns + result.declared + result.unaccounted == result.checked


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_a_deleted_turn_is_unaccounted(path):
    source, sessions = _sessions(path)
    victim = max(sessions, key=lambda s: len(s.turns))
    if not victim.turns:
        pytest.skip("no session with turns in this input")
    for i in (0, len(victim.turns) // 2, len(victim.turns) - 1):
        kept = [t for j, t in enumerate(victim.turns) if j != i]
        damaged = ParsedSession(victim.session_id, victim.id_source, kept, raw=victim.raw, lines=victim.lines,
                                pointer=victim.pointer, regions=victim.regions)
        result = account(damaged, LineIndex(source.text))
        assert not result.clean and result.reason().startswith("unaccounted_source"), (i, result)


def _group(key):
    grammar, paths, names, name, _ = group_case(key)
    source = load_group(paths, names, name, _companions(paths[0]))
    return source, read_one(registry.get(grammar), source)


@pytest.mark.parametrize("key", [k for k, _ in GROUPS], ids=lambda k: str((k[0] / k[1]).relative_to(GOLDEN)))
def test_every_golden_conversation_over_several_files_is_accounted_for_and_a_deleted_turn_found(key):
    source, sessions = _group(key)
    results = [Accountant.of(source).account(s, i == len(sessions) - 1) for i, s in enumerate(sessions)]
    assert all(r.clean and r.checked > 0 for r in results), [r.reason() for r in results]
    victim = max(sessions, key=lambda s: len(s.turns))
    for part in sorted({t.part for t in victim.turns if t.part}):
        i = max(j for j, t in enumerate(victim.turns) if t.part == part)
        kept = [t for j, t in enumerate(victim.turns) if j != i]
        damaged = ParsedSession(None, "none", kept, raw=victim.raw, regions=victim.regions)
        result = Accountant.of(source).account(damaged, True)
        lost = victim.turns[i].lines
        assert result.reason().startswith("unaccounted_source"), result
        first = result.listed[0]  # the lost turn's first line, in the part it names
        assert first == f"{part} line {lost[0]}" or first.startswith(f"{part} lines {lost[0]}-"), first


def test_lines_in_two_turns_are_reported():
    index = LineIndex("a\nb\nc\n")
    result = account_lines(index, (1, 3), [(1, 2), (2, 3)], [])
    assert result.overlapping == 1 and "line 2 (twice)" in result.listed


def test_blank_lines_need_no_owner():
    index = LineIndex("a\n\n  \nb\n")
    assert account_lines(index, (1, 4), [(1, 1), (4, 4)], []).clean


def test_declared_regions_count_apart_from_turns():
    index = LineIndex("# Title\nUser: hi\n")
    session = ParsedSession(None, "none", [Turn("User", "user", "hi", lines=(2, 2))], lines=(1, 2),
                            regions=[Region(RegionKind.PREAMBLE, "title line", lines=(1, 1))])
    result = account(session, index)
    assert (result.in_turns, result.declared, result.unaccounted) == (1, 1, 0)


def test_the_walker_finds_messages_of_formats_it_does_not_know():
    doc = {"meta": {"title": "x", "created_at": 1}, "log": [
        {"who": "a", "speaker": "Ann", "body": "hi", "at": 1},
        {"sender_name": "Bo", "timestamp_ms": 2, "photos": [{"uri": "p.jpg", "creation_timestamp": 2}]},
        {"text_entities": [{"type": "plain", "text": "no author, no time"}]},
    ]}
    assert list(message_records(doc)) == ["/log/0", "/log/1"]


def test_json_records_inside_or_around_a_turn_pointer_are_accounted():
    raw = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": [
        {"type": "text", "text": "b"}]}]}
    turns = [Turn("u", "user", "a", pointer="/messages/0"),
             Turn("a", "assistant", "b", pointer="/messages/1/content/0")]
    session = ParsedSession(None, "none", turns, raw=raw, pointer="")
    assert account(session, None).clean
    session.turns.pop()
    result = account(session, None)
    assert result.listed == ["/messages/1"]


@given(st.lists(st.sampled_from(["x", "", " "]), min_size=1, max_size=40), st.data())
def test_any_split_of_the_lines_into_turns_is_clean(lines, data):
    text = "\n".join(lines) + "\n"
    n = len(lines)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n), max_size=n))) | {1})
    spans = [(a, b - 1) for a, b in zip(cuts, [*cuts[1:], n + 1], strict=True)]
    assert account_lines(LineIndex(text), (1, n), spans, []).clean
    if len(spans) > 1:  # dropping a span with a non-blank line is always found
        i = data.draw(st.integers(0, len(spans) - 1))
        a, b = spans[i]
        rest = spans[:i] + spans[i + 1:]
        missing = any(lines[k].strip() for k in range(a - 1, b))
        assert account_lines(LineIndex(text), (1, n), rest, []).clean == (not missing)


def test_a_bare_entry_beside_messages_is_a_record():
    raw = {"chat_messages": [{"sender": "human", "text": "hi"}, "lost text", None,
                             {"sender": "assistant", "text": "x"}]}
    assert list(message_records(raw)) == ["/chat_messages/0", "/chat_messages/1", "/chat_messages/2",
                                          "/chat_messages/3"]
    assert list(message_records({"tags": ["a", None]})) == []


def test_a_view_keyed_by_line_indexes_is_walked_like_a_list():
    view = {"3": {"role": "user", "content": "a"}, "7": "not json {", "9": {"role": "assistant", "content": "b"}}
    assert list(message_records(view)) == ["/3", "/7", "/9"]


def test_a_block_lost_inside_a_record_is_found():
    raw = {"messages": [{"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."}, {"type": "text", "text": ""},
        {"type": "tool_use", "name": "Read", "input": {"path": "a.py"}}]}]}
    turns = [Turn("a", "assistant", "Let me look.", pointer="/messages/0/content/0"),
             Turn("a", "tool", "Read a.py", pointer="/messages/0/content/2")]
    session = ParsedSession(None, "none", turns, raw=raw, pointer="")
    assert account(session, None).clean  # the empty block needs no owner
    session.turns.pop()
    result = account(session, None)
    assert result.listed == ["/messages/0/content/2"] and result.checked == 2


@given(st.lists(st.lists(st.sampled_from(["x", "", " "]), min_size=1, max_size=15), min_size=1, max_size=4),
       st.data())
def test_any_split_of_several_files_into_turns_is_clean_and_a_lost_one_is_named_with_its_file(files, data):
    texts = [(f"messages{i + 1}.html", "\n".join(lines) + "\n") for i, lines in enumerate(files)]
    turns = []
    for (name, _), lines in zip(texts, files, strict=True):
        cuts = sorted(set(data.draw(st.lists(st.integers(1, len(lines)), max_size=len(lines)))) | {1})
        turns += [Turn("A", "user", "x", lines=(a, b - 1), part=name)
                  for a, b in zip(cuts, [*cuts[1:], len(lines) + 1], strict=True)]
    session = ParsedSession(None, "none", turns)
    assert Accountant(texts, lines=True).account(session, True).clean
    lost = turns.pop(data.draw(st.integers(0, len(turns) - 1)))
    lines = files[int(lost.part.removeprefix("messages").removesuffix(".html")) - 1]
    result = Accountant(texts, lines=True).account(ParsedSession(None, "none", turns), True)
    if any(lines[k].strip() for k in range(lost.lines[0] - 1, lost.lines[1])):
        assert not result.clean and all(where.startswith(f"{lost.part} line") for where in result.listed)
    else:
        assert result.clean


def test_a_reply_nested_in_a_message_needs_a_turn_of_its_own():
    raw = {"value": [{"from": {"user": {"displayName": "Ann"}}, "body": {"content": "question"},
                      "createdDateTime": "2024-01-01T10:00:00Z",
                      "replies": [{"from": {"user": {"displayName": "Bo"}}, "body": {"content": "answer"},
                                   "createdDateTime": "2024-01-01T10:01:00Z"}]}]}
    parent = Turn("Ann", "user", "question", pointer="/value/0")
    reply = Turn("Bo", "user", "answer", pointer="/value/0/replies/0")
    assert account(ParsedSession(None, "none", [parent, reply], raw=raw, pointer=""), None).clean
    dropped = account(ParsedSession(None, "none", [parent], raw=raw, pointer=""), None)
    assert dropped.listed == ["/value/0/replies/0"]
    # Slack's replies name a user and a time without text: references, not messages of their own
    slack = {"messages": [{"user": "U1", "text": "root", "ts": "1.0", "replies": [{"user": "U2", "ts": "2.0"}]}]}
    assert account(ParsedSession(None, "none", [Turn("U1", "user", "root", pointer="/messages/0")], raw=slack,
                                 pointer=""), None).clean
