"""Render a generated chat as JSON Lines, one API-style message per line."""

import orjson


def render(session):
    lines = [orjson.dumps({"role": "user", "name": t.speaker, "content": t.content,
                           "timestamp": t.time.isoformat() + "Z"}) for t in session.turns]
    return "chat.jsonl", b"\n".join(lines) + b"\n"
