"""Claude.ai exports: ``conversations.json`` (a list of conversations, also inside
``conversations-000/`` of the newer split export), a single conversation object (the web app's
``chat_conversations/<uuid>`` answer, as browser tools save it), or ``{"conversations": [...]}``.

Each conversation is a session (id ``uuid``, title ``name``, time ``created_at``); each entry of
``chat_messages`` is one turn, human/user -> speaker "Human" (user), assistant -> "Claude"
(assistant), system -> "System", any other sender kept as written (role other). A conversation
with no messages is still a session, with no interactions and a warning, so it is in the ledger.

Content blocks are rendered in order: text as it is, ``thinking`` as ``[thinking]`` plus the
thought, ``redacted_thinking`` as a marker, ``voice_note`` as ``[voice note: title]`` plus its text,
``tool_use`` as ``[tool_use: name]`` plus its input JSON, ``tool_result`` as ``[tool_result: name]``
plus its text; a block of an unknown type keeps its text behind ``[type]`` and is counted as format
drift. Without blocks, the message's ``text``.
Attachments (with the text the model was given) and files follow as ``[attachment: name]`` and
``[file: name]``, and are listed in ``extra``. A message whose blocks are all ``tool_use`` (with
text around them or not) is a tool_call, one with only ``tool_result`` blocks a tool_result. A
message's time is its ``created_at``, else its first block's ``start_timestamp``.

When the conversation names its ``current_leaf_message_uuid`` and the messages link to their
parents (``parent_message_uuid``: the web app's tree, with edits and retries), the interactions
are the branch from the root to that leaf; the other messages are declared ``off_branch``
regions with their text. A message with nothing in it (no text, no block content, no file) is an
``empty_record`` region. An entry of ``chat_messages`` that is not an object is still a turn (a
System notice kept verbatim).

The provider ``anthropic`` comes from the export format (an assumption); a model name only when
the message or the conversation has a ``model`` field. The export's ``users.json``,
``projects.json`` and ``memories.json`` are companions, not conversations (a conversation's project
name comes from ``projects.json``, its ``summary`` goes to meta). Big exports stream one conversation
at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

import orjson

from models.errors import ParseError, Reason
from models.records import ModelRef, ParsedSession, Region, RegionKind, SourceText
from models.settings import Settings
from parsers.base import ConversationList, Grammar
from parsers.drift import Drift
from parsers.grammars._aiexport import (
    TimeNotes,
    compact,
    explained_share,
    has_text,
    json_text,
    malformed_turn,
    odd_warning,
    read_time,
)
from parsers.registry import register
from parsers.turncols import TurnColumns

SENDERS = {"human": ("Human", "user"), "user": ("Human", "user"), "assistant": ("Claude", "assistant"),
           "system": ("System", "system")}
PROVIDER_NOTE = "provider 'anthropic' for assistant turns: the file is a Claude export"
COMPANIONS = ("users.json", "projects.json", "memories.json")
CONVERSATION_KEYS = frozenset({
    "uuid", "name", "summary", "created_at", "updated_at", "account", "chat_messages", "model", "project_uuid",
    "project", "is_starred", "current_leaf_message_uuid", "settings", "is_temporary", "platform", "conversation_id",
    "workspace_id",
})
MESSAGE_KEYS = frozenset({
    "uuid", "text", "content", "sender", "index", "created_at", "updated_at", "truncated", "stop_reason",
    "attachments", "files", "files_v2", "sync_sources", "parent_message_uuid", "model", "input_mode",
})
BLOCK_TEXT = ("text", "thinking", "content", "input")
"""Block fields that hold what a block says (a block with none of them filled is empty)."""


def _result_item(item: Any) -> str:
    """One item of a tool result: text as it is, anything else (a search hit, an image) with a marker."""
    if not isinstance(item, dict):
        return str(item)
    if item.get("type", "text") == "text":
        return str(item.get("text", ""))
    label = " ".join(str(item[k]) for k in ("title", "url") if isinstance(item.get(k), str) and item[k])
    head = f"[{item.get('type')}: {label}]" if label else f"[{item.get('type')}]"
    return f"{head}\n{item['text']}" if isinstance(item.get("text"), str) and item["text"] else head


def _tool_result_text(inner: Any) -> str:
    if isinstance(inner, list):
        return "\n".join(_result_item(c) for c in inner)
    return inner if isinstance(inner, str) else ("" if inner is None else json_text(inner))


def _tool_result(block: dict) -> str:
    label = "tool_result" + (f": {block['name']}" if block.get("name") else "")
    label += " (error)" if block.get("is_error") else ""
    return f"[{label}]\n{_tool_result_text(block.get('content'))}"


BLOCKS = {
    "text": lambda b: str(b.get("text", "")),
    "thinking": lambda b: f"[thinking]\n{b.get('thinking', '')}",
    "redacted_thinking": lambda b: "[redacted thinking]",
    "tool_use": lambda b: f"[tool_use: {b.get('name', '')}]\n{json_text(b.get('input'))}",
    "tool_result": _tool_result,
    "voice_note": lambda b: f"[voice note: {b['title']}]\n{b.get('text', '')}" if b.get("title")
    else f"[voice note]\n{b.get('text', '')}",
    "token_budget": lambda b: "[token_budget]",
    "image": lambda b: f"[image: {b['file_name']}]" if b.get("file_name") else "[image]",
    "document": lambda b: f"[document: {b.get('title') or b.get('file_name') or ''}]".replace(": ]", "]"),
}
"""Content block renderers by ``type``."""


def _unknown_block(block: dict) -> str:
    kind = block.get("type")
    for key in BLOCK_TEXT:
        if isinstance(block.get(key), str) and block[key].strip():
            return f"[{kind}]\n{block[key]}"
    return f"[{kind}]"


def render_blocks(message: dict[str, Any], drift: Drift | None = None, pointer: str = "") -> str:
    """The message's content blocks as readable text, in order; its ``text`` when it has none."""
    blocks = message.get("content")
    if not isinstance(blocks, list) or not blocks:
        return message.get("text") if isinstance(message.get("text"), str) else ""
    out = []
    for i, block in enumerate(blocks):
        if not isinstance(block, dict):
            out.append(block if isinstance(block, str) else json_text(block))
            continue
        render = BLOCKS.get(block.get("type"))
        if render is None:
            if drift is not None:
                drift.note("blockType", str(block.get("type")), f"{pointer}/content/{i}")
            out.append(_unknown_block(block))
        else:
            out.append(render(block))
    return "\n".join(out)


