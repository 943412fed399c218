"""Render a generated chat as Discord client copy-paste text.

A run of messages by one author on one day is one author line (``name — 08/11/2023 1:30 PM``, or
``name — 2023-08-11 13:30`` when no day exceeds 12, so the date order is never in doubt) and one
``[1:31 PM]`` continuation stamp per further message. Discord shows minutes, not seconds.
"""

from tests import strategies

STRATEGY = strategies.sessions()


def _clock(t, us):
    return f"{t.hour % 12 or 12}:{t:%M} {'AM' if t.hour < 12 else 'PM'}" if us else f"{t:%H:%M}"


def render(session):
    us = any(t.time.day > 12 for t in session.turns)
    lines = ["#general"]
    previous = None
    for t in session.turns:
        if previous is not None and previous.speaker == t.speaker and previous.time.date() == t.time.date():
            lines.append(f"[{_clock(t.time, us)}]")
        else:
            date = f"{t.time:%m/%d/%Y}" if us else f"{t.time:%Y-%m-%d}"
            lines.append(f"{t.speaker} — {date} {_clock(t.time, us)}")
        lines.append(t.content)
        previous = t
    return "paste.txt", ("\n".join(lines) + "\n").encode()


def expected(session):
    return [(t.speaker, t.content, t.time.replace(second=0)) for t in session.turns]
