"""Render a generated chat as DiscordChatExporter's plain-text export (24 h ISO-like dates)."""

from tests import strategies

RULE = "=" * 62
STRATEGY = strategies.sessions()


def render(session):
    out = [RULE, "Guild: Generated", "Channel: Text / general", RULE, ""]
    for t in session.turns:
        out += [f"[{t.time:%Y-%m-%d %H:%M:%S}] {t.speaker}", t.content, "", ""]
    out += [RULE, f"Exported {len(session.turns):,} message(s)", RULE]
    return "Generated - general [123456789].txt", ("\n".join(out) + "\n").encode()
