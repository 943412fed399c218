"""Render a generated chat as a VS Code Copilot Chat export: the first speaker is the user (one
request each), the others GitHub Copilot (markdown parts of the request's response, an undo stop
between two replies so they stay two interactions). Replies carry no time in this format."""

import calendar

import orjson


def _user(session, turn):
    return turn.speaker == session.turns[0].speaker


def render(session):
    requests = []
    for i, t in enumerate(session.turns):
        if _user(session, t):
            requests.append({"requestId": f"request_{i:08d}", "message": {"text": t.content, "parts": []},
                             "variableData": {"variables": []}, "response": [],
                             "timestamp": calendar.timegm(t.time.timetuple()) * 1000, "modelId": "copilot/gpt-4.1"})
            continue
        parts = requests[-1]["response"]
        if parts:
            parts.append({"kind": "undoStop", "id": f"stop-{i}"})
        parts.append({"value": t.content, "supportThemeIcons": False})
    doc = {"responderUsername": "GitHub Copilot", "initialLocation": "panel", "requests": requests}
    return "chat.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2)


def expected(session):
    return [("User", t.content, t.time) if _user(session, t) else ("GitHub Copilot", t.content, None)
            for t in session.turns]
