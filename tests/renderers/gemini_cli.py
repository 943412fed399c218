"""Render a generated chat as a Gemini CLI session file: the first speaker is the user, the others Gemini."""

import orjson


def _user(session, turn):
    return turn.speaker == session.turns[0].speaker


def render(session):
    messages = [{"id": f"m{i}", "timestamp": t.time.isoformat() + ".000Z", "type": "user" if _user(session, t)
                 else "gemini", "content": t.content, **({} if _user(session, t) else {"model": "gemini-2.5-pro"})}
                for i, t in enumerate(session.turns)]
    doc = {"sessionId": "0b1c2d3e-4f50-4a61-b7c8-d9e0f1a2b3c4", "projectHash": "ab" * 32,
           "startTime": messages[0]["timestamp"], "lastUpdated": messages[-1]["timestamp"], "messages": messages}
    return "session-2025-11-03T10-15-0b1c2d3e.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2)


def expected(session):
    return [("User" if _user(session, t) else "Gemini", t.content, t.time) for t in session.turns]
