"""ChatGPT exports: ``conversations.json`` (a list of conversations, also split as
``conversations-000.json``, or inside the export zip), and a single conversation object.

Each conversation is a session (id ``id``/``conversation_id``). Its ``mapping`` is a tree: edits
and regenerations make branches. Decision: the interactions are the *current branch*, the path
from ``current_node`` up to the root, in order (without ``current_node``, the last child is followed
from the root). Messages on other branches are not included: the independent count counts every
message in the mapping, so such a session is marked partial, with a coverage reason naming how many
messages on how many branches were left out, and their node ids in ByggLogg (via meta).

Hidden system messages and tool messages are turns. ``metadata.model_slug`` is an explicit model
name; the conversation's ``default_model_slug`` is a session default (rule A2 applies to it). The
provider ``openai`` comes from the export format itself (recorded as an assumption). A null
``create_time`` gives no time. Non-text parts are rendered as readable text with a marker.
Large exports are streamed one conversation at a time (ijson), so memory follows the largest
conversation, not the file. A time that is present but unreadable (out of range) gives no time,
its raw text kept, and one warning per session. A ``mapping`` node whose message is not an object
is not a message (the export writes ``null`` for the root), so it is neither parsed nor counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import regex

from models.errors import ParseError, Reason
from models.records import ModelRef, ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._aiexport import TimeNotes, json_text, plural, read_time, stream_items
from parsers.jsonload import load_json, pointer_part
from parsers.registry import register

_SIGNATURE = regex.compile(r'"mapping"\s*:\s*\{')
_SUPPORT = regex.compile(r'"(?:current_node|content_type|author|create_time)"')
PROVIDER_NOTE = "provider 'openai' for assistant turns: the file is a ChatGPT export"
ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        kind = part.get("content_type", "part")
        if kind == "image_asset_pointer":
            return f"[image: {part.get('asset_pointer', '')}]"
        if kind in ("audio_transcription",) and isinstance(part.get("text"), str):
            return part["text"]
        if isinstance(part.get("text"), str):
            return f"[{kind}]\n{part['text']}"
        return f"[{kind}]"
    return json_text(part)


def render_content(content: Any) -> str:
    """Readable text of any message content type, with a marker for non-text kinds."""
    if not isinstance(content, dict):
        return "" if content is None else str(content)
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        return "\n".join(_part_text(p) for p in content.get("parts") or [])
    if kind == "code":
        return f"[code: {content.get('language') or 'unknown'}]\n{content.get('text', '')}"
    if kind == "execution_output":
        return f"[execution output]\n{content.get('text', '')}"
    if kind == "tether_quote":
        return f"[quote: {content.get('title', '')} {content.get('url', '')}]\n{content.get('text', '')}"
    if kind == "tether_browsing_display":
        return f"[browsing]\n{content.get('result') or content.get('summary') or ''}"
    if kind == "system_error":
        return f"[error: {content.get('name', '')}]\n{content.get('text', '')}"
    if kind == "user_editable_context":
        return "\n".join(f"[{label}]\n{content[key]}" for key, label in
                         (("user_profile", "user profile"), ("user_instructions", "user instructions"))
                         if content.get(key))
    if kind == "thoughts":  # reasoning models: a list of {summary, content}
        steps = [t for t in content.get("thoughts") or [] if isinstance(t, dict)]
        return "\n".join(["[thoughts]"] + [
            "\n".join(x for x in (t.get("summary"), t.get("content")) if isinstance(x, str) and x) for t in steps])
    if kind == "reasoning_recap":
        return f"[reasoning recap] {content.get('content') or ''}".rstrip()
    rest = {k: v for k, v in content.items() if k != "content_type"}
    return f"[{kind}]\n{json_text(rest)}"


def current_branch(mapping: dict[str, Any], current: str | None) -> list[str]:
    """Node ids from the root to the current node (cycle-safe)."""
    path: list[str] = []
    seen: set[str] = set()
    node = current if current in mapping else None
    if node is None:
        roots = [k for k, v in mapping.items() if not isinstance(v, dict) or v.get("parent") not in mapping]
        node = roots[0] if roots else None
        while node is not None and node not in seen:
            seen.add(node)
            path.append(node)
            children = [c for c in (mapping[node].get("children") or []) if c in mapping]
            node = children[-1] if children else None
        return path
    while node is not None and node in mapping and node not in seen:
        seen.add(node)
        path.append(node)
        node = mapping[node].get("parent")
    return path[::-1]


@register
class ChatGPT(Grammar):
    name = "chatgpt"
    version = "2"
    structured = True
    streams = True
    description = "ChatGPT export conversations.json (mapping tree per conversation)"
    example = '[{"id": "…", "title": "…", "mapping": {"…": {"message": {"author": {"role": "user"}, …}}}}]'

    def detect(self, sample: str, name: str) -> float:
        if not _SIGNATURE.search(sample) or not _SUPPORT.search(sample):
            return 0.0
        return 0.95 if "conversations" in name.lower() or '"current_node"' in sample else 0.9

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        items = data if isinstance(data, list) else [data]
        yield from self._sessions(items, source.name)

    def parse_stream(self, fp: BinaryIO, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        yield from self._sessions(stream_items(fp, source.name, self.name), source.name)

    def _sessions(self, items: Iterable[Any], name: str) -> Iterator[ParsedSession]:
        for index, conv in enumerate(items):
            if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
                raise ParseError(Reason.PARSE_ERROR, f"conversation {index} has no mapping object",
                                 path=name, grammar=self.name)
            yield self._conversation(index, conv)

    def _conversation(self, index: int, conv: dict[str, Any]) -> ParsedSession:
        mapping: dict[str, Any] = conv["mapping"]
        cid = conv.get("id") or conv.get("conversation_id")
        id_field = "id" if conv.get("id") else "conversation_id"
        session = ParsedSession(str(cid) if cid else None, f"source:{id_field}" if cid else "none", [], raw=conv)
        session.title = conv.get("title") if isinstance(conv.get("title"), str) and conv.get("title") else None
        session.created, session.created_raw = read_time(conv.get("create_time"), guess_millis=False)
        session.pointer = f"/{index}"
        times = TimeNotes()
        times.note(session.created, session.created_raw, f"/{index}/create_time")
        default_slug = conv.get("default_model_slug")
        branch = current_branch(mapping, conv.get("current_node"))
        on_branch = set(branch)
        for node_id in branch:
            node = mapping[node_id]
            message = node.get("message") if isinstance(node, dict) else None
            if isinstance(message, dict):
                session.turns.append(self._turn(index, node_id, message, default_slug, times))
        self._note_branches(session, mapping, on_branch)
        forked = any(isinstance(v, dict) and len(v.get("children") or []) > 1 for v in mapping.values())
        if conv.get("current_node") not in mapping and forked:
            session.assumptions.append("no usable current_node: the branch followed is the last child from the root")
        for key, label in (("gizmo_id", "gizmoId"), ("conversation_template_id", "templateId")):
            if isinstance(conv.get(key), str) and conv[key]:
                session.meta[label] = conv[key]
        times.flush(session)
        if any(t.role == "assistant" for t in session.turns):
            session.assumptions.append(PROVIDER_NOTE)
        return session

    @staticmethod
    def _note_branches(session: ParsedSession, mapping: dict[str, Any], on_branch: set[str]) -> None:
        """Coverage reason and node ids for the messages the current-branch decision leaves out."""
        off = sorted(k for k, v in mapping.items()
                     if k not in on_branch and isinstance(v, dict) and isinstance(v.get("message"), dict))
        if not off:
            return
        # Each leaf off the current path ends one alternative version of the conversation.
        leaves = sum(1 for k, v in mapping.items() if k not in on_branch and isinstance(v, dict)
                     and not any(c in mapping for c in v.get("children") or []))
        shown = ", ".join(off[:10]) + (f" and {len(off) - 10} more" if len(off) > 10 else "")
        session.coverage_reason = (
            f"{plural(len(off), 'message')} on {plural(max(1, leaves), 'alternative branch', 'es')} "
            f"(edits/regenerations) {'is' if len(off) == 1 else 'are'} not on the current branch: {shown}"
        )
        session.meta["offBranchNodes"] = off

    @staticmethod
    def _turn(index: int, node_id: str, message: dict[str, Any], default_slug: str | None,
              times: TimeNotes) -> Turn:
        author = message.get("author") if isinstance(message.get("author"), dict) else {}
        raw_role = author.get("role") or "unknown"
        role = ROLES.get(raw_role, "other")
        speaker = author.get("name") or raw_role
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        model, explicit = None, True
        if role == "assistant":
            slug = metadata.get("model_slug")
            if slug:
                model = ModelRef("openai", str(slug), None)
            elif default_slug:
                model, explicit = ModelRef("openai", str(default_slug), None), False
            else:
                model = ModelRef("openai", None, None)
        recipient = message.get("recipient")
        if role == "tool":
            kind = "tool_result"
        elif recipient not in (None, "all"):
            kind = "tool_call"
        elif role == "system":
            kind = "system"
        else:
            kind = "message"
        extra: dict[str, Any] = {"messageId": message.get("id") or node_id}
        if metadata.get("is_visually_hidden_from_conversation"):
            extra["hidden"] = True
        if recipient not in (None, "all"):
            extra["recipient"] = recipient
        for key in ("citations", "attachments"):
            if metadata.get(key):
                extra[key] = metadata[key]
        pointer = f"/{index}/mapping/{pointer_part(node_id)}"
        when, raw = read_time(message.get("create_time"), guess_millis=False)
        times.note(when, raw, pointer)
        return Turn(speaker, role, render_content(message.get("content")), when, raw, model, kind,
                    pointer=pointer, extra=extra, model_explicit=explicit)

    def count_turns(self, raw: Any) -> int:
        """Every message in the mapping, on any branch."""
        return sum(1 for v in raw["mapping"].values() if isinstance(v, dict) and isinstance(v.get("message"), dict))
