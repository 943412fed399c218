"""ChatGPT exports: ``conversations.json`` (a list of conversations, also split as
``conversations-000.json``, or inside the export zip), a single conversation object (the web app's
``backend-api/conversation`` answer, or one saved by a browser tool), and a list wrapped as
``{"conversations": [...]}``.

Each conversation is a session (id ``id``/``conversation_id``). Its ``mapping`` is a tree: edits
and regenerations make branches. The interactions are the *current branch*: the path from
``current_node`` up to the root, in order. Without a usable ``current_node`` the branch ends at the
latest leaf by ``create_time`` (ties: the deeper leaf, then the later one in the mapping), and an
assumption says so; a ``current_node`` that is not a leaf (the root, a first question) is followed on
to the latest leaf below it, also said; a mapping with no parent/children links at all is read in
document order.
Messages on other branches are not interactions: each is declared as an ``off_branch`` region with
its text and the node where its branch leaves the current one, so the session stays complete.

On the current branch, a message with nothing in it (an empty system prompt, ``parts: [""]``, an empty
memory context) is an ``empty_record`` region, and a system or context message the export marks as
hidden from the conversation (``is_visually_hidden_from_conversation``: custom instructions, memory)
is a ``hidden`` region keeping its text. Every other message, tool messages included, is one turn.
Contents are rendered by ``_chatgpt_content`` (one renderer per content type); an unknown content
type, part type, author role or key is counted as format drift (``meta["formatDrift"]``) and its
text kept.

``metadata.model_slug`` is an explicit model name; the conversation's ``default_model_slug`` is a
session default (rule A2 applies to it). The provider ``openai`` comes from the export format itself
(recorded as an assumption). A null ``create_time`` gives no time; one that is present but unreadable
gives no time, its raw text kept, and one warning per session. Large exports are streamed one
conversation at a time (``conversations`` names where they lie; flows/core/jsonstream.py). The export's
other files (``user.json``, ``message_feedback.json``, ``model_comparisons.json``,
``shared_conversations.json``, ``chat.html``) are companions.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC
from pathlib import PurePosixPath
from typing import Any

from models.errors import ParseError, Reason
from models.records import ModelRef, ParsedSession, Region, RegionKind, SourceText
from models.settings import Settings
from parsers.base import ConversationList, Grammar
from parsers.drift import Drift
from parsers.grammars._aiexport import (
    TimeNotes,
    explained_share,
    has_text,
    is_message_like,
    read_time,
)
from parsers.grammars._chatgpt_content import render, render_content
from parsers.jsonload import pointer_part
from parsers.registry import register
from parsers.turncols import TurnColumns

__all__ = ["ChatGPT", "Tree", "current_branch", "render_content"]

PROVIDER_NOTE = "provider 'openai' for assistant turns: the file is a ChatGPT export"
ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}
COMPANIONS = ("user.json", "message_feedback.json", "model_comparisons.json", "shared_conversations.json",
              "chat.html")
CONTEXT_TYPES = frozenset({"user_editable_context", "model_editable_context", "app_pairing_content"})
BLANK_SKIP = frozenset({"content_type", "language", "response_format_name"})
"""Fields that say what a content is, not what it holds: a message with only these is empty."""

CONVERSATION_KEYS = frozenset({
    "id", "conversation_id", "title", "create_time", "update_time", "mapping", "current_node", "moderation_results",
    "plugin_ids", "conversation_template_id", "gizmo_id", "gizmo_type", "is_archived", "is_starred", "safe_urls",
    "blocked_urls", "default_model_slug", "conversation_origin", "voice", "async_status", "disabled_tool_ids",
    "is_do_not_remember", "memory_scope", "sugar_item_id", "sugar_item_visible", "is_study_mode", "pinned_time",
    "is_read_only", "context_scopes", "owner", "model_slug", "project_id", "workspace_id", "is_unread",
})
NODE_KEYS = frozenset({"id", "message", "parent", "children"})
MESSAGE_KEYS = frozenset({
    "id", "author", "create_time", "update_time", "content", "status", "end_turn", "weight", "metadata",
    "recipient", "channel",
})


def _epoch(value: Any) -> float | None:
    """A source time as epoch seconds, for ordering leaves (naive ISO text read as UTC)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    when, _ = read_time(value, guess_millis=False)
    if when is None:
        return None
    return when.timestamp() if when.tzinfo else when.replace(tzinfo=UTC).timestamp()


def _message(node: Any) -> dict | None:
    message = node.get("message") if isinstance(node, dict) else None
    return message if isinstance(message, dict) else None


