"""Render a generated chat as OpenAI chat messages in one JSON document, in the form chosen by the chat:
a bare list, or ``{"messages": [...]}`` with metadata beside it; content as a string or a list of text
parts, each speaker as the message's ``name``."""

import orjson


def _message(t, parts: bool):
    content = [{"type": "text", "text": t.content}] if parts else t.content
    return {"role": "user", "name": t.speaker, "content": content, "timestamp": t.time.isoformat() + "Z"}


def render(session):
    form = sum(len(t.content) for t in session.turns) % 3
    messages = [_message(t, form == 2) for t in session.turns]
    data = messages if form == 0 else {"model": "gpt-4o", "id": "chatcmpl-1", "messages": messages}
    return "chat.json", orjson.dumps(data, option=orjson.OPT_INDENT_2)
