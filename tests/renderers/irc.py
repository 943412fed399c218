"""Render a generated chat as an IRC log: supybot, weechat, irssi or bracketed clocks (irclog2html's input,
ZNC), picked by the number of turns.

Nicks have no spaces and messages one line. The irssi log opens with ``--- Log opened`` and has a
``--- Day changed`` line wherever the date changes, so every clock time has its date.
"""

from tests import strategies

STRATEGY = strategies.sessions(names=("alice", "bob_", "Ca[r]ol", "dave-2", "åsa"), multiline=False)


def _irssi(session, stamp="{:%H:%M:%S}"):
    first = session.turns[0].time
    lines = [f"--- Log opened {first:%a %b %d %H:%M:%S %Y}"]
    day = first.date()
    for t in session.turns:
        if t.time.date() != day:
            day = t.time.date()
            lines.append(f"--- Day changed {t.time:%a %b %d %Y}")
        lines.append(f"{stamp.format(t.time)} <@{t.speaker}> {t.content}")
    return lines


def render(session):
    style = len(session.turns) % 4
    if style == 0:
        lines = [f"{t.time:%Y-%m-%dT%H:%M:%S}+0000  <{t.speaker}> {t.content}" for t in session.turns]
    elif style == 1:
        lines = [f"{t.time:%Y-%m-%d %H:%M:%S}\t{t.speaker}\t{t.content}" for t in session.turns]
    elif style == 2:
        lines = _irssi(session)
    else:
        lines = _irssi(session, "[{:%H:%M:%S}]")
    return "#chan.log", ("\n".join(lines) + "\n").encode()
