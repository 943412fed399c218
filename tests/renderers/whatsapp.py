"""Render a generated chat as a WhatsApp iOS export in a year-first locale (sv-SE): exact seconds."""


def render(session):
    lines = [f"[{t.time:%Y-%m-%d %H:%M:%S}] {t.speaker}: {t.content}" for t in session.turns]
    return "WhatsApp Chat with Friends.txt", ("\n".join(lines) + "\n").encode()
