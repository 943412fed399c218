"""Render a generated chat as a Claude Code session log: the first speaker is the user, the others
the assistant (one text block per record, as Claude Code streams them)."""

import orjson

SESSION = "5d0c9a7e-2f41-4b3a-9e6d-1c8b7a6f5e40"


def _role(session, turn):
    return "user" if turn.speaker == session.turns[0].speaker else "assistant"


def render(session):
    lines, parent = [], None
    for i, t in enumerate(session.turns):
        uid = f"00000000-0000-4000-8000-{i:012d}"
        role = _role(session, t)
        message = {"role": role, "content": t.content} if role == "user" else {
            "id": f"msg_{i}", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": t.content}]}
        lines.append(orjson.dumps({"parentUuid": parent, "isSidechain": False, "type": role, "uuid": uid,
                                   "sessionId": SESSION, "timestamp": t.time.isoformat() + ".000Z",
                                   "cwd": "/work/app", "version": "2.0.14", "message": message}))
        parent = uid
    return f"{SESSION}.jsonl", b"\n".join(lines) + b"\n"


def expected(session):
    return [("User" if _role(session, t) == "user" else "Claude", t.content, t.time) for t in session.turns]
