"""Render a generated chat as a Facebook Messenger export: newest first, UTF-8 as latin-1 escapes."""

from datetime import UTC

import orjson


def _mojibake(text: str) -> str:
    return text.encode("utf-8").decode("latin-1")


def render(session):
    messages = [{"sender_name": _mojibake(t.speaker),
                 "timestamp_ms": int(t.time.replace(tzinfo=UTC).timestamp()) * 1000,
                 "content": _mojibake(t.content), "type": "Generic"} for t in session.turns]
    doc = {"participants": [{"name": _mojibake(n)} for n in sorted({t.speaker for t in session.turns})],
           "messages": messages[::-1], "title": "Generated", "thread_path": "inbox/generated_1"}
    return "message_1.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2)
