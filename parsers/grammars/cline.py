"""Cline and Roo Code task histories: ``tasks/<task id>/api_conversation_history.json``.

The file is the list of Anthropic-style messages the extension sent and received
(``{"role", "content": str | [blocks]}``, newer versions with ``modelInfo`` and ``metrics``, some
with ``ts``). The session id is the task folder's name (the file holds no id). Every content
block is one interaction, pointer ``/<i>/content/<j>`` (a string content ``/<i>``):

- a user message made only of text blocks that are not tool results (the task or a new prompt,
  with the ``<environment_details>`` the extension appends to it) is one User interaction at
  ``/<i>``, its blocks joined by a blank line: it is one message as sent;
- in other user messages, a ``[tool for 'arg'] Result:`` text block is that tool's result (role
  tool, speaker the tool, ``extra.callId`` of the earliest call of that tool not yet answered), a
  block that is only the extension's own context (``<environment_details>``, ``# task_progress``
  reminders) is a System interaction of the extension with ``extra.injected``, any other text is
  the user's (``<feedback>`` given with a result);
- user ``tool_result`` and ``image`` blocks: tool result / image marker;
- assistant ``text`` (Cline), ``thinking`` (kind thinking), ``tool_use`` (kind tool_call, content
  the input as compact JSON); an assistant text that is an XML tool call of the older protocol
  (``<write_to_file><path>…``) is a tool_call with ``extra.tool``, its text as written.

The model is ``modelInfo.modelId`` with ``modelInfo.providerId`` (split by ``split_model``); older
files name none. ``metrics.tokens`` are summed into ``tokenUsage``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.drift import Drift
from parsers.grammars._agentlog import split_model, text_of
from parsers.grammars._aiexport import TimeNotes, compact, json_text, read_time
from parsers.jsonload import load_json
from parsers.registry import register

AGENT = "Cline"
FILE_NAME = "api_conversation_history.json"
_SIGNATURE = regex.compile(r'\A\s*\[\s*\{\s*"role"\s*:\s*"user"\s*,\s*"content"\s*:')
_MARKERS = regex.compile(r"<task>|<environment_details>|\"modelInfo\"|\] Result:")
_RESULT = regex.compile(r"^\[(?P<tool>[\w-]+)(?: for '(?P<arg>[^\n]*?)')?\] Result:")
_INJECTED = regex.compile(r"^\s*(?:<environment_details>|# task_progress|# TODO LIST)")
XML_TOOLS = frozenset({
    "read_file", "write_to_file", "replace_in_file", "execute_command", "search_files", "list_files",
    "list_code_definition_names", "browser_action", "use_mcp_tool", "access_mcp_resource", "ask_followup_question",
    "attempt_completion", "new_task", "plan_mode_respond", "apply_diff", "insert_content", "search_and_replace",
})
_XML_CALL = regex.compile(r"<(?P<tool>[a-z_]+)>\s*\n?(?:.*?)</(?P=tool)>", regex.DOTALL)


@dataclass(slots=True)
class _State:
    turns: list[Turn] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    pending: dict[str, list[str]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    times: TimeNotes = field(default_factory=TimeNotes)
    drift: Drift = field(default_factory=Drift)


def _task_id(name: str) -> str | None:
    path = PurePosixPath(name)
    return path.parent.name or None if path.name == FILE_NAME and len(path.parts) > 1 else None


def _plain(content: Any) -> bool:
    """A user message of text blocks only, none of them a tool result."""
    return isinstance(content, list) and bool(content) and all(
        isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        and not _RESULT.match(b["text"]) for b in content)


def _xml_tool(text: str) -> str | None:
    for m in _XML_CALL.finditer(text):
        if m["tool"] in XML_TOOLS:
            return m["tool"]
    return None


@register
class Cline(Grammar):
    name = "cline"
    version = "1"
    structured = True
    description = "Cline / Roo Code task history (tasks/<id>/api_conversation_history.json)"
    example = '[{"role": "user", "content": [{"type": "text", "text": "<task>…</task>"}]}, {"role": "assistant", …}]'

    def detect(self, sample: str, name: str) -> float:
        if not _SIGNATURE.search(sample):
            return 0.0
        return 0.95 if name.endswith(FILE_NAME) or _MARKERS.search(sample) else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        messages = data if isinstance(data, list) else []
        state = _State()
        for i, m in enumerate(messages):
            if isinstance(m, dict):
                self._message(state, m, i)
            else:
                state.turns.append(Turn("System", "system", text_of(m), kind="notice", pointer=f"/{i}",
                                        extra={"malformedEntry": True}))
        sid = _task_id(source.name)
        session = ParsedSession(sid, "file-path: task folder" if sid else "none", state.turns, raw=messages,
                                pointer="", regions=state.regions)
        session.meta = compact({"agent": "cline", "tokenUsage": dict(sorted(state.tokens.items())),
                                "formatDrift": state.drift.as_meta() if state.drift else None}) or {}
        state.times.flush(session)
        yield session

    def _message(self, state: _State, m: dict[str, Any], i: int) -> None:
        role = m.get("role")
        info = m.get("modelInfo") if isinstance(m.get("modelInfo"), dict) else {}
        model = split_model(info.get("providerId") or None, info.get("modelId")) if role == "assistant" else None
        tokens = (m.get("metrics") or {}).get("tokens") if isinstance(m.get("metrics"), dict) else None
        for k, v in (tokens or {}).items():
            if isinstance(v, int) and not isinstance(v, bool):
                state.tokens[k] = state.tokens.get(k, 0) + v
        when, raw = read_time(m.get("ts"))
        state.times.note(when, raw, f"/{i}")
        content = m.get("content")
        if isinstance(content, str):
            self._text(state, str(role), content, f"/{i}", when, raw, model)
        elif role == "user" and _plain(content):
            text = "\n\n".join(text_of(b.get("text")) for b in content)
            state.turns.append(Turn("User", "user", text, when, raw, None, "message", pointer=f"/{i}"))
        elif isinstance(content, list) and content:
            for j, block in enumerate(content):
                self._block(state, str(role), block, f"/{i}/content/{j}", when, raw, model)
        else:
            state.regions.append(Region(RegionKind.EMPTY_RECORD, "message with no content", pointer=f"/{i}"))

    def _block(self, state: _State, role: str, block: Any, at: str, when, raw, model) -> None:
        kind = block.get("type") if isinstance(block, dict) else "text"
        if kind == "text":
            self._text(state, role, text_of(block.get("text") if isinstance(block, dict) else block), at, when,
                       raw, model)
        elif kind == "thinking":
            state.turns.append(Turn(AGENT, "assistant", str(block.get("thinking", "")), when, raw, model, "thinking",
                                    pointer=at))
        elif kind == "tool_use":
            name, cid = str(block.get("name") or "tool"), block.get("id")
            state.pending.setdefault(name, []).append(str(cid))
            if isinstance(cid, str):
                state.names[cid] = name
            state.turns.append(Turn(AGENT, "assistant", json_text(block.get("input")), when, raw, model,
                                    "tool_call", pointer=at, extra=compact({"tool": name, "callId": cid})))
        elif kind == "tool_result":
            cid = str(block.get("tool_use_id"))
            name = state.names.get(cid, "tool")
            if cid in state.pending.get(name, []):
                state.pending[name].remove(cid)
            state.turns.append(Turn(name, "tool", text_of(block.get("content")), when, raw, None, "tool_result",
                                    pointer=at, extra=compact({"callId": cid, "isError": block.get("is_error")})))
        elif kind == "image":
            state.turns.append(Turn("User", "user", "[image]", when, raw, None, "image", pointer=at))
        else:
            state.drift.note("contentType", str(kind), at)
            state.turns.append(Turn(role, "other", text_of(block.get("text") or block.get("content")) or f"[{kind}]",
                                    when, raw, None, str(kind), pointer=at))

    def _text(self, state: _State, role: str, text: str, at: str, when, raw, model) -> None:
        if role == "assistant":
            tool = _xml_tool(text)
            extra = {"tool": tool} if tool else None
            state.turns.append(Turn(AGENT, "assistant", text, when, raw, model, "tool_call" if tool else "message",
                                    pointer=at, extra=extra))
            return
        result = _RESULT.match(text)
        if result:
            name = result["tool"]
            calls = state.pending.get(name) or []
            cid = calls.pop(0) if calls else None
            state.turns.append(Turn(name, "tool", text, when, raw, None, "tool_result", pointer=at,
                                    extra=compact({"callId": cid, "tool": name if cid is None else None})))
        elif _INJECTED.match(text):
            state.turns.append(Turn(AGENT, "system", text, when, raw, None, "message", pointer=at,
                                    extra={"injected": True}))
        else:
            state.turns.append(Turn("User", "user", text, when, raw, None, "message", pointer=at))

    def count_turns(self, raw: Any) -> int:
        """Every content block of every message (a string content, or a user message of plain text
        blocks, counts one), and every entry that is not an object."""
        count = 0
        for m in raw if isinstance(raw, list) else []:
            content = m.get("content") if isinstance(m, dict) else None
            if not isinstance(m, dict) or isinstance(content, str) or (m.get("role") == "user" and _plain(content)):
                count += 1
            elif isinstance(content, list):
                count += len(content)
        return count
