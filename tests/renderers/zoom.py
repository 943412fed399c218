"""Render a generated chat as a Zoom meeting chat: two-line (newer clients) or one-line (older), by the
number of turns, saved in a folder named by the meeting's start as the Zoom client names it.

Zoom writes clock times only: a turn's date survives as far as the folder's date and the midnight
rule take it (a gap of a day or more cannot be seen in the file), so ``expected`` applies that rule.
"""

from datetime import datetime, timedelta

from tests import strategies

STRATEGY = strategies.sessions()


def render(session):
    start = session.turns[0].time
    lines = []
    for t in session.turns:
        if len(session.turns) % 2:
            lines.append(f"{t.time:%H:%M:%S} From {t.speaker} to Everyone:")
            lines.extend("\t" + ln for ln in t.content.split("\n"))
        else:
            lines.append(f"{t.time:%H:%M:%S}\t From  {t.speaker} : {t.content}")
    return f"{start:%Y-%m-%d %H.%M.%S} Sync 8123/meeting_saved_chat.txt", ("\n".join(lines) + "\n").encode()


def expected(session):
    out, previous = [], session.turns[0].time
    for t in session.turns:
        when = datetime.combine(previous.date(), t.time.time())
        if when < previous - timedelta(hours=1):
            when += timedelta(days=1)
        previous = when
        out.append((t.speaker, t.content, when))
    return out
