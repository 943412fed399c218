"""Render a generated chat in a made-up line format no grammar knows: ``<<YYYY/MM/DD HH:MM:SS>> name | text``."""

from tests import strategies

STRATEGY = strategies.sessions(names=("alice", "Bob", "Carol Smith", "Åsa"), min_turns=3, multiline=False)


def render(session):
    lines = [f"<<{t.time:%Y/%m/%d %H:%M:%S}>> {t.speaker} | {t.content}" for t in session.turns]
    return "chat.log", ("\n".join(lines) + "\n").encode()
