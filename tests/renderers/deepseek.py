"""Render a generated chat as a DeepSeek export: one conversation, a linear mapping of REQUEST and
RESPONSE fragments (user and assistant by turn parity: the export names nobody)."""

import orjson

from tests import strategies

STRATEGY = strategies.sessions()


def _role(i):
    return ("user", "REQUEST") if i % 2 == 0 else ("assistant", "RESPONSE")


def render(session):
    mapping = {"root": {"id": "root", "parent": None, "children": ["1"], "message": None}}
    for i, t in enumerate(session.turns, 1):
        mapping[str(i)] = {"id": str(i), "parent": "root" if i == 1 else str(i - 1),
                           "children": [str(i + 1)] if i < len(session.turns) else [],
                           "message": {"files": [], "model": "deepseek-chat",
                                       "inserted_at": f"{t.time:%Y-%m-%dT%H:%M:%S}.000000+00:00",
                                       "fragments": [{"type": _role(i - 1)[1], "content": t.content}]}}
    conv = {"id": "c1", "title": "generated", "inserted_at": "2001-01-01T00:00:00+00:00", "mapping": mapping}
    return "conversations.json", orjson.dumps([conv])


def expected(session):
    return [(_role(i)[0], t.content, t.time) for i, t in enumerate(session.turns)]
