"""Open WebUI chats: the "Export chats" JSON (a list of chat rows) and a single chat's JSON.

Shapes: a list ``[{"id", "user_id", "title", "chat": {...}, "created_at", "updated_at", ...}]`` (one
session per row, session_id = the row's id), a single row, or a chat object itself ``{"id", "title",
"models", "history": {"messages": {id: message}, "currentId"}, "messages": [...], "timestamp"}``.

Decisions:
- The messages form a tree (``parentId``/``childrenIds``; a regenerated answer or an edited
  question is a sibling): the session is the current branch, from the root to ``currentId``
  (``_aiexport.current_path``), each message one turn; every message off it is an ``off_branch``
  region with its text. The chat's ``messages`` list is the client's flat copy of the current
  branch, not read again (``meta.flatCopy`` says so); a chat with no ``history`` is read from it.
- role ``user``/``assistant``/``system`` as given; speaker = the role (the export names nobody).
  An assistant message's ``model`` (``deepseek/deepseek-chat:free``, ``llama3:8b``) is explicit;
  a ``provider/`` prefix gives the provider, nothing else does. ``modelName``, token ``usage``,
  ``files`` and ``sources`` go to ``extra``; files also add ``[file: name]`` marker lines.
- ``timestamp`` is epoch seconds (the chat's own is milliseconds).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from models.errors import ParseError, Reason
from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import ConversationList, Grammar
from parsers.drift import Drift
from parsers.grammars._agentlog import split_model
from parsers.grammars._aiexport import (
    TimeNotes,
    compact,
    current_path,
    explained_share,
    malformed_turn,
    read_time,
    record_role,
)
from parsers.jsonload import pointer_part
from parsers.registry import register

ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}
MESSAGE_KEYS = frozenset({
    "id", "parentId", "childrenIds", "role", "content", "timestamp", "models", "model", "modelName", "modelIdx",
    "userContext", "lastSentence", "usage", "done", "files", "sources", "info", "annotation", "error",
    "statusHistory", "followUps", "merged", "code_executions", "citations", "selectedModelId", "favorite",
    "arena", "originalContent", "feedbackId", "output",
})


def _explains(path: tuple, record: dict) -> bool:
    """An Open WebUI row (its ``chat`` holds the tree), a chat object, or one of a tree's messages."""
    if isinstance(record.get("chat"), dict):
        return _is_chat(record["chat"])
    if _is_chat(record):
        return True
    return "role" in record and ("childrenIds" in record or "parentId" in record)


def _is_chat(value: Any) -> bool:
    return isinstance(value, dict) and (isinstance(value.get("history"), dict) and "messages" in value["history"])


def _chat_of(pointer: str, row: Any) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """(pointer of the chat object, the row or chat, the chat) of one entry of the export (or of the
    whole file), None when it holds no chat."""
    if isinstance(row, dict) and isinstance(row.get("chat"), dict):
        return f"{pointer}/chat", row, row["chat"]
    if isinstance(row, dict) and (_is_chat(row) or isinstance(row.get("messages"), list)):
        return pointer, row, row
    return None


def _files(message: dict[str, Any]) -> list[str]:
    """One ``[file: name]`` marker per attached file (``[image]`` for an image without a name)."""
    out = []
    for item in message.get("files") if isinstance(message.get("files"), list) else ():
        if not isinstance(item, dict):
            continue
        inner = item.get("file") if isinstance(item.get("file"), dict) else {}
        name = item.get("name") or inner.get("filename")
        label = item.get("type") if isinstance(item.get("type"), str) else "file"
        out.append(f"[{label}: {name}]" if name else f"[{label}]")
    return out


def _times(nodes: dict[str, Any]):
    """A node's time as epoch seconds (for choosing the latest leaf), None when it has none."""
    def time_of(node: str) -> float | None:
        value = nodes[node].get("timestamp") if isinstance(nodes[node], dict) else None
        when = read_time(value)[0]
        return when.timestamp() if when is not None else None
    return time_of


def _turn(message: Any, pointer: str, times: TimeNotes, drift: Drift) -> Turn:
    if not isinstance(message, dict):
        return malformed_turn(message, pointer)
    drift.unknown_keys(message, MESSAGE_KEYS, pointer)
    raw_role, role = record_role(message, ROLES, drift, pointer)
    content = message.get("content") if isinstance(message.get("content"), str) else ""
    text = "\n".join(x for x in (content, *_files(message)) if x)
    when, raw = read_time(message.get("timestamp"))
    times.note(when, raw, pointer)
    model = split_model(None, message.get("model")) if role == "assistant" else None
    extra = compact({"messageId": message.get("id"), "modelName": message.get("modelName"),
                     "usage": message.get("usage"), "sources": message.get("sources"),
                     "error": message.get("error")})
    return Turn(raw_role, role, text, when, raw, model, "message", pointer=pointer, extra=extra)


