"""Render a generated chat as sigtop's text export: a Conversation line, then per message From, Type and
Sent fields, a blank line and the text; the first speaker is the owner (``You``, outgoing)."""


def render(session):
    me = session.turns[0].speaker
    out = ["Conversation: Generated", ""]
    for t in session.turns:
        outgoing = t.speaker == me
        out += [f"From: {'You' if outgoing else t.speaker}", f"Type: {'outgoing' if outgoing else 'incoming'}",
                f"Sent: {t.time:%a, {t.time.day} %b %Y %H:%M:%S} +0000", "", *t.content.split("\n"), ""]
    return "Generated.txt", ("\n".join(out) + "\n").encode()


def expected(session):
    me = session.turns[0].speaker
    return [("You" if t.speaker == me else t.speaker, t.content, t.time) for t in session.turns]
