"""Render a generated chat as a ChatGPT conversations.json with a linear mapping tree."""

from datetime import UTC

import orjson


def render(session):
    mapping = {"root": {"id": "root", "parent": None, "children": [], "message": None}}
    parent = "root"
    for i, t in enumerate(session.turns):
        node = f"n{i}"
        mapping[parent]["children"].append(node)
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": "user", "name": t.speaker},
            "create_time": t.time.replace(tzinfo=UTC).timestamp(),
            "content": {"content_type": "text", "parts": [t.content]}}}
        parent = node
    conv = [{"id": "c1", "title": "generated", "create_time": None, "mapping": mapping, "current_node": parent}]
    return "conversations.json", orjson.dumps(conv)
