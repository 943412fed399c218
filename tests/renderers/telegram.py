"""Render a generated chat as a Telegram Desktop single-chat result.json, text split into entity parts."""

from datetime import UTC

import orjson


def _parts(text: str):
    """Plain string, then a bold entity, then plain again: Telegram's own partition of a message."""
    if len(text) < 3:
        return text
    a, b = len(text) // 3, 2 * len(text) // 3
    return [text[:a], {"type": "bold", "text": text[a:b]}, text[b:]]


def render(session):
    ids = {name: f"user{i + 1}" for i, name in enumerate(sorted({t.speaker for t in session.turns}))}
    messages = [{"id": i, "type": "message", "date": t.time.isoformat(),
                 "date_unixtime": str(int(t.time.replace(tzinfo=UTC).timestamp())), "from": t.speaker,
                 "from_id": ids[t.speaker], "text": _parts(t.content)}
                for i, t in enumerate(session.turns)]
    return "result.json", orjson.dumps({"name": "Generated", "type": "personal_chat", "id": 7, "messages": messages},
                                       option=orjson.OPT_INDENT_2)
