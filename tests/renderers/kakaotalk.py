"""Render a generated chat as a KakaoTalk text export: PC Korean, PC English, Android Korean, Android
English or iOS, picked by the number of turns; title and save lines, a date line per day."""

_KO_WEEKDAYS = "월화수목금토일"


def _ko_clock(t):
    return f"{'오후' if t.hour >= 12 else '오전'} {t.hour % 12 or 12}:{t.minute:02d}"


def _en_clock(t):
    return f"{t.hour % 12 or 12}:{t.minute:02d} {'PM' if t.hour >= 12 else 'AM'}"


def _ko_day(t):
    return f"{t.year}년 {t.month}월 {t.day}일"


STYLES = {
    # (date line, message line)
    "pc-ko": (lambda t: f"--------------- {_ko_day(t)} {_KO_WEEKDAYS[t.weekday()]}요일 ---------------",
              lambda t, name: f"[{name}] [{_ko_clock(t)}] "),
    "pc-en": (lambda t: f"--------------- {t:%A}, {t:%B} {t.day}, {t.year} ---------------",
              lambda t, name: f"[{name}] [{_en_clock(t)}] "),
    "android-ko": (lambda t: f"{_ko_day(t)} {_KO_WEEKDAYS[t.weekday()]}요일",
                   lambda t, name: f"{_ko_day(t)} {_ko_clock(t)}, {name} : "),
    "android-en": (lambda t: f"{t:%A}, {t:%B} {t.day}, {t.year}",
                   lambda t, name: f"{t:%b} {t.day}, {t.year}, {_en_clock(t)}, {name} : "),
    "ios-ko": (lambda t: f"{t.year}. {t.month}. {t.day}. {_KO_WEEKDAYS[t.weekday()]}요일",
               lambda t, name: f"{t.year}. {t.month}. {t.day}. {_ko_clock(t)}, {name} : "),
}


def render(session):
    date_line, message = list(STYLES.values())[len(session.turns) % len(STYLES)]
    out = ["Generated 님과 카카오톡 대화", "저장한 날짜 : 2031-01-01 00:00:00", ""]
    day = None
    for t in session.turns:
        if t.time.date() != day:
            day = t.time.date()
            out.append(date_line(t.time))
        out.append(message(t.time, t.speaker) + t.content)
    return "KakaoTalk_Generated.txt", ("\n".join(out) + "\n").encode()


def expected(session):
    """KakaoTalk keeps minutes, not seconds."""
    return [(t.speaker, t.content, t.time.replace(second=0)) for t in session.turns]
