"""Render a generated chat as a Cline task history: the first speaker is the user (the first
message as a task), the others Cline's replies with modelInfo."""

import orjson


def _user(session, turn):
    return turn.speaker == session.turns[0].speaker


def render(session):
    messages = []
    for t in session.turns:
        if _user(session, t):
            messages.append({"role": "user", "content": [{"type": "text", "text": t.content}]})
        else:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": t.content}],
                             "modelInfo": {"modelId": "claude-sonnet-4-5-20250929", "providerId": "anthropic"}})
    return "tasks/1759241528190/api_conversation_history.json", orjson.dumps(messages)


def expected(session):
    return [("User" if _user(session, t) else "Cline", t.content, None) for t in session.turns]
