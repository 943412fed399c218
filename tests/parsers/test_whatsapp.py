"""WhatsApp grammar: date-order decisions, clocks, notices, placeholders, marks, speed-critical paths."""

from __future__ import annotations

from datetime import datetime

import pytest

from models.settings import Settings
from parsers import registry
from parsers.grammars.whatsapp import actor_of, chat_title, date_order
from parsers.text import decode
from tests import oracle
from tests.helpers import columns_of, read_one

WA = registry.get("whatsapp")


def parse(text: str, name: str = "WhatsApp Chat with Test.txt"):
    (session,) = read_one(WA, decode(text.encode(), name))
    assert WA.count_turns(session.raw) == len(session.turns)
    return session


def test_a_day_above_12_decides_day_first_with_its_line():
    s = parse("01/02/2020, 10:00 - A: one\n05/02/2020, 10:00 - B: two\n31/03/2020, 10:00 - A: three\n")
    assert s.assumptions == ["date order D/M/Y: first field reaches 31 (line 3)"]
    assert [t.time.date().isoformat() for t in s.turns] == ["2020-02-01", "2020-02-05", "2020-03-31"]
    assert not s.warnings


def test_a_second_field_above_12_decides_month_first():
    s = parse("1/2/20, 10:00 - A: one\n1/25/20, 10:00 - B: two\n")
    assert s.assumptions == ["date order M/D/Y: second field reaches 25 (line 2)"]
    assert s.turns[0].time == datetime(2020, 1, 2, 10, 0)


def test_late_evidence_beyond_the_sample_still_decides_the_whole_file():
    # 64 KiB of dates that never exceed 12 and vary in the second field, then a 13 in the first:
    # the whole file decides (D/M/Y), and every time is rebuilt in that order.
    early = "".join(f"01/{d:02d}/2020, 10:{i % 60:02d} - A: message {i}\n" for d in range(1, 13) for i in range(200))
    late = "13/12/2020, 09:00 - B: the thirteenth\n"
    s = parse(early + late)
    assert s.assumptions[0].startswith("date order D/M/Y: first field reaches 13 (line 2401)")
    assert s.turns[0].time == datetime(2020, 1, 1, 10, 0)
    assert s.turns[200].time == datetime(2020, 2, 1, 10, 0)
    assert s.turns[-1].time == datetime(2020, 12, 13, 9, 0)


def test_without_a_field_above_12_the_more_varying_field_is_the_day():
    s = parse("[03/10/22 10:00:00] A: x\n[04/10/22 10:00:00] B: y\n[05/10/22 10:00:00] A: z\n")
    assert "the first field changes more often" in s.assumptions[0]
    assert s.turns[0].time == datetime(2022, 10, 3, 10, 0)


def test_no_evidence_is_a_warning():
    s = parse("03/10/22, 10:00 - A: x\n03/10/22, 10:05 - B: y\n")
    assert s.assumptions[0].startswith("date order D/M/Y: no field exceeds 12 and neither")
    assert s.warnings and s.warnings[0].startswith("date order uncertain")


def test_contradictory_dates_warn_and_the_majority_decides():
    order = date_order([("13/01/20", 0), ("14/01/20", 1), ("01/13/20", 2)])
    assert order.order == "dmy" and order.basis == "contradiction"


@pytest.mark.parametrize("stamp, expected", [
    ("12/24/19, 11:23 -", datetime(2019, 12, 24, 11, 23)),
    ("12/24/2019 11:30 p.m. -", datetime(2019, 12, 24, 23, 30)),
    ("12/24/2019 11:30 a. m. -", datetime(2019, 12, 24, 11, 30)),
    ("12/24/2019 12:05 a. m. -", datetime(2019, 12, 24, 0, 5)),
    ("[12/24/19, 12:30:15\u202fPM]", datetime(2019, 12, 24, 12, 30, 15)),
    ("[12/24/19 13:37:00 p.m.]", datetime(2019, 12, 24, 13, 37)),  # an hour above 12 ignores p.m.
    ("\u200e[12/24/19, 9:05:01\u202fAM]", datetime(2019, 12, 24, 9, 5, 1)),
    ("24.12.19, 09:05 -", datetime(2019, 12, 24, 9, 5)),
    ("2019-12-24 09:05 -", datetime(2019, 12, 24, 9, 5)),
])
def test_clocks_and_separators(stamp, expected):
    s = parse(f"{stamp} Ann: hi\n")
    assert s.turns[0].time == expected
    assert "\u200e" not in s.turns[0].time_raw and "\u202f" not in s.turns[0].time_raw