@register
class OpenWebUI(Grammar):
    name = "open-webui"
    version = "1"
    structured = True
    conversations = ConversationList(wrappers=())
    description = "Open WebUI chat export (the Export chats list, a chat row or a chat's JSON; its current branch)"
    example = ('[{"id": "…", "title": "…", "chat": {"history": {"messages": {"m1": {"id": "m1", "parentId": null, '
               '"childrenIds": [], "role": "user", "content": "hi", "timestamp": 1714550400}}, "currentId": "m1"}}}]')

    def detect(self, sample: str, name: str) -> float:
        if '"childrenIds"' not in sample and '"currentId"' not in sample:
            return 0.0
        return explained_share(sample, _explains, lambda e: isinstance(e, dict) and (
            _is_chat(e) or _is_chat(e.get("chat"))))

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        found = False
        for session in super().parse(source, settings):
            found = True
            yield session
        if not found:  # a streamed read says so too (no session in the input: quarantined ``no_turns``)
            raise ParseError(Reason.PARSE_ERROR, "no Open WebUI chat in the file", path=source.name,
                             grammar=self.name)

    def parse_conversation(self, pointer: str, value: Any, source: SourceText, settings: Settings
                           ) -> Iterator[ParsedSession]:
        found = _chat_of(pointer, value)
        if found is not None:  # another entry of the list holds no chat: not read, as ever
            yield self._chat(*found)

    def _chat(self, pointer: str, row: dict[str, Any], chat: dict[str, Any]) -> ParsedSession:
        # The chat object itself looks like a message to the source accounting (a timestamp and a
        # files list): the session's raw value is its message tree (or its list), so that every
        # message in it is checked on its own.
        cid = row.get("id") or chat.get("id")
        history = chat.get("history") if isinstance(chat.get("history"), dict) else {}
        nodes = history.get("messages") if isinstance(history.get("messages"), dict) else {}
        listed = chat.get("messages") if isinstance(chat.get("messages"), list) else []
        raw, at = (history, f"{pointer}/history") if nodes or not listed else (listed, f"{pointer}/messages")
        session = ParsedSession(str(cid) if cid else None, "source:id" if cid else "none", [], raw=raw, pointer=at)
        title = row.get("title") or chat.get("title")
        session.title = title if isinstance(title, str) and title else None
        session.created, session.created_raw = read_time(row.get("created_at") or chat.get("timestamp"))
        times, drift = TimeNotes(), Drift()
        if nodes:
            self._tree(session, pointer, nodes, history.get("currentId"), times, drift)
            session.meta["flatCopy"] = (f"{pointer}/messages: the client's copy of the current branch "
                                        f"({len(listed)} entries), not read again")
        else:
            for i, message in enumerate(listed):
                session.turns.append(_turn(message, f"{pointer}/messages/{i}", times, drift))
        if not session.turns:
            session.warnings.append("the chat has no messages in the export")
        times.flush(session)
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        return session

    @staticmethod
    def _tree(session: ParsedSession, base: str, nodes: dict[str, Any], current: Any, times: TimeNotes,
              drift: Drift) -> None:
        parents = {k: (v.get("parentId") if isinstance(v, dict) else None) for k, v in nodes.items()}
        path, note = current_path(parents, current if isinstance(current, str) else None, _times(nodes))
        if note:
            session.assumptions.append(note)
        at = f"{base}/history/messages"
        for node in path:
            session.turns.append(_turn(nodes[node], f"{at}/{pointer_part(node)}", times, drift))
        on_branch = set(path)
        for node, message in nodes.items():
            if node not in on_branch:
                text = message.get("content") if isinstance(message, dict) else None
                session.regions.append(Region(RegionKind.OFF_BRANCH, "not on the current branch (a regenerated "
                                              "answer or an edited message)", pointer=f"{at}/{pointer_part(node)}",
                                              content=text if isinstance(text, str) else None))

    def count_turns(self, raw: Any) -> int:
        """The messages on the way from ``currentId`` up to the root, counted by their parent links (or
        the entries of a chat's list when it has no tree)."""
        if isinstance(raw, list):
            return len(raw)
        nodes = raw.get("messages") if isinstance(raw, dict) else None
        if not isinstance(nodes, dict) or not nodes:
            return 0
        parents = {k: (v.get("parentId") if isinstance(v, dict) else None) for k, v in nodes.items()}
        current = raw.get("currentId")
        return len(current_path(parents, current if isinstance(current, str) else None, _times(nodes))[0])
