"""Render a generated chat as one Slack export day file; names come from each message's user_profile."""

from datetime import UTC

import orjson


def render(session):
    ids = {name: f"U{i + 1:04d}" for i, name in enumerate(sorted({t.speaker for t in session.turns}))}
    messages = [{"type": "message", "user": ids[t.speaker], "text": t.content,
                 "ts": f"{int(t.time.replace(tzinfo=UTC).timestamp())}.{i:06d}",
                 "user_profile": {"display_name": t.speaker if i % 2 else "", "real_name": t.speaker}}
                for i, t in enumerate(session.turns)]
    return "general/2024-01-01.json", orjson.dumps(messages, option=orjson.OPT_INDENT_2)
