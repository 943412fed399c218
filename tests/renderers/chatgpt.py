"""Render a generated chat as a ChatGPT export: a mapping tree whose current branch holds the turns.

Every third turn also gets an older sibling (a regenerated answer the user did not keep), so the
round trip checks that alternatives stay out of the interactions; a hidden empty system message
opens the tree as in real exports. Chats with an odd number of turns are written as one
conversation object (the web app's form), the others as a conversations.json list.
"""

from datetime import UTC

import orjson


def _message(node, speaker, when, text):
    return {"id": node, "author": {"role": "user", "name": speaker, "metadata": {}}, "create_time": when,
            "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully",
            "weight": 1.0, "metadata": {}, "recipient": "all"}


def render(session):
    system = {"id": "sys", "author": {"role": "system", "name": None, "metadata": {}}, "create_time": None,
              "content": {"content_type": "text", "parts": [""]}, "weight": 0.0,
              "metadata": {"is_visually_hidden_from_conversation": True}, "recipient": "all"}
    root = "client-created-root"
    mapping = {root: {"id": root, "parent": None, "children": ["sys"], "message": None},
               "sys": {"id": "sys", "parent": root, "children": [], "message": system}}
    parent = "sys"
    for i, t in enumerate(session.turns):
        when = t.time.replace(tzinfo=UTC).timestamp()
        if i % 3 == 2:
            alt = f"alt{i}"
            mapping[parent]["children"].append(alt)
            mapping[alt] = {"id": alt, "parent": parent, "children": [],
                            "message": _message(alt, t.speaker, when, f"an earlier draft of: {t.content}")}
        node = f"n{i}"
        mapping[parent]["children"].append(node)
        mapping[node] = {"id": node, "parent": parent, "children": [],
                         "message": _message(node, t.speaker, when, t.content)}
        parent = node
    conv = {"id": "c1", "title": "generated", "create_time": None, "mapping": mapping, "current_node": parent}
    return "conversations.json", orjson.dumps(conv if len(session.turns) % 2 else [conv])
