"""Render a generated chat as a plain-text transcript, in one of two dialects chosen by the chat:
bracketed ``[YYYY-MM-DD HH:MM:SS] Name: text`` lines, or a title line and front matter followed by
bare ISO ``YYYY-MM-DDTHH:MM:SSZ Name: text`` lines."""


def _bracketed(session):
    return "\n".join(f"[{t.time:%Y-%m-%d %H:%M:%S}] {t.speaker}: {t.content}" for t in session.turns) + "\n"


def _iso(session):
    lines = [f"{t.time:%Y-%m-%dT%H:%M:%S}Z {t.speaker}: {t.content}" for t in session.turns]
    return "---\ntitle: Generated chat\n---\nCall notes, generated\n\n" + "\n".join(lines) + "\n"


DIALECTS = (_bracketed, _iso)


def render(session):
    dialect = DIALECTS[sum(len(t.content) for t in session.turns) % len(DIALECTS)]
    return "chat.txt", dialect(session).encode()
