"""Render a generated chat as JSON Lines in one of the record layouts, chosen by the chat: API-style
messages, Messenger-style, Telegram-style, author/message/time and Slack-style records."""

from datetime import UTC

import orjson


def _epoch(t):
    return int(t.time.replace(tzinfo=UTC).timestamp())


LAYOUTS = (
    lambda t: {"role": "user", "name": t.speaker, "content": t.content, "timestamp": t.time.isoformat() + "Z"},
    lambda t: {"sender_name": t.speaker, "timestamp_ms": _epoch(t) * 1000, "content": t.content},
    lambda t: {"id": 1, "type": "message", "date": t.time.isoformat(), "from": t.speaker, "text": t.content},
    lambda t: {"author": {"id": "7", "name": t.speaker}, "message": t.content, "time": t.time.isoformat() + "Z"},
    lambda t: {"type": "message", "user": "U0001", "user_name": t.speaker, "text": t.content,
               "ts": f"{_epoch(t)}.000100"},
)


def render(session):
    layout = LAYOUTS[sum(len(t.content) for t in session.turns) % len(LAYOUTS)]
    return "chat.jsonl", b"\n".join(orjson.dumps(layout(t)) for t in session.turns) + b"\n"
