"""VS Code's chat session journal (``chatSessions/<id>.jsonl``), replayed with the provenance of every value.

VS Code keeps a chat session as an append-only mutation log (its ``ObjectMutationLog``): each line
is ``{"kind": 0, "v": state}`` (the whole session, the first line), ``{"kind": 1, "k": path,
"v": value}`` (set a property, replacing it), ``{"kind": 2, "k": path, "v": [items], "i": n}``
(push items onto an array, after cutting it to ``n`` items when ``i`` is given) or ``{"kind": 3,
"k": path}`` (delete a property). Replaying the lines in order gives the session object the
``.json`` layout holds.

The replay works on copies (the document of lines is never changed) and remembers, for every
object and array of the final session, the JSON pointer in the document of lines where a line
wrote it (``/<line>/v/...``): ``locate`` gives it. ``stale`` lists what later lines replaced or
cut (a reply streamed part by part is rewritten many times): the parts of the source no
interaction can own.
"""

from __future__ import annotations

from typing import Any

import orjson

from parsers.jsonload import pointer_part

KINDS = frozenset({0, 1, 2, 3})


def journal_head(text: str) -> bool:
    """True when the text opens with the journal's initial entry (a chat session's whole state)."""
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    if not first.startswith('{"kind":0') and not first.startswith('{"kind": 0'):
        return False
    try:
        entry = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    state = entry.get("v") if isinstance(entry, dict) else None
    return isinstance(state, dict) and ("requests" in state or "sessionId" in state)


class Journal:
    """The replayed state of a journal and where each of its objects was written."""

    def __init__(self, doc: list[Any]) -> None:
        self.doc = doc
        self.state: Any = None
        self.where: dict[int, str] = {}
        self.unreadable: list[int] = []
        for n, entry in enumerate(doc):
            if entry is None:
                continue
            kind = entry.get("kind") if isinstance(entry, dict) else None
            if kind in KINDS and (self.state is not None or kind == 0):
                self._apply(entry, n)
            else:
                self.unreadable.append(n)

    def locate(self, parent: str, key: Any, node: Any) -> str:
        """The pointer of ``node``, found at ``key`` in the object at ``parent``."""
        if isinstance(node, (dict, list)):
            found = self.where.get(id(node))
            if found is not None:
                return found
        return f"{parent}/{pointer_part(str(key))}"

    def _apply(self, entry: dict[str, Any], n: int) -> None:
        kind, path, value = entry["kind"], entry.get("k"), entry.get("v")
        if kind == 0:
            self.state = self._copy(value, f"/{n}/v")
            return
        if not isinstance(path, list):
            self.unreadable.append(n)
            return
        if kind == 2:
            target = _get(self.state, path)
            if not isinstance(target, list):
                target = []
                self.state = _put(self.state, path, target)
            if isinstance(entry.get("i"), int) and not isinstance(entry.get("i"), bool):
                del target[entry["i"]:]
            for j, item in enumerate(value if isinstance(value, list) else ()):
                target.append(self._copy(item, f"/{n}/v/{j}"))
            return
        copy = self._copy(value, f"/{n}/v") if kind == 1 else None
        self.state = _put(self.state, path, copy, delete=kind == 3)

    def _copy(self, value: Any, pointer: str) -> Any:
        """A copy of a written value whose objects and arrays remember where the line wrote them."""
        if not isinstance(value, (dict, list)):
            return value
        root = type(value)()
        stack = [(value, root, pointer)]
        while stack:
            source, target, at = stack.pop()
            self.where[id(target)] = at
            items = source.items() if isinstance(source, dict) else enumerate(source)
            for k, v in items:
                child = type(v)() if isinstance(v, (dict, list)) else v
                if isinstance(target, dict):
                    target[k] = child
                else:
                    target.append(child)
                if isinstance(v, (dict, list)):
                    stack.append((v, child, f"{at}/{pointer_part(str(k))}"))
        return root

    def stale(self) -> list[str]:
        """Pointers of the written objects the final state no longer holds (each outermost one)."""
        live: set[str] = set()
        stack = [self.state]
        while stack:
            node = stack.pop()
            if isinstance(node, (dict, list)):
                live.add(self.where.get(id(node), ""))
                stack.extend(node.values() if isinstance(node, dict) else node)
        out: list[str] = []
        for n, entry in enumerate(self.doc):
            if not isinstance(entry, dict) or entry.get("kind") not in (0, 1, 2):
                continue
            values = entry.get("v")
            written = (list(enumerate(values)) if entry["kind"] == 2 and isinstance(values, list)
                       else [(None, values)])
            for j, value in written:
                _stale_under(value, f"/{n}/v" if j is None else f"/{n}/v/{j}", live, out)
        return out


def _stale_under(value: Any, pointer: str, live: set[str], out: list[str]) -> None:
    stack = [(value, pointer)]
    while stack:
        node, at = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        if at not in live:
            out.append(at)
            continue
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((v, f"{at}/{pointer_part(str(k))}") for k, v in items)


def _get(state: Any, path: list[Any]) -> Any:
    node = state
    for key in path:
        if isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
        else:
            return None
    return node


def _put(state: Any, path: list[Any], value: Any, *, delete: bool = False) -> Any:
    """``state`` with ``value`` at ``path`` (the new state when the path is empty); missing objects
    on the way are created, a path through something else is ignored."""
    if not path:
        return value
    parent = state
    for key in path[:-1]:
        child = _get(parent, [key])
        if not isinstance(child, (dict, list)):
            if not isinstance(parent, dict):
                return state
            child = parent[key] = {}
        parent = child
    last = path[-1]
    if isinstance(parent, dict):
        if delete:
            parent.pop(last, None)
        else:
            parent[last] = value
    elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
        parent[last] = value
    return state