def _meta(message: dict) -> dict:
    return message["metadata"] if isinstance(message.get("metadata"), dict) else {}


def _role(message: dict) -> str:
    author = message.get("author")
    return str(author.get("role") or "unknown") if isinstance(author, dict) else "unknown"


def region_kind(message: dict) -> RegionKind | None:
    """EMPTY_RECORD for a message with nothing in it, HIDDEN for a system or context message the
    export hides from the conversation, None for a message that is a turn."""
    metadata = _meta(message)
    content = message.get("content")
    if not _says_something(content) and not metadata.get("attachments"):
        return RegionKind.EMPTY_RECORD
    ctype = content.get("content_type") if isinstance(content, dict) else None
    if metadata.get("is_visually_hidden_from_conversation") and (_role(message) == "system" or ctype in CONTEXT_TYPES):
        return RegionKind.HIDDEN
    return None


def _says_something(content: Any) -> bool:
    """``has_text(content, BLANK_SKIP)``, the common case first: a first part that is text."""
    parts = content.get("parts") if type(content) is dict else None
    if type(parts) is list and parts and type(parts[0]) is str and parts[0] and not parts[0].isspace():
        return True
    return has_text(content, BLANK_SKIP)


class Tree:
    """The parent links of a mapping: a node's ``parent``, else the node whose ``children`` list it."""

    __slots__ = ("has_child", "mapping", "order", "parent")

    def __init__(self, mapping: dict[str, Any]) -> None:
        self.mapping = mapping
        self.order = {k: i for i, k in enumerate(mapping)}
        parent: dict[str, str] = {}
        for key, node in mapping.items():
            up = node.get("parent") if isinstance(node, dict) else None
            if isinstance(up, str) and up in mapping and up != key:
                parent[key] = up
        for key, node in mapping.items():
            for child in (node.get("children") or []) if isinstance(node, dict) else []:
                if isinstance(child, str) and child in mapping and child != key:
                    parent.setdefault(child, key)
        self.parent = parent
        self.has_child = set(parent.values())

    def up(self, node: str) -> list[str]:
        """``node`` and its ancestors, nearest first (cycle-safe)."""
        path, seen = [], set()
        while node is not None and node not in seen:
            seen.add(node)
            path.append(node)
            node = self.parent.get(node)
        return path

    def latest_leaf(self, under: str | None = None) -> tuple[str | None, int]:
        """(the leaf whose branch was written last, how many leaves there are), among the leaves
        below ``under`` when it is given.

        A leaf's time is that of its nearest message with a readable ``create_time``; ties go to the
        deeper leaf, then to the later one in the mapping."""
        leaves = [k for k in self.mapping if k not in self.has_child]
        best, best_key, count = None, None, 0
        for leaf in leaves:
            path = self.up(leaf)
            if under is not None and under not in path:
                continue
            count += 1
            when = next((t for t in (_epoch((_message(self.mapping[n]) or {}).get("create_time")) for n in path)
                         if t is not None), float("-inf"))
            key = (when, len(path), self.order[leaf])
            if best_key is None or key > best_key:
                best, best_key = leaf, key
        return best, count


def current_branch(mapping: dict[str, Any], current: Any) -> tuple[list[str], str | None]:
    """(node ids from the root to the current leaf, the assumption made to find it or None)."""
    tree = Tree(mapping)
    if isinstance(current, str) and current in mapping:
        leaf, leaves = tree.latest_leaf(current) if current in tree.has_child else (None, 0)
        if leaf is None:  # a leaf, or a cycle with no leaf below it
            return tree.up(current)[::-1], None
        note = (f"current_node {current!r} is not a leaf: the branch goes on to the latest of {leaves} leaves "
                f"below it by create_time ({leaf!r})")
        return tree.up(leaf)[::-1], note
    missing = "no current_node" if current in (None, "") else f"current_node {current!r} is not in the mapping"
    if not tree.parent:
        nodes = [k for k, v in mapping.items() if _message(v) is not None]
        note = (f"{missing} and the mapping has no parent/children links: its messages are read in document "
                "order") if len(nodes) > 1 else None
        return nodes, note
    leaf, leaves = tree.latest_leaf()
    note = (f"{missing}: the current branch is taken to end at the latest of {leaves} leaves by create_time "
            f"({leaf!r}; ties go to the deeper leaf, then the later in the mapping)") if leaves > 1 else None
    return (tree.up(leaf)[::-1] if leaf is not None else []), note


def _explains(path: tuple, record: dict) -> bool:
    """A message of a mapping node, or the node itself when it looks like a message (a node with its
    own ``create_time``, as some tools write it)."""
    if len(path) >= 2 and path[-2] == "mapping":
        return "message" in record
    return len(path) >= 3 and path[-1] == "message" and path[-3] == "mapping" and isinstance(record.get("author"), dict)


