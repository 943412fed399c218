"""Render a generated chat as a SillyTavern chat file: a metadata line, then one line per message
(the first speaker is the user, the others characters), send dates in SillyTavern's readable form
(minutes only)."""

import orjson

from tests import strategies

STRATEGY = strategies.sessions()


def _date(t):
    return f"{t:%B} {t.day}, {t.year} {t.hour % 12 or 12}:{t:%M}{'am' if t.hour < 12 else 'pm'}"


def render(session):
    user = session.turns[0].speaker
    lines = [{"user_name": user, "character_name": "Generated", "create_date": "2001-01-01@00h00m00s",
              "chat_metadata": {}}]
    for t in session.turns:
        lines.append({"name": t.speaker, "is_user": t.speaker == user, "is_system": False, "send_date": _date(t.time),
                      "mes": t.content, "extra": {}})
    return "Generated - 2001-01-01@00h00m00s.jsonl", b"\n".join(orjson.dumps(x) for x in lines) + b"\n"


def expected(session):
    return [(t.speaker, t.content, t.time.replace(second=0)) for t in session.turns]
