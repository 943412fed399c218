"""Render a generated chat as a DiscordChatExporter JSON export (nickname beats name; some have none)."""

import orjson


def render(session):
    messages = []
    for i, t in enumerate(session.turns):
        nick = t.speaker if i % 3 else None  # without a nickname, the name is the display name
        name = t.speaker if nick is None else f"user_{len(t.speaker)}"
        messages.append({"id": str(1000 + i), "type": "Reply" if i % 4 == 3 else "Default",
                         "timestamp": t.time.isoformat() + ".123+00:00", "timestampEdited": None,
                         "callEndedTimestamp": None, "isPinned": False, "content": t.content,
                         "author": {"id": str(len(t.speaker)), "name": name, "discriminator": "0000",
                                    "nickname": nick, "isBot": False},
                         "attachments": [], "embeds": [], "stickers": [], "reactions": [], "mentions": []})
    doc = {"guild": {"id": "0", "name": "Direct Messages"}, "channel": {"id": "42", "type": "DirectTextChat",
                                                                       "name": "dm"},
           "dateRange": {"after": None, "before": None}, "messages": messages, "messageCount": len(messages)}
    return "dm.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2)
