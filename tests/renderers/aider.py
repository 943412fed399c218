"""Render a generated chat as an Aider chat history: the first speaker types ``#### `` lines, the
others are the model's replies, each followed by aider's token line (replies have no times)."""

TOKENS = "Tokens: 1.2k sent, 80 received."


def _user(session, turn):
    return turn.speaker == session.turns[0].speaker


def render(session):
    out = ["", "# aider chat started at 2025-03-11 09:42:17", "", "> Aider v0.76.2  ", ""]
    for t in session.turns:
        if _user(session, t):
            out.extend(f"#### {line}  " for line in t.content.split("\n"))
        else:
            out.extend([*t.content.split("\n"), "", f"> {TOKENS}  "])
        out.append("")
    return ".aider.chat.history.md", "\n".join(out).encode()


def expected(session):
    want = [("aider", "Aider v0.76.2", None)]
    for t in session.turns:
        if _user(session, t):
            want.append(("User", t.content, None))
        else:
            want.extend([("Assistant", t.content, None), ("aider", TOKENS, None)])
    return want
