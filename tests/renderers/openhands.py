"""Render a generated chat as an OpenHands trajectory: the first speaker is the user, the others the
agent's messages."""

import orjson


def _user(session, turn):
    return turn.speaker == session.turns[0].speaker


def render(session):
    events = [{"id": i, "timestamp": t.time.isoformat() + ".000000", "source": "user" if _user(session, t) else "agent",
               "message": t.content, "action": "message", "args": {"content": t.content, "image_urls": None}}
              for i, t in enumerate(session.turns)]
    return "trajectory.json", orjson.dumps(events, option=orjson.OPT_INDENT_2)


def expected(session):
    return [("User" if _user(session, t) else "OpenHands", t.content, t.time) for t in session.turns]