def test_unreadable_times_are_kept_raw_with_one_warning():
    s = parse("31/02/2020, 10:00 - A: x\n01/03/2020, 24:30 - B: y\n01/03/2020, 10:00 - A: z\n")
    assert [t.time for t in s.turns][:2] == [None, None]
    assert s.turns[0].time_raw == "31/02/2020, 10:00"
    assert s.warnings == ["2 turn times could not be read (not a calendar date or clock time): time left empty,"
                          " raw text kept"]


def test_hour_zero_with_a_meridiem_is_the_zero_to_eleven_clock():
    s = parse("15/02/24, 00:03 a. m. - A: x\n15/02/24, 0:20 p. m. - B: y\n")
    assert [t.time for t in s.turns] == [datetime(2024, 2, 15, 0, 3), datetime(2024, 2, 15, 12, 20)]
    assert s.warnings == []
    s = parse("2024/02/15 午前0:05 - 花子: x\n")
    assert s.turns[0].time == datetime(2024, 2, 15, 0, 5)


def test_a_profile_name_mark_is_not_part_of_the_name():
    s = parse("[15/09/2026, 10:04:00] ~\u202fMakan: frozen\nstill frozen\n[15/09/2026, 10:05:00] ~ Liza: ok\n"
              "[15/09/2026, 10:06:00] Liza: \u200eimage omitted\n[15/09/2026, 10:07:00] ~tilde: kept\n")
    got = [(t.speaker, t.kind, t.content, t.extra) for t in s.turns]
    assert got == [("Makan", "message", "frozen\nstill frozen", {"profileName": True}),
                   ("Liza", "message", "ok", {"profileName": True}), ("Liza", "media", "image omitted", None),
                   ("~tilde", "message", "kept", None)]


def test_system_notices_and_their_actors():
    s = parse(
        "12/24/14, 17:08 - Messages and calls are end-to-end encrypted. Tap to learn more.\n"
        "12/24/14, 17:08 - +12 345 578 created group \"Group: one\"\n"
        "12/24/14, 17:08 - You were added\n"
        "12/24/14, 17:09 - Ann changed the subject from \"a\" to \"b: c\"\n"
        "12/24/14, 17:10 - Pokemon Chat: Messages and calls are end-to-end encrypted. No one outside...\n"
        "12/24/14, 17:11 - Bob: I added Carol: she is in\n"
        "12/24/14, 17:12 - +12 345 578: Lorem ipsum.\n"
    )
    got = [(t.speaker, t.role, t.kind, t.extra) for t in s.turns]
    assert got == [
        ("System", "system", "system", None),
        ("System", "system", "system", {"actor": "+12 345 578"}),
        ("System", "system", "system", None),
        ("System", "system", "system", {"actor": "Ann"}),
        ("System", "system", "system", {"sourceLabel": "Pokemon Chat"}),
        ("Bob", "user", "message", None),
        ("+12 345 578", "user", "message", None),
    ]
    assert s.turns[3].content == "Ann changed the subject from \"a\" to \"b: c\""


def test_ios_marks_are_stripped_from_headers_only():
    s = parse(
        "\u200e[8/15/23, 9:12:33 AM] Dr. Feather: \u200eMessages and calls are end-to-end encrypted.\n"
        "\u200e[8/15/23, 9:12:48 AM] Dr. Feather: \u200eimage omitted\n"
        "[8/15/23, 9:13:00 AM] Jane: keep \u200e this mark\n"
        "\u200e[8/15/23, 9:14:00 AM] Group: \u200eJane added Bob\n"
    )
    assert [(t.speaker, t.kind) for t in s.turns] == [
        ("System", "system"), ("Dr. Feather", "media"), ("Jane", "message"), ("System", "system")]
    assert s.turns[0].extra == {"sourceLabel": "Dr. Feather"}
    assert s.turns[1].content == "image omitted"
    assert s.turns[2].content == "keep \u200e this mark"
    assert s.turns[3].extra == {"sourceLabel": "Group", "actor": "Jane"}


@pytest.mark.parametrize("text", ["<Media omitted>", "image omitted", "<attached: 0001-PHOTO.jpg>",
                                  "IMG-1.jpg (file attached)", "<Medien ausgeschlossen>"])
def test_media_placeholders(text):
    s = parse(f"1/2/20, 10:00 - Ann: {text}\n")
    assert (s.turns[0].speaker, s.turns[0].kind, s.turns[0].content) == ("Ann", "media", text)


def test_a_placeholder_with_more_lines_is_a_message():
    s = parse("1/2/20, 10:00 - Ann: image omitted\nbut I wrote more\n")
    assert s.turns[0].kind == "message"


def test_multiline_messages_and_line_spans():
    s = parse("intro line\n1/2/20, 10:00 - Ann: one\ntwo\n\nthree\n1/2/20, 10:01 - Bob: x\n")
    assert s.meta["preamble"] == "intro line"
    assert [(t.content, t.lines) for t in s.turns] == [("one\ntwo\n\nthree", (2, 5)), ("x", (6, 6))]


