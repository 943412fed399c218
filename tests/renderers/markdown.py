"""Render a generated chat as a Markdown transcript, in one of three dialects chosen by the chat:
plain ``## Name (time)`` headings under a title; an exporter's file (front matter, banner, emoji
``###`` headings with ``— time``, ``---`` rules between turns, a footer); bold labels with times."""


def _plain(session):
    parts = [f"## {t.speaker} ({t.time:%Y-%m-%d %H:%M:%S})\n{t.content}\n" for t in session.turns]
    return "# Generated chat\n\n" + "\n".join(parts)


def _exporter(session):
    head = "---\ntitle: Generated chat\nsource: https://example.org/c/1\n---\n\n> Exported with Test Exporter\n\n"
    parts = [f"### 🙂 {t.speaker} — {t.time:%Y-%m-%d %H:%M:%S}\n\n{t.content}\n" for t in session.turns]
    return head + "\n---\n\n".join(parts) + "\n---\n\n*Powered by Test Exporter*\n"


def _bold(session):
    return "\n".join(f"**{t.speaker} — {t.time:%Y-%m-%dT%H:%M:%S}:** {t.content}\n" for t in session.turns)


DIALECTS = (_plain, _exporter, _bold)


def render(session):
    dialect = DIALECTS[sum(len(t.content) for t in session.turns) % len(DIALECTS)]
    return "chat.md", dialect(session).encode()
