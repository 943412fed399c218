"""Render a generated chat as a plain-text transcript with ISO-like bracketed timestamps."""


def render(session):
    lines = [f"[{t.time:%Y-%m-%d %H:%M:%S}] {t.speaker}: {t.content}" for t in session.turns]
    return "chat.txt", ("\n".join(lines) + "\n").encode()