def _is_conversation(entry: Any) -> bool:
    return isinstance(entry, dict) and "mapping" in entry


@register
class ChatGPT(Grammar):
    name = "chatgpt"
    detect_needs = ('"mapping"',)  # its key
    version = "3"
    structured = True
    conversations = ConversationList(own_key="mapping")
    companion_names = COMPANIONS
    description = "ChatGPT export conversations.json (mapping tree per conversation)"
    example = '[{"id": "…", "title": "…", "mapping": {"…": {"message": {"author": {"role": "user"}, …}}}}]'

    def detect(self, sample: str, name: str) -> float:
        if PurePosixPath(name).name in COMPANIONS or '"mapping"' not in sample:
            return 0.0
        return explained_share(sample, _explains, _is_conversation)

    def parse_conversation(self, pointer: str, value: Any, source: SourceText, settings: Settings
                           ) -> Iterator[ParsedSession]:
        mapping = value.get("mapping", None) if isinstance(value, dict) else False
        if mapping is not None and not isinstance(mapping, dict):
            raise ParseError(Reason.PARSE_ERROR, f"conversation at {pointer or '/'} has no mapping object",
                             path=source.name, grammar=self.name)
        yield self._conversation(pointer, value)

    def _conversation(self, pointer: str, conv: dict[str, Any]) -> ParsedSession:
        cid = conv.get("id") or conv.get("conversation_id")
        id_field = "id" if conv.get("id") else "conversation_id"
        session = ParsedSession(str(cid) if cid else None, f"source:{id_field}" if cid else "none",
                                TurnColumns(), raw=conv, pointer=pointer)
        session.title = conv.get("title") if isinstance(conv.get("title"), str) and conv.get("title") else None
        session.created, session.created_raw = read_time(conv.get("create_time"), guess_millis=False)
        times, drift = TimeNotes(), Drift()
        times.note(session.created, session.created_raw, f"{pointer}/create_time")
        drift.unknown_keys(conv, CONVERSATION_KEYS, pointer or "/")
        mapping = conv.get("mapping")
        if not isinstance(mapping, dict) or not any(_message(v) for v in mapping.values()):
            session.warnings.append("the conversation has no messages in the export")
            mapping = mapping if isinstance(mapping, dict) else {}
        branch, note = current_branch(mapping, conv.get("current_node"))
        if note:
            session.assumptions.append(note)
        for node_id in branch:
            self._node(session, pointer, node_id, mapping[node_id], conv.get("default_model_slug"), times, drift)
        self._off_branch(session, pointer, mapping, set(branch))
        for key, label in (("gizmo_id", "gizmoId"), ("conversation_template_id", "templateId")):
            if isinstance(conv.get(key), str) and conv[key]:
                session.meta[label] = conv[key]
        times.flush(session)
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        if session.turns.has_role("assistant"):
            session.assumptions.append(PROVIDER_NOTE)
        return session

    def _node(self, session: ParsedSession, base: str, node_id: str, node: Any, default_slug: Any,
              times: TimeNotes, drift: Drift) -> None:
        """One node of the current branch: a turn, a declared region, or nothing (no message)."""
        message = _message(node)
        if message is None:
            if isinstance(node, dict) and is_message_like(node):
                session.regions.append(Region(RegionKind.EMPTY_RECORD, "mapping node without a message",
                                              pointer=f"{base}/mapping/{pointer_part(node_id)}"))
            return
        pointer = f"{base}/mapping/{pointer_part(node_id)}"
        drift.unknown_keys(node, NODE_KEYS, pointer)
        drift.unknown_keys(message, MESSAGE_KEYS, f"{pointer}/message")
        kind = region_kind(message)
        content = message.get("content")
        ctype = content.get("content_type") if isinstance(content, dict) else None
        if kind is RegionKind.EMPTY_RECORD:
            session.regions.append(Region(kind, f"{_role(message)} message with nothing in it ({ctype})",
                                          pointer=pointer))
        elif kind is RegionKind.HIDDEN:
            session.regions.append(Region(
                kind, f"{_role(message)} {ctype} message hidden from the conversation by the export "
                      "(is_visually_hidden_from_conversation)", pointer=pointer, content=render_content(content)))
        else:
            self._turn(session.turns, pointer, node_id, message, default_slug, times, drift)

    @staticmethod
    def _off_branch(session: ParsedSession, base: str, mapping: dict[str, Any], on_branch: set[str]) -> None:
        """Every message off the current branch, declared with its text and where its branch leaves
        (and a message-less node that looks like a record, as an empty one)."""
        for k, v in mapping.items():
            if k not in on_branch and _message(v) is None and isinstance(v, dict) and is_message_like(v):
                session.regions.append(Region(RegionKind.EMPTY_RECORD, "mapping node without a message",
                                              pointer=f"{base}/mapping/{pointer_part(k)}"))
        off = [k for k, v in mapping.items() if k not in on_branch and _message(v) is not None]
        if not off:
            return
        tree = Tree(mapping)
        for node_id in off:
            path = tree.up(node_id)
            fork = next((i for i, n in enumerate(path) if n in on_branch), None)
            if fork is None:
                where = "on a branch not connected to the current one"
            else:
                first = _message(mapping[path[fork - 1]]) or {}
                what = {"assistant": "a regenerated answer", "user": "an edited message"}.get(_role(first),
                                                                                          "an alternative")
                where = f"{what} branching at node {path[fork]!r}"
            message = _message(mapping[node_id]) or {}
            session.regions.append(Region(RegionKind.OFF_BRANCH, f"not on the current branch: {where}",
                                          pointer=f"{base}/mapping/{pointer_part(node_id)}",
                                          content=render_content(message.get("content"))))

    @staticmethod
    def _turn(turns: TurnColumns, pointer: str, node_id: str, message: dict[str, Any], default_slug: Any,
              times: TimeNotes, drift: Drift) -> None:
        author = message.get("author") if isinstance(message.get("author"), dict) else {}
        raw_role = _role(message)
        role = ROLES.get(raw_role, "other")
        if role == "other":
            drift.note("role", raw_role, f"{pointer}/message/author")
        speaker = author.get("name") or raw_role
        metadata = _meta(message)
        model, explicit = None, True
        if role == "assistant":
            slug = metadata.get("model_slug")
            if slug:
                model = ModelRef("openai", str(slug), None)
            elif default_slug:
                model, explicit = ModelRef("openai", str(default_slug), None), False
            else:
                model = ModelRef("openai", None, None)
        text, implied, unknown = render(message.get("content"))
        text = "\n".join(x for x in (text, *_attachment_marks(metadata, text)) if x)
        for item in unknown:
            category, _, value = item.partition(":")
            drift.note("contentType" if category == "content" else "partType", value, f"{pointer}/message/content")
        recipient = message.get("recipient")
        extra: dict[str, Any] = {"messageId": message.get("id") or node_id}
        content = message.get("content")
        ctype = content.get("content_type") if isinstance(content, dict) else None
        if ctype not in (None, "text"):
            extra["contentType"] = ctype
        if metadata.get("is_visually_hidden_from_conversation"):
            extra["hidden"] = True
        if recipient not in (None, "all"):
            extra["recipient"] = recipient
        for key in ("citations", "attachments"):
            if metadata.get(key):
                extra[key] = metadata[key]
        when, raw = read_time(message.get("create_time"), guess_millis=False)
        times.note(when, raw, pointer)
        turns.add(speaker, role, text, when, raw, model, _kind(role, recipient, implied), pointer=pointer,
                  extra=extra, model_explicit=explicit)

    def count_turns(self, raw: Any) -> int:
        """The messages of the current branch that are turns, counted by walking up from its leaf."""
        mapping = raw.get("mapping") if isinstance(raw, dict) else None
        if not isinstance(mapping, dict):
            return 0
        tree = Tree(mapping)
        current = raw.get("current_node")
        if isinstance(current, str) and current in mapping:
            nodes = tree.up(tree.latest_leaf(current)[0] or current)
        elif tree.parent:
            leaf = tree.latest_leaf()[0]
            nodes = tree.up(leaf) if leaf is not None else []
        else:
            nodes = list(mapping)
        return sum(1 for n in nodes if (m := _message(mapping[n])) is not None and region_kind(m) is None)


def _attachment_marks(metadata: dict, text: str) -> list[str]:
    """``[attachment: name]`` for each file in ``metadata.attachments`` the content does not already show
    (an uploaded image is shown by its asset pointer, a PDF only here)."""
    marks = []
    for item in metadata.get("attachments") or []:
        if isinstance(item, dict) and not (item.get("id") and str(item["id"]) in text):
            marks.append(f"[attachment: {item.get('name') or item.get('id') or 'file'}]")
    return marks


def _kind(role: str, recipient: Any, implied: str | None) -> str:
    if role == "tool":
        return "tool_result"
    if recipient not in (None, "all"):
        return "tool_call"
    if implied:
        return implied
    return "system" if role == "system" else "message"