def _items(m: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = m.get(key)
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _block_says(block: Any) -> bool:
    if not isinstance(block, dict):
        return block not in (None, "")
    kind = block.get("type")
    return has_text(block.get(kind)) if kind in ("text", "thinking") else True


def is_empty(m: Any) -> bool:
    """A message object with nothing in it: no text, no block that says something, no attachment or file."""
    if not isinstance(m, dict):
        return False
    if (isinstance(m.get("text"), str) and m["text"].strip()) or _items(m, "attachments") or _items(m, "files") \
            or _items(m, "files_v2"):
        return False
    return not any(_block_says(b) for b in (m.get("content") if isinstance(m.get("content"), list) else []))


def branch(messages: list[Any], leaf: Any) -> list[int] | None:
    """Indices of chat_messages on the branch that ends at ``leaf`` (``current_leaf_message_uuid``),
    root first, following ``parent_message_uuid`` (a parent that is not in the list is the root);
    None when there is no such leaf (the export's linear list: every entry is on the branch)."""
    by_uuid = {m.get("uuid"): i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("uuid")}
    if leaf not in by_uuid:
        return None
    path, at = [], leaf
    while at in by_uuid and by_uuid[at] not in path:
        path.append(by_uuid[at])
        at = messages[by_uuid[at]].get("parent_message_uuid")
    return path[::-1]


def _fork(messages: list[Any], i: int, on: set[int]) -> str:
    """Why entry ``i`` is off the branch: which alternative it belongs to and where it leaves the branch."""
    by_uuid = {m.get("uuid"): j for j, m in enumerate(messages) if isinstance(m, dict) and m.get("uuid")}
    first, at, seen = i, i, set()
    while at not in on and at not in seen:
        seen.add(at)
        first = at
        parent = messages[at].get("parent_message_uuid") if isinstance(messages[at], dict) else None
        if parent not in by_uuid:
            return "not on the current branch: an alternative from the start of the conversation"
        at = by_uuid[parent]
    sender = messages[first].get("sender") if isinstance(messages[first], dict) else None
    what = "a retried answer" if sender == "assistant" else ("an edited message" if sender in ("human", "user")
                                                              else "an alternative")
    return f"not on the current branch: {what} branching after message {messages[at].get('uuid')!r}"


def _explains(path: tuple, record: dict) -> bool:
    return len(path) >= 2 and path[-2] == "chat_messages"


def _is_conversation(entry: Any) -> bool:
    return isinstance(entry, dict) and "chat_messages" in entry


@lru_cache(maxsize=4)
def project_names(projects_json: str | None) -> dict[str, str]:
    """Project uuid -> name from the export's projects.json companion (empty when absent or unreadable)."""
    if not projects_json:
        return {}
    try:
        projects = orjson.loads(projects_json)
    except orjson.JSONDecodeError:
        return {}
    return {str(p["uuid"]): str(p.get("name") or "") for p in projects if isinstance(p, dict) and p.get("uuid")} \
        if isinstance(projects, list) else {}


@register
class Claude(Grammar):
    name = "claude"
    detect_needs = ('"chat_messages"',)  # its key
    version = "3"
    structured = True
    conversations = ConversationList(own_key="chat_messages")
    companion_names = COMPANIONS
    description = "Claude.ai export conversations.json (chat_messages per conversation)"
    example = '[{"uuid": "…", "name": "…", "chat_messages": [{"sender": "human", "text": "…"}]}]'

    def detect(self, sample: str, name: str) -> float:
        if PurePosixPath(name).name in COMPANIONS or '"chat_messages"' not in sample:
            return 0.0
        return explained_share(sample, _explains, _is_conversation)

    def parse_conversation(self, pointer: str, value: Any, source: SourceText, settings: Settings
                           ) -> Iterator[ParsedSession]:
        messages = value.get("chat_messages") if isinstance(value, dict) else False
        if (messages is None and not value.get("uuid")) or (messages is not None and not isinstance(messages, list)):
            raise ParseError(Reason.PARSE_ERROR, f"conversation at {pointer or '/'} has no chat_messages list",
                             path=source.name, grammar=self.name)
        session = self._conversation(pointer, value)
        project = project_names(source.companions.get("projects.json")).get(str(value.get("project_uuid")))
        if project:
            session.meta["project"] = project
        yield session

    def _conversation(self, base: str, conv: dict[str, Any]) -> ParsedSession:
        uid = conv.get("uuid")
        session = ParsedSession(str(uid) if uid else None, "source:uuid" if uid else "none", TurnColumns(),
                                raw=conv, pointer=base)
        session.title = conv.get("name") if isinstance(conv.get("name"), str) and conv.get("name") else None
        times, drift = TimeNotes(), Drift()
        session.created, session.created_raw = read_time(conv.get("created_at"))
        times.note(session.created, session.created_raw, f"{base}/created_at")
        drift.unknown_keys(conv, CONVERSATION_KEYS, base or "/")
        messages = conv.get("chat_messages") if isinstance(conv.get("chat_messages"), list) else []
        if not messages:
            session.warnings.append("the conversation has no messages in the export: a session with no interactions")
        model_name = conv.get("model") if isinstance(conv.get("model"), str) and conv.get("model") else None
        path = branch(messages, conv.get("current_leaf_message_uuid"))
        on = path if path is not None else list(range(len(messages)))
        odd = 0
        for i in on:
            m, pointer = messages[i], f"{base}/chat_messages/{i}"
            if not isinstance(m, dict):
                odd += 1
                session.turns.append(malformed_turn(m, pointer))
            elif is_empty(m):
                session.regions.append(Region(RegionKind.EMPTY_RECORD,
                                              f"{m.get('sender') or 'unknown'} message with nothing in it",
                                              pointer=pointer))
            else:
                self._turn(session.turns, m, pointer, model_name, times, drift)
        on_set = set(on)
        for i in (j for j in range(len(messages)) if j not in on_set):
            m = messages[i]
            session.regions.append(Region(RegionKind.OFF_BRANCH, _fork(messages, i, on_set),
                                          pointer=f"{base}/chat_messages/{i}",
                                          content=render_blocks(m) if isinstance(m, dict) else json_text(m)))
        if odd:
            session.warnings.append(odd_warning(odd, "chat_messages"))
        times.flush(session)
        if isinstance(conv.get("updated_at"), str):
            session.meta["updatedRaw"] = conv["updated_at"]
        if isinstance(conv.get("summary"), str) and conv["summary"].strip():
            session.meta["summary"] = conv["summary"]
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        if session.turns.has_role("assistant"):
            session.assumptions.append(PROVIDER_NOTE)
        return session

    @staticmethod
    def _turn(turns: TurnColumns, m: dict[str, Any], pointer: str, model_name: str | None,
              times: TimeNotes, drift: Drift) -> None:
        drift.unknown_keys(m, MESSAGE_KEYS, pointer)
        sender = m.get("sender")
        speaker, role = SENDERS.get(str(sender), (str(sender) if sender else "unknown", "other"))
        if sender not in SENDERS:
            drift.note("sender", str(sender), pointer)
        attachments, files, marks = [], [], []
        for item in _items(m, "attachments"):
            fname = item.get("file_name") or item.get("name") or "attachment"
            attachments.append({k: item[k] for k in ("file_name", "file_type", "file_size") if item.get(k)})
            body = item.get("extracted_content")
            marks.append(f"[attachment: {fname}]" + (f"\n{body}" if isinstance(body, str) and body else ""))
        for item in _items(m, "files") or _items(m, "files_v2"):
            fname = item.get("file_name") or item.get("name") or item.get("file_uuid") or "file"
            files.append(fname)
            marks.append(f"[file: {fname}]")
        content = "\n".join(x for x in (render_blocks(m, drift, pointer), *marks) if x)
        own_model = m.get("model") if isinstance(m.get("model"), str) and m.get("model") else None
        model = ModelRef("anthropic", own_model or model_name, None) if role == "assistant" else None
        when, raw = read_time(m.get("created_at"))
        if when is None and raw is None:
            when, raw = read_time(_first_start(m))
        times.note(when, raw, pointer)
        extra = compact({"uuid": m.get("uuid"), "attachments": attachments, "files": files,
                         "parentUuid": m.get("parent_message_uuid")})
        turns.add(speaker, role, content, when, raw, model, _kind(m), pointer=pointer, extra=extra)

    def count_turns(self, raw: Any) -> int:
        """The entries of chat_messages on the current branch (all of them without a tree), less the
        empty ones, counted by following parent links down from the leaf."""
        messages = raw.get("chat_messages") if isinstance(raw, dict) else None
        if not isinstance(messages, list):
            return 0
        index = {m["uuid"]: m for m in messages if isinstance(m, dict) and m.get("uuid")}
        chain, at = [], raw.get("current_leaf_message_uuid")
        while at in index and len(chain) <= len(messages):
            chain.append(index[at])
            at = index[at].get("parent_message_uuid")
        counted = chain or messages
        return sum(1 for m in counted if not is_empty(m))


def _first_start(m: dict[str, Any]) -> Any:
    for block in m.get("content") or []:
        if isinstance(block, dict) and block.get("start_timestamp"):
            return block["start_timestamp"]
    return None


def _kind(m: dict[str, Any]) -> str:
    kinds = {b.get("type") for b in m.get("content") or [] if isinstance(b, dict)}
    if "tool_use" in kinds:
        return "tool_call"
    if "tool_result" in kinds and kinds <= {"tool_result"}:
        return "tool_result"
    return "message"
