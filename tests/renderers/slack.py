"""Render a generated chat as one Slack export day file (user ids stand for the names)."""

from datetime import UTC

import orjson


def render(session):
    messages = [{"type": "message", "user": t.speaker, "text": t.content,
                 "ts": f"{int(t.time.replace(tzinfo=UTC).timestamp())}.{i:06d}"} for i, t in enumerate(session.turns)]
    return "general/2024-01-01.json", orjson.dumps(messages, option=orjson.OPT_INDENT_2)
