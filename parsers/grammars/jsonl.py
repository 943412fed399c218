"""JSON Lines message logs in the OpenAI / Anthropic API style.

Two shapes, decided per line:
- a message per line: ``{"role": "user", "content": "..."}`` with optional ``model``, ``name``,
  ``timestamp``/``created``/``created_at`` (ISO text or epoch seconds), ``tool_calls``,
  ``tool_call_id``; ``content`` may be a list of blocks (text, image, tool_use, tool_result).
  One session per file, or one per value of ``session_id``/``conversation_id``/``thread_id``, in
  order of first appearance;
- a conversation per line (the fine-tuning format): ``{"messages": [...]}``, one session per line.

A line that is not valid JSON is never dropped silently: the session it falls in (the one of the
line before it) is marked partial with the line numbers, and the independent count, which counts
that session's non-blank lines, shows the gap. ``model`` is an explicit model name; a provider only
when given (``"provider"`` or ``"openai/gpt-4o"``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from models.records import ModelRef, ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.jsonload import load_json_lines
from parsers.registry import register
from parsers.timeparse import from_epoch, parse_iso

SESSION_KEYS = ("session_id", "conversation_id", "thread_id")
ROLES = {"user": "user", "human": "user", "assistant": "assistant", "model": "assistant", "system": "system",
         "developer": "system", "tool": "tool", "function": "tool"}


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        out = []
        for block in value:
            if isinstance(block, str):
                out.append(block)
            elif isinstance(block, dict):
                kind = block.get("type")
                if kind in ("text", "input_text", "output_text"):
                    out.append(str(block.get("text", "")))
                elif kind == "tool_use":
                    args = orjson.dumps(block.get("input"), option=orjson.OPT_SORT_KEYS).decode()
                    out.append(f"[tool_use: {block.get('name', '')}]\n{args}")
                elif kind == "tool_result":
                    out.append(f"[tool_result]\n{_content(block.get('content'))}")
                else:
                    out.append(f"[{kind}]")
        return "\n".join(out)
    return "" if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _time(m: dict[str, Any]) -> tuple[Any, str | None]:
    for key in ("timestamp", "created_at", "created", "time"):
        value = m.get(key)
        if value is None:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return from_epoch(value, millis=value > 1e11), str(value)
        if isinstance(value, str):
            return parse_iso(value), value
    return None, None


def _model(m: dict[str, Any]) -> ModelRef | None:
    name = m.get("model")
    if not isinstance(name, str) or not name:
        return None
    provider = m.get("provider") if isinstance(m.get("provider"), str) else None
    if provider is None and "/" in name:
        provider, name = name.split("/", 1)
    return ModelRef(provider, name, None)


def message_turn(m: dict[str, Any], lines: tuple[int, int] | None, pointer: str | None) -> Turn:
    raw_role = str(m.get("role") or "unknown")
    role = ROLES.get(raw_role, "other")
    speaker = str(m.get("name") or raw_role)
    content = _content(m.get("content"))
    extra: dict[str, Any] = {}
    kind = {"tool": "tool_result", "system": "system"}.get(role, "message")
    if m.get("tool_calls"):
        extra["toolCalls"] = m["tool_calls"]
        kind = "tool_call"
        calls = ", ".join(str((c.get("function") or {}).get("name", ""))
                          for c in m["tool_calls"] if isinstance(c, dict))
        content = f"{content}\n[tool_calls: {calls}]".lstrip("\n")
    if m.get("tool_call_id"):
        extra["toolCallId"] = m["tool_call_id"]
    when, raw = _time(m)
    return Turn(speaker, role, content, when, raw, _model(m), kind, lines, pointer, extra or None)


@register
class JsonLines(Grammar):
    name = "jsonl"
    version = "1"
    structured = True
    description = "JSON Lines messages, OpenAI/Anthropic API style (one message or one conversation per line)"
    example = '{"role": "assistant", "content": "Hello!", "model": "gpt-4o-mini", "timestamp": "2025-01-01T10:00:00Z"}'

    def detect(self, sample: str, name: str) -> float:
        lines = [ln for ln in sample.split("\n")[:50] if ln.strip()]
        if len(sample) >= 65536 and len(lines) > 1:
            lines = lines[:-1]  # the sample may end inside a line
        good = 0
        for ln in lines:
            try:
                obj = orjson.loads(ln)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj, dict) and ("role" in obj or isinstance(obj.get("messages"), list)):
                good += 1
        if not lines or good < max(1, 0.6 * len(lines)):
            return 0.0
        return 0.95 if name.lower().endswith((".jsonl", ".ndjson")) else 0.9

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        rows = load_json_lines(source.text)
        groups: dict[Any, dict[str, Any]] = {}
        current: Any = None
        conversations: list[ParsedSession] = []
        for number, obj, error in rows:
            if isinstance(obj, dict) and isinstance(obj.get("messages"), list):
                conversations.append(self._conversation(number, obj))
                continue
            if error is None and isinstance(obj, dict):
                key = next((obj[k] for k in SESSION_KEYS if obj.get(k) is not None), None)
                current = key if key is not None else current
            group = groups.setdefault(current, {"lines": [], "bad": []})
            group["lines"].append(number)
            if error is not None or not isinstance(obj, dict):
                group["bad"].append(number)
            else:
                group.setdefault("turns", []).append(message_turn(obj, (number, number), None))
        for key, group in groups.items():
            sid = None if key is None else str(key)
            session = ParsedSession(sid, "source:session field" if sid else "none", group.get("turns", []),
                                    raw=group["lines"])
            session.lines = (group["lines"][0], group["lines"][-1])
            if group["bad"]:
                shown = ", ".join(map(str, group["bad"][:20]))
                session.coverage_reason = f"{len(group['bad'])} lines are not JSON message objects (lines {shown})"
            yield session
        yield from conversations

    @staticmethod
    def _conversation(number: int, obj: dict[str, Any]) -> ParsedSession:
        key = next((obj[k] for k in SESSION_KEYS if obj.get(k) is not None), None)
        session = ParsedSession(None if key is None else str(key), "source:session field" if key else "none", [],
                                raw=obj["messages"], lines=(number, number))
        for i, m in enumerate(obj["messages"]):
            if isinstance(m, dict):
                session.turns.append(message_turn(m, (number, number), f"/messages/{i}"))
            else:
                session.coverage_reason = "some entries of messages are not objects"
        return session

    def count_turns(self, raw: Any) -> int:
        return len(raw)
