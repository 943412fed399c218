"""Render a generated chat as a WhatsApp export, in a style the chat itself picks (deterministic).

A chat with a day above 12 is rendered as iOS, US order, 12 h clock with seconds, U+202F before
AM/PM and U+200E before some headers (``\u200e[1/13/24, 9:05:01\u202fPM] Name: text``), so the
second field decides the date order; any other chat in a year-first locale (sv-SE,
``2019-12-04 11:23:45 - Name: text``). Both keep exact seconds, so times compare exactly.
"""

from tests import strategies

STRATEGY = strategies.sessions()


def _ios(t):
    hour = t.time.hour % 12 or 12
    mark = "\u200e" if t.time.second % 2 else ""
    meridiem = "AM" if t.time.hour < 12 else "PM"
    return (f"{mark}[{t.time.month}/{t.time.day}/{t.time:%y}, {hour}:{t.time:%M:%S}\u202f{meridiem}]"
            f" {t.speaker}: {t.content}")


def render(session):
    turns = session.turns
    if any(t.time.day > 12 for t in turns):
        lines = [_ios(t) for t in turns]
    else:
        lines = [f"{t.time:%Y-%m-%d %H:%M:%S} - {t.speaker}: {t.content}" for t in turns]
    return "WhatsApp Chat with Friends.txt", ("\n".join(lines) + "\n").encode()
