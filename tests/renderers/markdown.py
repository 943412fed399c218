"""Render a generated chat as a Markdown transcript with one heading per turn."""


def render(session):
    parts = [f"## {t.speaker} ({t.time:%Y-%m-%d %H:%M:%S})\n{t.content}\n" for t in session.turns]
    return "chat.md", ("# Generated chat\n\n" + "\n".join(parts)).encode()
