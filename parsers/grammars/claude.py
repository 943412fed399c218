"""Claude.ai exports: ``conversations.json`` (a list of conversations) or a single conversation object.

Each conversation is a session (id ``uuid``, title ``name``, time ``created_at``); each entry of
``chat_messages`` is one turn, human -> speaker "Human" (user), assistant -> "Claude" (assistant).
Content blocks are rendered in order: text as it is, ``tool_use`` as ``[tool_use: name]`` plus its
input JSON, ``tool_result`` as ``[tool_result]`` plus its text, ``thinking`` as ``[thinking]``.
Attachments and files follow as ``[attachment: name]`` lines (with the extracted text the model
was given) and are listed in the source fields. The provider ``anthropic`` comes from the export
format (an assumption in ByggLogg); a model name only when the export has a ``model`` field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import regex

from models.errors import ParseError, Reason
from models.records import ModelRef, ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.jsonload import load_json
from parsers.registry import register
from parsers.timeparse import parse_iso

_SIGNATURE = regex.compile(r'"chat_messages"\s*:')
_SUPPORT = regex.compile(r'"sender"\s*:\s*"(?:human|assistant)"|"uuid"\s*:')
SENDERS = {"human": ("Human", "user"), "assistant": ("Claude", "assistant")}
PROVIDER_NOTE = "provider 'anthropic' for assistant turns: the file is a Claude export"


def render_blocks(message: dict[str, Any]) -> str:
    blocks = message.get("content")
    if not isinstance(blocks, list) or not blocks:
        return message.get("text") if isinstance(message.get("text"), str) else ""
    out = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(str(block.get("text", "")))
        elif kind == "tool_use":
            args = orjson.dumps(block.get("input"), option=orjson.OPT_SORT_KEYS).decode()
            out.append(f"[tool_use: {block.get('name', '')}]\n{args}")
        elif kind == "tool_result":
            inner = block.get("content")
            text = ("\n".join(str(c.get("text", "")) for c in inner if isinstance(c, dict))
                    if isinstance(inner, list) else str(inner or ""))
            out.append(f"[tool_result{': ' + block['name'] if block.get('name') else ''}]\n{text}")
        elif kind == "thinking":
            out.append(f"[thinking]\n{block.get('thinking', '')}")
        else:
            out.append(f"[{kind}]")
    return "\n".join(out)


@register
class Claude(Grammar):
    name = "claude"
    version = "1"
    structured = True
    description = "Claude.ai export conversations.json (chat_messages per conversation)"
    example = '[{"uuid": "…", "name": "…", "chat_messages": [{"sender": "human", "text": "…"}]}]'

    def detect(self, sample: str, name: str) -> float:
        return 0.95 if _SIGNATURE.search(sample) and _SUPPORT.search(sample) else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        items = data if isinstance(data, list) else [data]
        for index, conv in enumerate(items):
            if not isinstance(conv, dict) or not isinstance(conv.get("chat_messages"), list):
                raise ParseError(Reason.PARSE_ERROR, f"conversation {index} has no chat_messages list",
                                 path=source.name, grammar=self.name)
            yield self._conversation(index, conv)

    def _conversation(self, index: int, conv: dict[str, Any]) -> ParsedSession:
        uid = conv.get("uuid")
        session = ParsedSession(str(uid) if uid else None, "source:uuid" if uid else "none", [],
                                raw=conv["chat_messages"], pointer=f"/{index}")
        session.title = conv.get("name") if isinstance(conv.get("name"), str) and conv.get("name") else None
        if isinstance(conv.get("created_at"), str):
            session.created, session.created_raw = parse_iso(conv["created_at"]), conv["created_at"]
        model_name = conv.get("model") if isinstance(conv.get("model"), str) else None
        for i, m in enumerate(conv["chat_messages"]):
            session.turns.append(self._turn(m, f"/{index}/chat_messages/{i}", model_name))
        if any(t.role == "assistant" for t in session.turns):
            session.assumptions.append(PROVIDER_NOTE)
        return session

    @staticmethod
    def _turn(m: Any, pointer: str, model_name: str | None) -> Turn:
        if not isinstance(m, dict):
            return Turn("unknown", "other", str(m), pointer=pointer, kind="unknown")
        speaker, role = SENDERS.get(str(m.get("sender")), (str(m.get("sender") or "unknown"), "other"))
        content = render_blocks(m)
        extra: dict[str, Any] = {"uuid": m.get("uuid")}
        files = []
        for item in (m.get("attachments") or []) + (m.get("files") or []):
            if isinstance(item, dict):
                fname = item.get("file_name") or item.get("name") or "file"
                files.append({k: item.get(k) for k in ("file_name", "file_type", "file_size") if item.get(k)})
                body = item.get("extracted_content")
                content += f"\n[attachment: {fname}]" + (f"\n{body}" if isinstance(body, str) and body else "")
        if files:
            extra["attachments"] = files
        kinds = {b.get("type") for b in (m.get("content") or []) if isinstance(b, dict)}
        kind = "tool_call" if "tool_use" in kinds else ("tool_result" if "tool_result" in kinds else "message")
        raw = m.get("created_at")
        model = ModelRef("anthropic", model_name, None) if role == "assistant" else None
        return Turn(speaker, role, content.lstrip("\n"), parse_iso(raw) if isinstance(raw, str) else None,
                    raw if isinstance(raw, str) else None, model, kind, pointer=pointer, extra=extra)

    def count_turns(self, raw: Any) -> int:
        return len(raw)
