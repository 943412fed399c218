"""Render a generated chat as a Grok data export: one conversation, a linear chain of responses.

Grok knows senders, not names: turns alternate ``human`` and Grok (``assistant``)."""

import orjson

from tests import strategies

STRATEGY = strategies.sessions()


def _who(i):
    return ("human", "human") if i % 2 == 0 else ("assistant", "Grok")


def render(session):
    responses = [{"response": {
        "response_id": f"r{i}", "conversation_id": "c1", "message": t.content, "sender": _who(i)[0],
        "create_time": f"{t.time:%Y-%m-%dT%H:%M:%S}.000000Z", "parent_response_id": f"r{i - 1}" if i else None,
    }, "share_link": None} for i, t in enumerate(session.turns)]
    export = {"conversations": [{"conversation": {"conversation_id": "c1", "title": "generated",
                                                  "create_time": "2001-01-01T00:00:00Z"}, "responses": responses}]}
    return "prod-grok-backend.json", orjson.dumps(export)


def expected(session):
    return [(_who(i)[1], t.content, t.time) for i, t in enumerate(session.turns)]