def test_session_id_and_title_from_the_file_name():
    s = parse("1/2/20, 10:00 - Ann: one\n", name="chat_family.txt")
    assert (s.session_id, s.id_source, s.title) == ("family", "file-name", None)
    assert chat_title("exports/WhatsApp Chat - Hiking Club/_chat.txt") == "Hiking Club"
    assert chat_title("WhatsApp Chat with Ann.txt") == "Ann"


def test_actor_of():
    assert actor_of("Åsa Öberg added Bob") == "Åsa Öberg"
    assert actor_of("You were added") is None
    assert actor_of("Messages and calls are end-to-end encrypted.") is None


def test_detect_scores():
    assert WA.detect("12/24/19, 11:23 - John Doe: hi\n", "x.txt") >= 0.9
    assert WA.detect("[2019-12-24 11:23:45] John Doe: hi\n", "x.txt") < 0.5  # a plain transcript
    assert WA.detect("hello\n", "x.txt") == 0.0


def test_a_large_export_parses_with_every_turn():
    lines = [f"{1 + i // 1440 % 28}/{1 + i // 40320 % 12}/21, {i // 60 % 24:02d}:{i % 60:02d} - P{i % 7}: m {i}"
             for i in range(50_000)]
    s = parse("\n".join(lines) + "\n")
    assert len(s.turns) == 50_000
    assert s.turns[-1].content == "m 49999"


def test_a_sample_guess_the_whole_file_overturns_is_redone():
    # The first 64 KiB suggest day first (the first field changes), the whole file says month
    # first (the second field changes far more often later): every time is rebuilt.
    early = "".join(f"{1 + i // 200:02d}/01/2020, 10:{i % 60:02d} - A: message number {i}\n" for i in range(2400))
    late = "".join(f"01/{1 + i % 12:02d}/2020, 11:00 - B: late {i}\n" for i in range(120))
    s = parse(early + late)
    assert s.assumptions[0].startswith("date order M/D/Y: no field exceeds 12; the second field changes more often")
    assert s.turns[0].time == datetime(2020, 1, 1, 10, 0)
    assert s.turns[1000].time == datetime(2020, 6, 1, 10, 40)
    assert s.turns[2401].time == datetime(2020, 1, 2, 11, 0)


LANGUAGES = ("en", "de", "es", "fr", "pt", "it", "nl", "ru", "tr", "ar", "ja")


def test_notices_and_placeholders_cover_the_languages():
    from parsers.grammars._whatsapp_data import NOTICES

    assert set(LANGUAGES) <= set(NOTICES)
    for lang in LANGUAGES:
        assert all(NOTICES[lang].get(k) for k in ("e2e", "media", "attached", "leading")), lang


@pytest.mark.parametrize("lang", LANGUAGES)
def test_localized_notices_placeholders_and_attachments(lang):
    from parsers.grammars._whatsapp_data import NOTICES

    words = NOTICES[lang]
    attached = words["attached"][0].replace("{file}", "IMG-20230101-WA0007.jpg")
    s = parse(
        f"01/02/2023, 10:00 - {words['e2e'][0]}.\n"
        f"01/02/2023, 10:01 - {words['leading'][0]}\n"
        f"01/02/2023, 10:02 - Club Ajedrez: {words['e2e'][0]}.\n"
        f"01/02/2023, 10:03 - Noor: {words['media'][0]}\n"
        f"01/02/2023, 10:04 - Noor: {attached}\n"
        f"13/02/2023, 10:05 - Kemal: ok\n"
    )
    got = [(t.speaker, t.kind) for t in s.turns]
    assert got == [("System", "system"), ("System", "system"), ("System", "system"), ("Noor", "media"),
                   ("Noor", "media"), ("Kemal", "message")]
    assert s.turns[4].extra == {"attachment": "IMG-20230101-WA0007.jpg"}


def test_bracketed_year_first_headers_win_over_the_generic_transcript():
    text = ("[2016/08/06 13:23] Rosa: are we still on for tonight?\n"
            "[2016/08/06 13:25] Malik: yes, 8 pm\n"
            "[2016/08/06 13:26] Malik added Jin\n"
            "[2016/08/06 13:30] Jin: thanks for the add\n")
    detected = registry.detect(text, "chat.txt", threshold=0.5)
    assert detected.grammar == "whatsapp" and detected.margin >= registry.MARGIN, detected
    s = parse(text, name="chat.txt")
    assert [(t.speaker, t.kind) for t in s.turns][2] == ("System", "system")
    assert s.turns[0].time == datetime(2016, 8, 6, 13, 23)


