"""Render a generated chat as signal-export's chat.md: ``[YYYY-MM-DD HH:MM:SS] sender: text`` with the
exporter's two trailing spaces and a blank line after every message; the first speaker is ``Me``."""


def render(session):
    me = session.turns[0].speaker
    out = []
    for t in session.turns:
        speaker = "Me" if t.speaker == me else t.speaker
        out.append(f"[{t.time:%Y-%m-%d %H:%M:%S}] {speaker}: {t.content}  \n")
    return "Generated/chat.md", "\n".join(out).encode() + b"\n"


def expected(session):
    me = session.turns[0].speaker
    return [("Me" if t.speaker == me else t.speaker, t.content, t.time) for t in session.turns]
