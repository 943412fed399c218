"""Render a generated chat as a Telegram Desktop single-chat result.json."""

from datetime import UTC

import orjson


def render(session):
    messages = [{"id": i, "type": "message", "date": t.time.isoformat(),
                 "date_unixtime": str(int(t.time.replace(tzinfo=UTC).timestamp())), "from": t.speaker,
                 "from_id": f"user{hash(t.speaker) % 1000}", "text": t.content}
                for i, t in enumerate(session.turns)]
    return "result.json", orjson.dumps({"name": "Generated", "type": "personal_chat", "id": 7, "messages": messages})
