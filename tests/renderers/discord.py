"""Render a generated chat as a DiscordChatExporter JSON export."""

import orjson


def render(session):
    messages = [{"id": str(i), "type": "Default", "timestamp": t.time.isoformat() + "+00:00", "timestampEdited": None,
                 "content": t.content, "author": {"id": t.speaker, "name": t.speaker, "nickname": t.speaker,
                                                  "isBot": False}, "attachments": [], "embeds": []}
                for i, t in enumerate(session.turns)]
    doc = {"guild": {"id": "0", "name": "Direct Messages"}, "channel": {"id": "42", "name": "dm"},
           "messages": messages, "messageCount": len(messages)}
    return "dm.json", orjson.dumps(doc)
