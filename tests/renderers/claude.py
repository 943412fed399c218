"""Render a generated chat as a Claude.ai conversations.json (speakers become free-form senders)."""

import orjson


def render(session):
    messages = [{"uuid": f"m{i}", "sender": t.speaker, "text": t.content,
                 "content": [{"type": "text", "text": t.content}], "created_at": t.time.isoformat() + "Z"}
                for i, t in enumerate(session.turns)]
    conv = [{"uuid": "c1", "name": "generated", "created_at": None, "chat_messages": messages}]
    return "conversations.json", orjson.dumps(conv)
