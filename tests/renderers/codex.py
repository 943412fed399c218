"""Render a generated chat as a Codex CLI rollout: the first speaker is the user, the others Codex."""

import orjson

SESSION = "0199b0aa-1234-7abc-8def-00112233aabb"


def _role(session, turn):
    return "user" if turn.speaker == session.turns[0].speaker else "assistant"


def render(session):
    first = session.turns[0].time.isoformat() + ".000Z"
    lines = [orjson.dumps({"timestamp": first, "type": "session_meta",
                           "payload": {"id": SESSION, "timestamp": first, "cwd": "/work/app"}})]
    for t in session.turns:
        role = _role(session, t)
        block = {"type": "input_text" if role == "user" else "output_text", "text": t.content}
        lines.append(orjson.dumps({"timestamp": t.time.isoformat() + ".000Z", "type": "response_item",
                                   "payload": {"type": "message", "role": role, "content": [block]}}))
    return f"rollout-2025-10-01T00-00-00-{SESSION}.jsonl", b"\n".join(lines) + b"\n"


def expected(session):
    return [("User" if _role(session, t) == "user" else "Codex", t.content, t.time) for t in session.turns]
