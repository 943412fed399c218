"""KakaoTalk text exports: the PC and mobile forms in Korean and English, their clocks, date lines,
notices and placeholders, read as one complete session each (before this grammar they were no
grammar's: quarantined, or the inferred grammar's partial reading)."""

from __future__ import annotations

from datetime import datetime

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.grammars.kakaotalk import KakaoTalk
from parsers.text import decode
from validators.accounting import LineIndex, account

FORMS = {
    "pc-ko": "홍길동 님과 카카오톡 대화\n저장한 날짜 : 2024-03-01 12:40:00\n\n"
             "--------------- 2024년 3월 1일 금요일 ---------------\n"
             "[홍길동] [오후 12:34] 안녕하세요\n[김철수] [오후 12:35] 반가워요\n두 줄\n",
    "pc-en": "KakaoTalk Chats with Ann\nDate Saved : 2024-03-01 12:40:00\n\n"
             "--------------- Friday, March 1, 2024 ---------------\n"
             "[홍길동] [12:34 PM] 안녕하세요\n[김철수] [12:35 PM] 반가워요\n두 줄\n",
    "android-ko": "2024년 3월 1일 금요일\n2024년 3월 1일 오후 12:34, 홍길동 : 안녕하세요\n"
                  "2024년 3월 1일 오후 12:35, 김철수 : 반가워요\n두 줄\n",
    "android-en": "Friday, March 1, 2024\nMar 1, 2024, 12:34 PM, 홍길동 : 안녕하세요\n"
                  "March 1, 2024 at 12:35 PM, 김철수 : 반가워요\n두 줄\n",
    "ios-ko": "2024. 3. 1. 금요일\n2024. 3. 1. 오후 12:34, 홍길동 : 안녕하세요\n"
              "2024. 3. 1. 12:35, 김철수 : 반가워요\n두 줄\n",
}


def _parse(text: str, name: str = "KakaoTalkChats.txt"):
    (session,) = KakaoTalk().parse(decode(text.encode(), name), Settings())
    return session


@pytest.mark.parametrize("form", FORMS)
def test_every_form_is_kakaotalk_and_read_completely(form):
    text = FORMS[form]
    detection = registry.detect(text, "KakaoTalkChats.txt", threshold=Settings().detect_threshold)
    assert detection.grammar == "kakaotalk" and detection.margin >= registry.MARGIN, detection.scores
    session = _parse(text)
    assert [(t.speaker, t.content, t.time) for t in session.turns] == [
        ("홍길동", "안녕하세요", datetime(2024, 3, 1, 12, 34)),
        ("김철수", "반가워요\n두 줄", datetime(2024, 3, 1, 12, 35))]
    assert KakaoTalk().count_turns(session.raw) == 2
    assert account(session, LineIndex(decode(text.encode(), "x.txt").text)).clean


@pytest.mark.parametrize("form", FORMS)
def test_the_product_writes_a_complete_document_for_every_form(form):
    got = process_bytes(FORMS[form].encode(), "KakaoTalkChats.txt", RunContext.from_settings(Settings()))
    (doc,) = [orjson.loads(s.encoded) for s in got.sessions]
    history = doc["artifacts"]["Chatthistorik"]
    assert history.get("coverage") != "partial", history.get("coverageReason")
    assert doc["artifacts"]["ByggLogg"]["grammar"]["id"] == "kakaotalk"
    assert [i["speakerName"] for i in history["interactions"]] == ["홍길동", "김철수"]


@given(st.integers(0, 23), st.integers(0, 59), st.sampled_from(["pc-ko", "pc-en", "mobile-ko", "mobile-en"]))
def test_twelve_hour_clocks_read_as_the_same_time(hour, minute, style):
    twelve, pm = hour % 12 or 12, hour >= 12
    ko, en = f"{'오후' if pm else '오전'} {twelve}:{minute:02d}", f"{twelve}:{minute:02d} {'PM' if pm else 'AM'}"
    line = {"pc-ko": f"--------------- 2024년 3월 1일 금요일 ---------------\n[A] [{ko}] hi",
            "pc-en": f"--------------- Friday, March 1, 2024 ---------------\n[A] [{en}] hi",
            "mobile-ko": f"2024년 3월 1일 {ko}, A : hi", "mobile-en": f"Mar 1, 2024, {en}, A : hi"}[style]
    (turn,) = _parse(line + "\n").turns
    assert turn.time == datetime(2024, 3, 1, hour, minute)


def test_notices_are_system_turns_and_name_nobody():
    session = _parse("--------------- 2024년 3월 1일 금요일 ---------------\n[A] [오후 1:00] hi\n"
                     "B님이 들어왔습니다.\n2024. 3. 1. 13:05: B님이 나갔습니다.\n"
                     "2024년 3월 1일 오후 1:06, C님이 들어왔습니다.\n")
    assert [(t.speaker, t.role, t.kind, t.content) for t in session.turns[1:]] == [
        ("System", "system", "notice", "B님이 들어왔습니다."), ("System", "system", "notice", "B님이 나갔습니다."),
        ("System", "system", "notice", "C님이 들어왔습니다.")]
    assert session.turns[1].time is None  # the PC notice has no clock of its own
    assert session.turns[2].time == datetime(2024, 3, 1, 13, 5)
    assert KakaoTalk().count_turns(session.raw) == 4


def test_a_message_before_any_date_line_has_no_time_and_a_warning():
    session = _parse("[A] [오후 1:00] hi\n--------------- 2024년 3월 1일 금요일 ---------------\n[B] [오후 1:01] yo\n")
    assert [t.time for t in session.turns] == [None, datetime(2024, 3, 1, 13, 1)]
    assert session.turns[0].time_raw == "오후 1:00"
    assert session.warnings and session.warnings[0].startswith("1 turn time could not be read")


def test_placeholders_are_media_and_text_is_not():
    session = _parse("2024년 3월 1일 오후 1:00, A : 사진\n2024년 3월 1일 오후 1:01, A : 파일: a.pdf\n"
                     "2024년 3월 1일 오후 1:02, A : 사진 3장\n2024년 3월 1일 오후 1:03, A : 사진 잘 나왔네\n"
                     "2024년 3월 1일 오후 1:04, A : 이모티콘\n")
    assert [t.kind for t in session.turns] == ["media", "media", "media", "message", "media"]


def test_title_and_save_time_are_the_session_header():
    session = _parse(FORMS["pc-ko"])
    assert session.title == "홍길동" and session.meta["savedOn"] == "2024-03-01 12:40:00"
    assert session.regions[0].kind == "session_header" and session.regions[0].lines == (1, 3)


def test_a_name_is_read_up_to_the_first_separator():
    (turn,) = _parse("May 20, 2024, 12:30 PM, Jisoo : lunch at noon : the usual place\n").turns
    assert (turn.speaker, turn.content) == ("Jisoo", "lunch at noon : the usual place")
