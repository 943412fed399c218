"""Render a generated chat as a supybot IRC log (nicks have no spaces; one line per message)."""

from tests import strategies

STRATEGY = strategies.sessions(names=("alice", "bob_", "Ca[r]ol", "dave-2", "åsa"), multiline=False)


def render(session):
    lines = [f"{t.time:%Y-%m-%dT%H:%M:%S}+0000  <{t.speaker}> {t.content}" for t in session.turns]
    return "#chan.log", ("\n".join(lines) + "\n").encode()
