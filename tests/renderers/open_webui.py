"""Render a generated chat as an Open WebUI "Export chats" file: one row, its messages a linear tree.

Open WebUI knows roles, not names: every speaker becomes ``user`` or ``assistant`` by turn parity."""

from datetime import UTC

import orjson

from tests import strategies

STRATEGY = strategies.sessions()


def _epoch(when):
    return int(when.replace(tzinfo=UTC).timestamp())


def _role(i):
    return "user" if i % 2 == 0 else "assistant"


def render(session):
    ids = [f"m{i}" for i in range(len(session.turns))]
    nodes = {}
    for i, t in enumerate(session.turns):
        nodes[ids[i]] = {"id": ids[i], "parentId": ids[i - 1] if i else None,
                         "childrenIds": [ids[i + 1]] if i + 1 < len(ids) else [], "role": _role(i),
                         "content": t.content, "timestamp": _epoch(t.time)}
    chat = {"id": "", "title": "generated", "models": [], "params": {},
            "history": {"messages": nodes, "currentId": ids[-1]}, "messages": list(nodes.values()),
            "tags": [], "timestamp": _epoch(session.turns[0].time) * 1000, "files": []}
    row = {"id": "row-1", "user_id": "u-1", "title": "generated", "chat": chat, "created_at": 1, "updated_at": 1}
    return "chat-export.json", orjson.dumps([row])


def expected(session):
    return [(_role(i), t.content, t.time) for i, t in enumerate(session.turns)]
