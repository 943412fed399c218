"""Render a generated chat as a Google Hangouts Takeout file: one conversation, authors through the
participant directory, lines as TEXT segments joined by LINE_BREAK segments, microsecond timestamps."""

from datetime import UTC

import orjson


def _segments(text):
    out = []
    for i, line in enumerate(text.split("\n")):
        if i:
            out.append({"type": "LINE_BREAK", "text": "\n"})
        out.append({"type": "TEXT", "text": line})
    return out


def render(session):
    ids = {name: str(100 + i) for i, name in enumerate(sorted({t.speaker for t in session.turns}))}
    events = [{"conversation_id": {"id": "UgGen"}, "sender_id": {"gaia_id": ids[t.speaker], "chat_id": ids[t.speaker]},
               "timestamp": str(int(t.time.replace(tzinfo=UTC).timestamp()) * 1_000_000), "event_id": f"e{i}",
               "event_type": "REGULAR_CHAT_MESSAGE",
               "chat_message": {"message_content": {"segment": _segments(t.content)}}}
              for i, t in enumerate(session.turns)]
    directory = [{"id": {"gaia_id": gid, "chat_id": gid}, "fallback_name": name} for name, gid in ids.items()]
    doc = {"conversations": [{"conversation": {"conversation_id": {"id": "UgGen"},
                                               "conversation": {"id": {"id": "UgGen"}, "participant_data": directory}},
                              "events": events}]}
    return "Hangouts.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2)