LONG_NAMES = (
    "María José Fernández-Castro (Universidad Politécnica de Madrid)",  # 63 characters, a real shape
    "Dr. Oluwaseun Adebayo-Williams (Lagos State University Teaching Hospital)",
    "Jean-Baptiste de la Rochefoucauld-Montmorency (Ministère de l'Europe et des Affaires étrangères)",
)
SYSTEM_LINES = (
    "Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read or "
    "listen to them. Tap to learn more.",
    'Ann created group "Planning: the long weekend away with everyone from the old office"',
    "Ann changed the subject from \"Old\" to \"Reunion planning for the class of 2004, all welcome: RSVP\"",
    "Ann added María José Fernández-Castro (Universidad Politécnica de Madrid)",
    "Disappearing messages were turned on. New messages will disappear from this chat 7 days after they're "
    "sent, except when kept. Tap to change.",
    "You changed this group's settings to allow only admins to send messages to this group",
    "Your security code with María José Fernández-Castro (Universidad Politécnica de Madrid) changed. Tap "
    "to learn more.",
)


@pytest.mark.parametrize("route", ["oracle", "table"])
def test_long_author_names_are_authors_and_system_lines_stay_system(route):
    assert len(LONG_NAMES[0]) == 63
    lines = [f"12/24/19, 11:{i:02d} - {line}" for i, line in enumerate(SYSTEM_LINES)]
    lines += [f"12/24/19, 12:{i:02d} - {name}: Hola, this is {i}: ok" for i, name in enumerate(LONG_NAMES)]
    text = "\n".join(lines) + "\n"
    if route == "table":
        (session,) = columns_of(WA, decode(text.encode(), "WhatsApp Chat with Test.txt"))
        frame = session.frame
        turns = list(zip(frame["speaker"], frame["role"], frame["content"], strict=True))
    else:
        (session,) = oracle.parse(WA, decode(text.encode(), "WhatsApp Chat with Test.txt"), Settings())
        turns = [(t.speaker, t.role, t.content) for t in session.turns]
    system, authored = turns[:len(SYSTEM_LINES)], turns[len(SYSTEM_LINES):]
    assert [(s, r) for s, r, _ in system] == [("System", "system")] * len(SYSTEM_LINES)
    assert [c for *_, c in system] == list(SYSTEM_LINES)
    assert authored == [(name, "user", f"Hola, this is {i}: ok") for i, name in enumerate(LONG_NAMES)]


def _wa(text, name="chat.txt"):
    from models.records import SourceText
    from models.settings import Settings
    from parsers import registry
    g = registry.get("whatsapp")
    source = SourceText(text, name, "0" * 64, len(text), "utf-8")
    return g, next(oracle.parse(g, source, Settings())), columns_of(g, source)[0]


def test_ambiguous_day_month_order_is_the_one_under_which_the_chat_runs_forward():
    text = "06/03/2017, 10:00 - Ann: a\n08/05/2017, 10:00 - Bob: b\n09/04/2017, 10:00 - Ann: c\n"
    _, s, _ = _wa(text)
    assert [t.time.month for t in s.turns] == [6, 8, 9]
    assert any("run forward" in a and "an assumption" in a for a in s.assumptions)


def test_a_text_line_that_starts_with_a_date_and_time_is_not_counted_as_a_message():
    text = "12/03/2019, 09:15 - Ann: meet on\n12/03/2019 10:00 works?\n12/03/2019, 09:16 - Bob: ok\n"
    g, s, _ = _wa(text)
    assert len(s.turns) == 2 and g.count_turns(s.raw) == 2


def test_media_placeholders_in_any_case_are_media_on_both_routes():
    text = "12/03/2019, 09:15 - Ann: <media omitted>\n12/03/2019, 09:16 - Bob: <MEDIA OMITTED>\n" \
           "12/03/2019, 09:17 - Ann: <Media omitted>\n"
    _, s, c = _wa(text)
    assert [t.kind for t in s.turns] == ["media"] * 3
    assert c.frame["kind"].to_list() == ["media"] * 3


def test_styles_mixed_line_by_line_and_the_finnish_klo_form_in_one_chat():
    text = ("[13/03/2019, 09:15:02] Ann: ios 24 h\n13/03/2019, 09:16 - Bob: android 24 h\n"
            "[13/03/2019, 9:17:10 AM] Ann: ios 12 h\n13/03/2019, 1:20 PM - Bob: android 12 h\n"
            "13.3.2019 klo 13.21 - Ann: klo\n[13.3.2019 klo 13.22.05] Bob: klo ios\n")
    g, s, c = _wa(text)
    assert [t.time.strftime("%H:%M") for t in s.turns] == ["09:15", "09:16", "09:17", "13:20", "13:21", "13:22"]
    assert g.count_turns(s.raw) == 6 and c.frame.height == 6
