"""What KakaoTalk writes, as data: the stamps, date lines and title lines of its text exports (PC and
mobile, Korean and English), its join/leave notices and its attachment placeholders. ``kakaotalk.py``
compiles the patterns; ``csv_chat.py``'s KakaoTalk layout (the Mac ``Date,User,Message`` CSV) uses
the placeholders. Nothing here is code but the joining of the placeholders into one pattern.

Sources: the shapes public KakaoTalk export readers document and test (PC ``[name] [오후 2:30] text``
under ``--------------- 2024년 12월 9일 월요일 ---------------`` rules, English ``[John] [2:30 PM]`` under
``Monday, December 9, 2024``; Android ``2024년 3월 1일 오후 12:34, name : text``, English
``Mar 1, 2024, 12:34 PM, name : text``; iOS ``2024. 3. 1. 오후 12:34, name : text``, with notices
``2024. 3. 1. 12:34: name님이 나갔습니다.``; the Mac CSV ``Date,User,Message``).
"""

from __future__ import annotations

MONTHS: dict[str, int] = {
    name: number
    for number, names in enumerate((("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
                                    ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
                                    ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
                                    ("december", "dec")), start=1)
    for name in names
}
"""English month names, full and short, lower case."""

MERIDIEM: dict[str, str] = {"오전": "am", "오후": "pm"}
"""Korean meridiem words, written before the clock."""

CLOCK = (r"(?:(?P<mer>오전|오후) ?)?(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?"
         r"(?:[ \u202f]?(?P<ampm>[AaPp]\.?[Mm]\.?))?")
"""A clock: ``오후 2:30``, ``2:30 PM``, ``14:30``."""

DAY_KO = r"(?P<y>\d{4})년 ?(?P<m>\d{1,2})월 ?(?P<d>\d{1,2})일"
DAY_DOTS = r"(?P<y>\d{4})\. ?(?P<m>\d{1,2})\. ?(?P<d>\d{1,2})\."
DAY_EN = r"(?P<mon>[A-Z][a-z]{2,8})\.? (?P<d>\d{1,2}), (?P<y>\d{4})"
DAY = f"(?:{DAY_KO}|{DAY_DOTS}|{DAY_EN})"
"""A calendar day as the mobile stamps and the date lines write it (the year is always written)."""

WEEKDAY_KO = r"[월화수목금토일]요일"
WEEKDAY_EN = r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day"
DATE_LINE = (rf"(?:-{{3,}} )?(?:{DAY_KO} {WEEKDAY_KO}|{DAY_DOTS} {WEEKDAY_KO}|{WEEKDAY_EN}, {DAY_EN})"
             r"(?: -{3,})?[ \t]*$")
"""A day's line: between dash rules in the PC export, alone in the mobile ones; the weekday is required,
so a message that is only a date is no date line."""

PC_MESSAGE = rf"\[(?P<name>[^\]\n]+)\] \[(?P<clock>{CLOCK})\] ?"
"""The PC export's message line: ``[name] [clock] text``; its day is the date line's above it."""

MOBILE_STAMP = rf"(?P<day>{DAY})(?:,| at)? (?P<clock>{CLOCK})"
MOBILE_MESSAGE = rf"{MOBILE_STAMP}(?:, (?P<name>[^\n]+?) : |(?P<notice>[,:] ))"
"""The mobile exports' message line, ``<day> <clock>, name : text``, or a notice, ``<day> <clock>, text``
(Android) / ``<day> <clock>: text`` (iOS), which names nobody."""

NOTICE_ENDS: tuple[str, ...] = ("님이 들어왔습니다.", "님이 나갔습니다.", "님을 초대했습니다.", "님을 초대하였습니다.",
                                "님을 내보냈습니다.", "메시지를 가렸습니다.")
"""How the PC export's join/leave notices end: such a line, alone and unstamped, is a System turn."""

TITLES: tuple[str, ...] = (
    r"(?P<title>.+?) 님과 카카오톡 대화",
    r"KakaoTalk Chats with (?P<title>.+)",
    r"(?P<title>.+?) with KakaoTalk Chats",
    r"Talk with (?P<title>.+)",
    r"Chat with (?P<title>.+)",
)
"""The export's first line, naming the chat (a person or a group)."""

SAVED = r"(?:저장한 날짜|Date Saved|Saved Date)[ \t]*:[ \t]*(?P<saved>[^\n]+)"
"""The export's save-time line."""

MEDIA: frozenset[str] = frozenset({
    "사진", "동영상", "이모티콘", "음성메시지", "음성 메시지", "보이스톡", "페이스톡", "지도", "연락처",
    "Photo", "Photos", "Video", "Emoticons", "Emoticon", "Voice Message", "Voice message", "Map", "Contact",
})
"""Placeholders KakaoTalk writes in place of an attachment (a turn of kind ``media``)."""

MEDIA_DETAIL = r"(?:파일|File): [^\n]+|사진 \d+장|동영상 \d+개|\d+ Photos|Photos? \d+"
"""Placeholders with a detail: ``파일: report.pdf``, ``사진 3장`` (three photos)."""

MEDIA_PATTERN = "|".join([*(m.replace(" ", r"\ ") for m in sorted(MEDIA)), MEDIA_DETAIL])
"""A whole message that is a placeholder, as one pattern (matched in full)."""
