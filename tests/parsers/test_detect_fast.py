"""Detection's fast path gives the full scoring's shares: a grammar is skipped only where its detector
would say 0 (``Grammar.detect_needs``), on every input the tests know and on random ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from models.errors import DetectionError, Reason
from parsers import linecount, registry
from parsers.grammars import _chatjson, csv_chat, discord_text, inferred, kakaotalk, line, markdown, whatsapp
from parsers.sample import nonblank
from tests.helpers import BREAKS_ZOOM, CONFORMANCE, GOLDEN, ROOT, break_zoom_detection, load_source
from tests.parsers.test_golden import CASES

SAMPLE = 65536
NEEDY = [g for g in registry.all_grammars() if g.detect_needs]
NEEDS = sorted({s for g in NEEDY for s in g.detect_needs})


def _inputs() -> list[tuple[Path, str]]:
    found = [(p, str(p.relative_to(GOLDEN))) for p in CASES]
    found += [(p, str(p.relative_to(ROOT))) for p in sorted((ROOT / "sample_logs").rglob("*")) if p.is_file()]
    if CONFORMANCE.is_dir():
        found += [(p, p.name) for p in sorted((CONFORMANCE / "fixtures").rglob("*")) if p.is_file()]
    return found


INPUTS = _inputs()
TEXTS = [(load_source(path, name).text[:SAMPLE], name) for path, name in INPUTS]


def _same(sample: str, name: str) -> None:
    assert registry._scores(sample, name) == registry._scores(sample, name, every=True)


def test_the_inputs_and_the_needs_are_there():
    assert len(INPUTS) > 150 and len(NEEDY) >= 10


@pytest.mark.parametrize(("path", "name"), INPUTS, ids=[n for _, n in INPUTS])
def test_every_known_input_scores_the_same_both_ways(path, name):
    _same(load_source(path, name).text[:SAMPLE], name)


@pytest.mark.parametrize("grammar", NEEDY, ids=lambda g: g.name)
def test_a_known_input_without_the_needed_strings_scores_0_in_full(grammar):
    """The needs are necessary: take them out of every input (its own grammar's too) and the detector
    itself says 0."""
    for sample, name in TEXTS:
        for need in grammar.detect_needs:
            sample = sample.replace(need, need[:-1] + "\u00a7" if len(need) > 1 else "\u00a7")
        assert "\\u" in sample or grammar.detect(sample, name) == 0.0, name


FRAGMENTS = [*NEEDS, "{", "}", "[", "]", '"', ":", ",", "\n", "\t", " ", '"messages": [', '"type": "user"',
             '"sender_id": "1"', '"timestamp": "2024-01-01T10:00:00Z"', '"text": "hi"', "12:01:02 ", "Ann: hi",
             "## User", "**You:**", "[10:15] <ann> hi", "Ann — 08/11/2023 1:30 PM", "12/24/19, 11:23 - Bo: x",
             '"message": {"role": "user"}', '"uuid": "a"', '"is_user": true', '"send_date": 1', "\\u0041"]


@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=60).map("".join),
       st.sampled_from(["chat.txt", "conversations.json", "session.jsonl", "messages.json", "x.traj"]))
def test_random_inputs_score_the_same_both_ways(sample, name):
    _same(sample, name)


# --- detect_many: every input of a batch at once, the same Detection (or DetectionError) as detect alone ----

THRESHOLD = 0.5


def _outcome(result):
    """A detection or its error as comparable fields (an error's type, reason, message and grammar)."""
    if isinstance(result, Exception):
        return type(result).__name__, result.reason, str(result), result.grammar
    return result


def _alone(sample: str, name: str):
    try:
        return registry.detect(sample, name, threshold=THRESHOLD)
    except DetectionError as exc:
        return exc


def _same_batched(items: list[tuple[str, str]]) -> None:
    batched = registry.detect_many(items, threshold=THRESHOLD)
    assert [_outcome(r) for r in batched] == [_outcome(_alone(s, n)) for s, n in items]


def test_every_known_input_at_once_is_detected_as_alone():
    _same_batched(TEXTS)
    _same_batched(TEXTS[::-1])  # no input's result depends on its neighbours


LINE_RULES = [g for g in registry.all_grammars() if g.detect_lines is not None]


def test_the_line_rules_are_there_and_polars_reads_them():
    assert {g.name for g in LINE_RULES} >= {"irc", "zoom"}
    for grammar in LINE_RULES:
        assert set(grammar.detect_lines.rust) == set(grammar.detect_lines.patterns)


@pytest.mark.parametrize("grammar", LINE_RULES, ids=lambda g: g.name)
def test_the_line_counts_of_every_known_input_are_those_of_its_patterns(grammar):
    """The counts the batch makes with polars are the counts the grammar's own regexes make, input by input."""
    rule = grammar.detect_lines
    samples = [s for s, _ in TEXTS if linecount.polars_safe(s)]
    assert linecount.count_many(samples, rule) == [linecount.count(s, rule) for s in samples]
    hit = [s for s in samples if linecount.count(s, rule).hits and max(linecount.count(s, rule).hits.values())]
    assert hit  # the known inputs exercise the patterns


def test_one_table_counts_every_rule_at_once_for_every_sample_or_some():
    """One query of one table for all the declared rules gives each sample's own counts; the samples
    left out of ``rows`` are not read."""
    samples = [s for s, _ in TEXTS if linecount.polars_safe(s)] + ["", "\x1c\n \n\u3000", "\ufeffUser: hi\r\n"]
    rules = {g.name: g.detect_lines for g in LINE_RULES}
    table = linecount.LineTable(samples, [max(r.limit for r in rules.values())] * len(samples))
    assert table.count(rules) == {k: [linecount.count(s, r) for s in samples] for k, r in rules.items()}
    rows = list(range(0, len(samples), 3))
    some = table.count(rules, rows)
    for k, r in rules.items():
        empty = linecount.LineCounts(0, dict.fromkeys(r.patterns, 0), dict.fromkeys(r.patterns))
        assert some[k] == [linecount.count(s, r) if i in rows else empty for i, s in enumerate(samples)]


LINES = ["10:02:15 From Ann Lee to Everyone:", "\tHello everyone", "10:03:00\tBo:\tok", "10:03:00\tBo ok",
         "2012-10-18T09:30:30+0000  <jamespage> hi", "[10:15] <ann> hi", "12:01 -!- bo has joined",
         "--- Log opened Tue Oct 18 2012", "Oct 18 09:30:30 <ann>\thi", "2024-01-01 10:00:00\tann\thi",
         "\u0661\u0660:\u0660\u0662:\u0661\u0665 From x", "12:01\x1c<ann> hi", "12:01 \u00a0<ann> hi",
         "ann\u2028bo", "\x85", " ", "", "Ann: hi", "x" * 70000, "\ud800 10:00:00 From"]


@given(st.lists(st.tuples(st.lists(st.sampled_from(LINES + FRAGMENTS) | st.text(max_size=8), max_size=40),
                          st.sampled_from(["chat.txt", "conversations.json", "meeting_saved_chat.txt", "x.log"])),
                max_size=8))
def test_random_mixes_of_inputs_at_once_are_detected_as_alone(mix):
    _same_batched([("\n".join(parts)[:SAMPLE], name) for parts, name in mix])


def test_a_mix_of_known_and_random_inputs_at_once_is_detected_as_alone():
    _same_batched([TEXTS[0], ("\n".join(LINES), "chat.txt"), TEXTS[-1], ("", "empty.txt"), *TEXTS[1:40]])


def test_a_detector_that_fails_fails_its_own_input_only(monkeypatch):
    """The input whose sample breaks a detector gets DetectionError ``internal`` naming that grammar;
    every other input of the batch is detected as alone."""
    break_zoom_detection(monkeypatch, KeyError("the detector's bug"))
    items = [TEXTS[0], (BREAKS_ZOOM, "meeting_saved_chat.txt"), TEXTS[1]]
    batched = registry.detect_many(items, threshold=THRESHOLD)
    failed = batched[1]
    assert isinstance(failed, DetectionError) and failed.reason is Reason.INTERNAL and failed.grammar == "zoom"
    assert "KeyError" in str(failed)
    assert [_outcome(batched[0]), _outcome(batched[2])] == [_outcome(_alone(*TEXTS[0])), _outcome(_alone(*TEXTS[1]))]


def test_a_forced_format_is_every_input_s_detection():
    batched = registry.detect_many(TEXTS[:3], threshold=THRESHOLD, forced="irc")
    assert batched == [registry.detect(s, n, threshold=THRESHOLD, forced="irc") for s, n in TEXTS[:3]]


def test_the_record_scan_reads_white_space_as_the_regex_module_does():
    """The JSON record scan runs on ``re`` for speed; its white space before a key's colon is still the
    ``regex`` module's ``\\s`` (Unicode White_Space), not ``re``'s (which adds \\x1c-\\x1f)."""
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    assert re.findall(_chatjson._SPACE, every) == regex.findall(r"\s", every)
    assert [r.keys for r in _chatjson.sample_records('[{"from"\x1c: "a", "text": "b", "date": 1}]')] == \
        [frozenset({"text", "date"})]  # \x1c is no space to the scan: "from" is not a key


# --- line rules moved onto the counted route: the counts give the share the header regex gave line by line ---

def _header_rule(sample: str, header, title, named: str, dated: tuple[str, ...], title_dates: bool) -> float:
    """The rule LINE and KakaoTalk detected by before their counts: HEADER's match of each non-blank line
    (``named``: the group of a message, ``dated``: the groups that date one), the title on the first line
    (``title_dates``: LINE's title stands for a date line, KakaoTalk's does not)."""
    lines = nonblank(sample, 2000)
    if not lines:
        return 0.0
    marks = [(i, m) for i, ln in enumerate(lines) if (m := header.match(ln))]
    messages = sum(1 for _, m in marks if m[named])
    titled = title.match(lines[0]) is not None
    is_dated = (titled and title_dates) or any(m[g] for _, m in marks for g in dated)
    if not messages or not is_dated or messages < 0.05 * len(lines):
        return 0.0
    return (len(lines) - (0 if titled else marks[0][0])) / len(lines)


def _discord_text_rule(sample: str) -> float:
    """The rule discord-text detected by before its counts."""
    lines = nonblank(sample, 2000)
    if not lines:
        return 0.0
    heads = [i for i, ln in enumerate(lines) if (m := discord_text.HEADER.match(ln)) and m["name"]]
    stamps = sum(1 for ln in lines if discord_text._COUNT_STAMP.match(ln))
    if not heads or len(heads) + stamps < 0.05 * len(lines):
        return 0.0
    return (len(lines) - heads[0]) / len(lines)


RULES = {
    "line": lambda s: _header_rule(s, line.HEADER, line.TITLE, "clock", ("date",), True),
    "kakaotalk": lambda s: _header_rule(s, kakaotalk.HEADER, kakaotalk.TITLE, "name", ("dateline", "day"), False),
    "discord-text": _discord_text_rule,
}


def test_the_moved_line_rules_are_counted():
    assert {g.name for g in LINE_RULES} >= {"irc", "zoom", "whatsapp", "transcript", *RULES}


def test_a_table_refuses_a_rule_that_reads_past_its_lines():
    rule = registry.get("line").detect_lines
    with pytest.raises(DetectionError) as caught:
        linecount.LineTable(["a", "b"], [rule.limit, rule.limit - 1]).count({"line": rule})
    assert caught.value.reason is Reason.INTERNAL
    only = linecount.LineTable(["a", "b"], [rule.limit, rule.limit - 1]).count({"line": rule}, [0])
    assert only["line"][0] == linecount.count("a", rule)  # the sample that holds its lines is counted


def test_a_transcript_without_a_name_line_scores_0_and_with_one_as_its_detector_does():
    """Transcript's counted gate is its detector's own first condition: no ``Name:`` line, no label."""
    gate = registry.get("transcript")
    for sample, name in TEXTS:
        counts = linecount.count(sample, gate.detect_lines)
        assert gate.detect_counted(sample, name, counts) == gate.detect(sample, name), name
    assert not linecount.count("[10:15] <ann> hi\n{\"text\": \"a: b\"}", gate.detect_lines).hits["label"]
    front = "---\n" + "- v\n" * 500 + "---\n" + "Ann: hi\nBo: yo\n" * 5  # its labels past the gate's lines
    assert not linecount.count(front, gate.detect_lines).hits["label"]
    assert gate.detect_counted(front, "chat.txt", linecount.count(front, gate.detect_lines)) == \
        gate.detect(front, "chat.txt") > 0.5


def _whatsapp_lines_agree(samples: list[str]) -> None:
    """WhatsApp's counted header test takes the lines its header (``FIRST``) matches, and no other."""
    for sample in samples:
        for ln in nonblank(sample, whatsapp.SAMPLE_LINES):
            assert (whatsapp.HEADER_LINE.match(ln) is None) == (whatsapp.FIRST.match(ln) is None), ln


def test_whatsapp_s_counted_header_takes_the_lines_of_its_header_in_every_known_input():
    _whatsapp_lines_agree([s for s, _ in TEXTS])
    assert any(whatsapp.FIRST.match(ln) for s, _ in TEXTS for ln in nonblank(s, 400))


@pytest.mark.parametrize("grammar", sorted(RULES))
def test_a_moved_rule_scores_every_known_input_as_its_header_did(grammar):
    detector, rule = registry.get(grammar), RULES[grammar]
    scored = [(n, detector.detect(s, n), rule(s)) for s, n in TEXTS]
    assert [(n, a) for n, a, _ in scored] == [(n, b) for n, _, b in scored]
    assert any(a > 0.5 for _, a, _ in scored)  # the known inputs hold this grammar's chats


EDGES = {  # lines at each moved rule's edges: a header with and without what must follow it, near misses
    "line": ["[LINE] Chat history with Ann", "\ufeff[LINE] 山田とのトーク履歴", "Saved on: 2024/05/02 21:14",
             "2024/05/01(Wed)", "2024/5/1（水）", "2024.05.01 Wednesday", "Wed, 05/01/2024", "2024/5/1周三",
             "2024/05/01(Wed) x", "2024/05/01\t", "10:15\tAnn Lee\tMorning!", "10:20\t\tAnn joined.",
             "午後3:05\tBo\thi", "3:05pm\tBo\t", "3:05 PM\tBo", "10:15 Ann", "10:15\t", "1:5\tx\ty",
             '"second line"', "2024/05/01\tAnn\tx"],
    "kakaotalk": ["홍길동 님과 카카오톡 대화", "KakaoTalk Chats with Ann", "저장한 날짜 : 2024-03-01 12:40:00",
                  "--------------- 2024년 3월 1일 금요일 ---------------", "2024년 3월 1일 금요일",
                  "2024. 3. 1. 금요일", "Friday, March 1, 2024", "--------------- Friday, March 1, 2024",
                  "[홍길동] [오후 12:34] 안녕하세요", "[Ann] [12:34 PM] hi", "[Ann] [12:34]", "[Ann] [x] hi",
                  "2024년 3월 1일 오후 12:34, 홍길동 : 안녕하세요", "2024. 3. 1. 오후 12:34, Bo : hi",
                  "Mar 1, 2024, 12:34 PM, Ann : Hello", "March 1, 2024 at 12:35 PM, Bo : x",
                  "2024. 3. 1. 12:36: 김철수님이 나갔습니다.", "2024년 3월 1일 오후 12:34, 김철수님이 들어왔습니다.",
                  "2024. 3. 1. 12:36:45, Ann : x", "2024. 3. 1. 12:36:4, Ann : x", "Mar 1, 2024, 12:34 P.M., A : b",
                  "Mar 1, 2024, 12:34 PM, : x", "2024. 3. 1. 12:36, Ann :x", "김철수님이 들어왔습니다.",
                  "[x 님이 나갔습니다.", "2024년 3월 1일 금요일 12:34, A : b"],
    "discord-text": ["Maya Chen — 08/11/2023 1:30 PM", "Maya Chen BOT — Today at 1:30 PM", "## Ann — 2024-01-01 10:00",
                     "> Ann — 2024-01-01 10:00", "#Ann — 2024-01-01 10:00", "Ann – Yesterday at 9:05",
                     "Ann — 2024-01-01 10:00 x", "Ann — 08.11.2023, 13:30", "[1:31 PM]", "[1:31 PM] hi", "[1:3]",
                     "November 8, 2023", "↪ @Bo hello", "┌──@Bo: text", "x" * 81 + " — 08/11/2023 1:30 PM",
                     "— 08/11/2023 1:30 PM", "Ann — Heute um 9:05"],
    "whatsapp": ["12/24/19, 11:23 - John Doe: Lorem ipsum", "[12/24/19, 11:23:45] John: x",
                 "[2019-12-24 11:23:45] A: x", "\u200e[24.12.19, 11:23:45] Ann: \u200eimage omitted",
                 "24/12/2019, 11:23 pm - Ann: hi", "2019-12-24, 上午11:23 - Ann: x", "[12/24/19 11:23] x",
                 "12/24/19, 11:23 – Ann: x", "[12/24/19, 11:23:45 AM] Ann: <Media omitted>",
                 "24.12.19 klo 11.23 - Ann: x", "12/24/19, 11:23 - Messages and calls are end-to-end encrypted.",
                 "[12/24/19, 11:23", "12/24/19 11:23 -Ann", "[2019-12-24 11:23:45 p. m.] A: b",
                 "2019-12-24 11:23 - A", "[\u200e12/24/19, 11:23] A:", "12/24/19, 11:23 - ",
                 "[12/24/19, 11:23 - A: b", "12/24/19, 11:23] A: b", "24. 12. 19. 11:23 - A: b",
                 "24/12/2019, ص 11:23 - A: b", "12/24/19, 11:23\u202fPM - A: b", "12/24/19, 11:23 KM - A: b",
                 "12/24/19, am11:23 - A: b"],
    "transcript": ["User: hi", "Assistant: hello", "[2025-08-24 10:00:00] Ann: hi", "2025-08-24T10:00:00Z Bob: yo",
                   "[10:00] Ann: hi", "[10:05] Bob joined the call", "Assistant (openai:gpt-4o@2024-08-06): x",
                   "ChatGPT said:", "Note: inside", "---", "date: 2024-01-01", "title: x", "## User", "**You:**",
                   "Session: s1", "Participants: User, Assistant", ": no name", "a.b: x", "Ann:", "Ann:x",
                   "Ann : x", " Ann: x", "[2016/08/06 13:23] Ann: hi", "one two three four five six seven: x"],
}
FILLERS = ["", " ", "\t", "first line", "Ann: hi", "\u00a0", "\u2028", "\x1c", "\u200b", "x" * 70]


def _edge_text(lines: list[str], crlf: bool, bom: bool) -> str:
    return ("\ufeff" if bom else "") + ("\r\n" if crlf else "\n").join(lines)


@pytest.mark.parametrize("grammar", sorted(EDGES))
@settings(max_examples=400)
@given(data=st.data())
def test_lines_at_a_moved_rule_s_edges_score_as_its_header_did(grammar, data):
    """Generated texts of a rule's header lines, their continuations, blank lines, CRLF and a BOM: the
    counts score as the header did, polars counts as Python does, and a batch decides as ``detect`` alone."""
    pieces = st.sampled_from(EDGES[grammar] + FILLERS) | st.text(max_size=6)
    texts = data.draw(st.lists(st.tuples(st.lists(pieces, max_size=30), st.booleans(), st.booleans()),
                               min_size=1, max_size=4))
    samples = [_edge_text(*t) for t in texts]
    detector = registry.get(grammar)
    assert [detector.detect_counted(s, "chat.txt", linecount.count(s, detector.detect_lines)) for s in samples] == \
        [detector.detect(s, "chat.txt") for s in samples]
    if grammar in RULES:
        assert [detector.detect(s, "chat.txt") for s in samples] == [RULES[grammar](s) for s in samples]
    elif grammar == "whatsapp":
        _whatsapp_lines_agree(samples)
    safe = [s for s in samples if linecount.polars_safe(s)]
    counts = [linecount.count(s, detector.detect_lines) for s in safe]
    assert linecount.count_many(safe, detector.detect_lines) == counts
    _same_batched([(s, "chat.txt") for s in samples])


# --- per-input detectors made cheaper: each scores as the detector it replaced (kept here as the reference) ---

def _inferred_reference(sample: str) -> float:
    """``inferred``'s detector before it stopped shaping lines once settled: ``infer`` over every line."""
    found = inferred.infer(sample)
    if found is None:
        return 0.0
    lines = [ln for ln in sample.split("\n", inferred.SAMPLE_LINES)[:inferred.SAMPLE_LINES] if ln.strip()]
    header = regex.compile(found[0])
    first = next((i for i, ln in enumerate(lines) if header.match(ln)), len(lines))
    return inferred.GUESS * (len(lines) - first) / len(lines)


INFERRED_EDGES = ["<<2024/03/01 10:00>> alice | hi", "<<2024/03/01 10:00>> bob | yo", "#42 [alice] text",
                  "#7 [bob] x", "12/24/19, 11:23 - Bo: x", "[10:15] <ann> hi", "1. one two three four five six: x",
                  "- Ann: x", "Ann: plain", "  continued", "{", '{"a": 1}', "[[", "42", "#", "x" * 90 + " 1 a: b",
                  "\u00b2 Ann: x", "e\u0301 1 Ann: x", "1 Ann Bo Cy Di Ed: x", "1 Ann Bo Cy Di: x"]


def test_inferred_scores_every_known_input_as_before():
    detector = registry.get("inferred")
    assert [detector.detect(s, n) for s, n in TEXTS] == [_inferred_reference(s) for s, _ in TEXTS]


@settings(max_examples=600)
@given(st.lists(st.sampled_from(INFERRED_EDGES + FILLERS) | st.text(max_size=6), max_size=30),
       st.booleans(), st.booleans())
def test_inferred_scores_texts_at_its_edges_as_before(lines, crlf, bom):
    """Header lines of one shape or several, shapeless lines and blank ones around the 3-line and 60 %
    limits: the detector that stops once settled scores as ``infer`` over every line does."""
    sample = _edge_text(lines, crlf, bom)
    assert registry.get("inferred").detect(sample, "chat.txt") == _inferred_reference(sample)


@settings(max_examples=600)
@given(st.lists(st.sampled_from(["#1 [ann] x", "#2 [bo] y", "<1> ann | x", "Ann: plain", ""]), max_size=14))
def test_inferred_scores_mixes_of_two_shapes_as_before(lines):
    """Two shapes and shapeless lines in every proportion near the limits (4 of 7, 3 of 5, 2 of 3...)."""
    sample = "\n".join(lines)
    assert registry.get("inferred").detect(sample, "chat.txt") == _inferred_reference(sample)


def _csv_columns_reference(layout: csv_chat.Layout, header: list[str]) -> dict[str, int] | None:
    """``Layout.columns`` before the names were normalised once per header: each name by ``_norm``."""
    if layout.exact is not None and len(header) != len(layout.exact):
        return None
    names = [csv_chat._norm(h) for h in header]
    if layout.exact is not None and names != [csv_chat._norm(h) for h in layout.exact]:
        return None
    found = {}
    for field in ("author", "time", "text", "attachments"):
        hits = [i for i, n in enumerate(names) if n in getattr(layout, field)]
        if hits:
            found[field] = hits[0]
    return found if {"author", "time", "text"} <= found.keys() else None


CSV_NAMES = sorted({n for layout in csv_chat.LAYOUTS for field in ("author", "time", "text", "attachments")
                    for n in getattr(layout, field)} | {h for layout in csv_chat.LAYOUTS for h in layout.exact or ()})
CSV_PIECES = ["\x00", "\ufeff", " ", "\t", "_", "-", "\x1c", "\u2028", "\u00a0", "Σ", "ΑΣ", "İ", "\u212a", "{", '"']


@settings(max_examples=600)
@given(st.lists(st.sampled_from(CSV_NAMES) | st.lists(st.sampled_from(CSV_NAMES + CSV_PIECES) | st.text(max_size=3),
                                                      max_size=4).map("".join), max_size=8))
def test_a_csv_header_s_names_and_columns_are_read_as_one_by_one(header):
    """Names normalised in one substitution are each name's ``_norm`` (a NUL, a BOM, separators, a final
    sigma at a name's end), and every layout finds the columns it found name by name."""
    names = csv_chat.norms(header)
    assert names == [csv_chat._norm(h) for h in header]
    assert [layout.columns(names) for layout in csv_chat.LAYOUTS] == \
        [_csv_columns_reference(layout, header) for layout in csv_chat.LAYOUTS]


def test_markdown_reads_a_repeated_label_s_role_word_once():
    """A session's labels repeat on every turn: the second reading of a label is the cached first, and it
    is what reading it afresh gives."""
    key = markdown._role_key
    key.cache_clear()
    sample = "## User\nhi\n\n## Assistant\nhello\n\n## User\nagain\n\n## ChatGPT said:\nyes\n"
    first = registry.get("markdown").detect(sample, "chat.md")
    assert first > 0 and key.cache_info().hits > 0
    assert registry.get("markdown").detect(sample, "chat.md") == first
    for label in ("User", "ChatGPT said", " Assistant wrote ", "Claude"):
        assert key(label) == key.__wrapped__(label)
