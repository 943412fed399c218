"""Render a generated chat as an IRC log: supybot, weechat, irssi, bracketed clocks (irclog2html's input,
ZNC), xchat/hexchat, or ZNC's file per day, picked by the number of turns.

Nicks have no spaces and messages one line. The irssi log opens with ``--- Log opened`` and has a
``--- Day changed`` line wherever the date changes, so every clock time has its date; the xchat log
opens with ``**** BEGIN LOGGING AT`` (its stamps have no year); a chat of one day is also written as
ZNC writes it, clock times only in a file named by the day.
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


def _xchat(session):
    first = session.turns[0].time
    lines = [f"**** BEGIN LOGGING AT {first:%a %b} {first.day:2d} {first:%H:%M:%S %Y}", ""]
    return lines + [f"{t.time:%b %d %H:%M:%S} <{t.speaker}>\t{t.content}" for t in session.turns]


def render(session):
    style = len(session.turns) % 6
    if style == 4:
        return "#chan.log", ("\n".join(_xchat(session)) + "\n").encode()
    if style == 5 and len({t.time.date() for t in session.turns}) == 1:
        lines = [f"[{t.time:%H:%M:%S}] <{t.speaker}> {t.content}" for t in session.turns]
        return f"#chan_{session.turns[0].time:%Y%m%d}.log", ("\n".join(lines) + "\n").encode()
    if style == 0:
        lines = [f"{t.time:%Y-%m-%dT%H:%M:%S}+0000  <{t.speaker}> {t.content}" for t in session.turns]
    elif style == 1:
        lines = [f"{t.time:%Y-%m-%d %H:%M:%S}\t{t.speaker}\t{t.content}" for t in session.turns]
    elif style == 2:
        lines = _irssi(session)
    else:  # bracketed clocks, and a ZNC-style chat of more than one day: a log with its own date lines
        lines = _irssi(session, "[{:%H:%M:%S}]")
    return "#chan.log", ("\n".join(lines) + "\n").encode()
