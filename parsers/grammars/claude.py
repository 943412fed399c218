"""Claude.ai exports: ``conversations.json`` (a list of conversations) or a single conversation object.

Each conversation is a session (id ``uuid``, title ``name``, time ``created_at``); each entry of
``chat_messages`` is one turn, human -> speaker "Human" (user), assistant -> "Claude" (assistant),
any other sender kept as written (role other). Content blocks are rendered in order: text as it is,
``tool_use`` as ``[tool_use: name]`` plus its input JSON, ``tool_result`` as ``[tool_result: name]``
plus its text, ``thinking`` as ``[thinking]`` plus the thought, anything else as ``[type]``; without
blocks, the message's ``text``. Attachments and files follow as ``[attachment: name]`` (with the
extracted text the model was given) and ``[file: name]`` lines and are listed in ``extra``. A
message with a ``tool_use`` block is a tool_call, one with only ``tool_result`` blocks a tool_result.
The provider ``anthropic`` comes from the export format (an assumption); a model name only when
the message or the conversation has a ``model`` field. An entry of ``chat_messages`` that is not
an object is still a turn (a System notice kept verbatim). Big exports stream one conversation
at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import regex

from models.errors import ParseError, Reason
from models.records import ModelRef, ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._aiexport import (
    TimeNotes,
    compact,
    json_text,
    malformed_turn,
    odd_warning,
    read_time,
    stream_items,
)
from parsers.jsonload import load_json
from parsers.registry import register

_SIGNATURE = regex.compile(r'"chat_messages"\s*:')
_SUPPORT = regex.compile(r'"sender"\s*:\s*"(?:human|assistant)"|"uuid"\s*:')
SENDERS = {"human": ("Human", "user"), "assistant": ("Claude", "assistant")}
PROVIDER_NOTE = "provider 'anthropic' for assistant turns: the file is a Claude export"


def _tool_result_text(inner: Any) -> str:
    if isinstance(inner, list):
        return "\n".join(str(c.get("text", "")) if isinstance(c, dict) and c.get("type", "text") == "text"
                         else (f"[{c.get('type')}]" if isinstance(c, dict) else str(c)) for c in inner)
    return inner if isinstance(inner, str) else ("" if inner is None else json_text(inner))


def render_blocks(message: dict[str, Any]) -> str:
    """The message's content blocks as readable text, in order; its ``text`` when it has none."""
    blocks = message.get("content")
    if not isinstance(blocks, list) or not blocks:
        return message.get("text") if isinstance(message.get("text"), str) else ""
    out = []
    for block in blocks:
        if not isinstance(block, dict):
            out.append(block if isinstance(block, str) else json_text(block))
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(str(block.get("text", "")))
        elif kind == "tool_use":
            out.append(f"[tool_use: {block.get('name', '')}]\n{json_text(block.get('input'))}")
        elif kind == "tool_result":
            label = "tool_result" + (f": {block['name']}" if block.get("name") else "")
            label += " (error)" if block.get("is_error") else ""
            out.append(f"[{label}]\n{_tool_result_text(block.get('content'))}")
        elif kind == "thinking":
            out.append(f"[thinking]\n{block.get('thinking', '')}")
        else:
            out.append(f"[{kind}]")
    return "\n".join(out)


def _items(m: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = m.get(key)
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


@register
class Claude(Grammar):
    name = "claude"
    version = "2"
    structured = True
    streams = True
    description = "Claude.ai export conversations.json (chat_messages per conversation)"
    example = '[{"uuid": "…", "name": "…", "chat_messages": [{"sender": "human", "text": "…"}]}]'

    def detect(self, sample: str, name: str) -> float:
        return 0.95 if _SIGNATURE.search(sample) and _SUPPORT.search(sample) else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        yield from self._sessions(data if isinstance(data, list) else [data], source.name)

    def parse_stream(self, fp: BinaryIO, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        yield from self._sessions(stream_items(fp, source.name, self.name), source.name)

    def _sessions(self, items: Iterable[Any], name: str) -> Iterator[ParsedSession]:
        for index, conv in enumerate(items):
            if not isinstance(conv, dict) or not isinstance(conv.get("chat_messages"), list):
                raise ParseError(Reason.PARSE_ERROR, f"conversation {index} has no chat_messages list",
                                 path=name, grammar=self.name)
            yield self._conversation(index, conv)

    def _conversation(self, index: int, conv: dict[str, Any]) -> ParsedSession:
        uid = conv.get("uuid")
        session = ParsedSession(str(uid) if uid else None, "source:uuid" if uid else "none", [],
                                raw=conv["chat_messages"], pointer=f"/{index}")
        session.title = conv.get("name") if isinstance(conv.get("name"), str) and conv.get("name") else None
        times = TimeNotes()
        session.created, session.created_raw = read_time(conv.get("created_at"))
        times.note(session.created, session.created_raw, f"/{index}/created_at")
        model_name = conv.get("model") if isinstance(conv.get("model"), str) and conv.get("model") else None
        odd = 0
        for i, m in enumerate(conv["chat_messages"]):
            pointer = f"/{index}/chat_messages/{i}"
            if isinstance(m, dict):
                session.turns.append(self._turn(m, pointer, model_name, times))
            else:
                odd += 1
                session.turns.append(malformed_turn(m, pointer))
        if odd:
            session.warnings.append(odd_warning(odd, "chat_messages"))
        times.flush(session)
        if isinstance(conv.get("updated_at"), str):
            session.meta["updatedRaw"] = conv["updated_at"]
        if any(t.role == "assistant" for t in session.turns):
            session.assumptions.append(PROVIDER_NOTE)
        return session

    @staticmethod
    def _turn(m: dict[str, Any], pointer: str, model_name: str | None, times: TimeNotes) -> Turn:
        sender = m.get("sender")
        speaker, role = SENDERS.get(str(sender), (str(sender) if sender else "unknown", "other"))
        attachments, files, marks = [], [], []
        for item in _items(m, "attachments"):
            fname = item.get("file_name") or item.get("name") or "attachment"
            attachments.append({k: item[k] for k in ("file_name", "file_type", "file_size") if item.get(k)})
            body = item.get("extracted_content")
            marks.append(f"[attachment: {fname}]" + (f"\n{body}" if isinstance(body, str) and body else ""))
        for item in _items(m, "files"):
            fname = item.get("file_name") or item.get("name") or item.get("file_uuid") or "file"
            files.append(fname)
            marks.append(f"[file: {fname}]")
        content = "\n".join(x for x in (render_blocks(m), *marks) if x)
        kinds = {b.get("type") for b in m.get("content") or [] if isinstance(b, dict)}
        if "tool_use" in kinds:
            kind = "tool_call"
        elif "tool_result" in kinds and kinds <= {"tool_result"}:
            kind = "tool_result"
        else:
            kind = "message"
        own_model = m.get("model") if isinstance(m.get("model"), str) and m.get("model") else None
        model = ModelRef("anthropic", own_model or model_name, None) if role == "assistant" else None
        when, raw = read_time(m.get("created_at"))
        times.note(when, raw, pointer)
        extra = compact({"uuid": m.get("uuid"), "attachments": attachments, "files": files,
                         "parentUuid": m.get("parent_message_uuid")})
        return Turn(speaker, role, content, when, raw, model, kind, pointer=pointer, extra=extra)

    def count_turns(self, raw: Any) -> int:
        """Every entry of chat_messages."""
        return len(raw)
