"""OpenAI Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Current layout: one ``{"timestamp", "type", "payload"}`` record per line, type ``session_meta``
(the session's id, cwd, cli_version, git; a session header), ``turn_context`` (cwd, model,
policies; metadata that sets the model of the turns after it), ``response_item`` (what the model
saw and said), ``event_msg`` (what the CLI showed) and ``compacted`` (a summary; metadata).
Older layout (2025 spring): a bare meta object ``{"id", "timestamp", "instructions"}`` first, then
bare response items and ``{"record_type": "state"}`` lines. One session per distinct session id,
in order; lines before the first meta belong to the first session.

Mapping (the document is the list of parsed lines, see ``_agentlog``); one interaction per record,
pointer ``/<line>``:

- ``message``: user -> User, assistant -> Codex (kind message), developer/system -> System; a user
  message that is only the CLI's own ``<environment_context>``/``<user_instructions>`` (or an
  ``AGENTS.md`` preamble) is a System interaction of the CLI with ``extra.injected``;
- ``reasoning``: Codex, kind thinking, the summary texts (and ``content`` text when logged), a
  marker when only encrypted content is kept;
- ``function_call``, ``custom_tool_call``, ``local_shell_call``, ``web_search_call``: Codex, kind
  tool_call, content the arguments/input as logged, ``extra`` tool and callId;
- ``function_call_output``, ``custom_tool_call_output``: role tool, speaker the tool's name, kind
  tool_result, content the output text (unwrapped from its ``{"output", "metadata"}`` JSON),
  ``extra`` exitCode and durationSeconds when logged;
- ``event_msg`` ``user_message``/``agent_message``/``agent_reasoning``: the CLI's echo of a
  response item with the same text is a declared duplicate (never counted twice); an echo with no
  such item (older CLIs logged some only as events) is an interaction; ``error`` and
  ``stream_error`` are System interactions; every other event (token_count, exec and patch
  begin/end, task started/complete...) is metadata (token_count's last total is the session's
  ``tokenUsage``).

The model is ``turn_context.model`` (then the meta's ``model`` when present) with provider
``model_provider`` (default ``openai``), split by ``split_model``. Unknown record, item and event
types are format drift; one with text is still an interaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import regex

from models.records import ModelRef, ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.drift import Drift
from parsers.grammars._agentlog import bad_line_turn, masked, read_lines, record_share, split_model, text_of
from parsers.grammars._aiexport import TimeNotes, compact, json_text, read_time
from parsers.registry import register

AGENT = "Codex CLI"
RECORD_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
CALLS = {"function_call": "arguments", "custom_tool_call": "input", "local_shell_call": "action",
         "web_search_call": "action"}
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
ITEM_TYPES = frozenset({"message", "reasoning", *CALLS, *OUTPUTS})
ECHOES = {"user_message": ("message", "user"), "agent_message": ("message", "assistant"),
          "agent_reasoning": ("thinking", "assistant"), "agent_reasoning_raw_content": ("thinking", "assistant")}
NOTICES = frozenset({"error", "stream_error"})
EVENTS = frozenset({
    "token_count", "task_started", "task_complete", "turn_aborted", "exec_command_begin", "exec_command_end",
    "exec_command_output_delta", "patch_apply_begin", "patch_apply_end", "turn_diff", "mcp_tool_call_begin",
    "mcp_tool_call_end", "web_search_begin", "web_search_end", "agent_reasoning_section_break", "plan_update",
    "get_history_entry_response", "background_event", "session_configured", "entered_review_mode",
    "exited_review_mode", "view_image_tool_call", "shutdown_complete",
})
ROLES = {"user": ("User", "user"), "assistant": ("Codex", "assistant"), "developer": ("System", "system"),
         "system": ("System", "system")}
_INJECTED = regex.compile(r"^\s*(?:<(?P<tag>environment_context|user_instructions)>|# AGENTS\.md instructions)")
_LONG_FIRST = regex.compile(
    r'\A\{"timestamp":"[^"]{10,40}","type":"(?:session_meta|response_item|event_msg|turn_context)"')
_WALL = regex.compile(r"^Exit code: (?P<code>-?\d+)\nWall time: (?P<secs>[\d.]+) seconds", regex.MULTILINE)
_EXITED = regex.compile(r"^Wall time: (?P<secs>[\d.]+) seconds\nProcess exited with code (?P<code>-?\d+)",
                        regex.MULTILINE)


def _unwrap(obj: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(record type, payload) for both layouts."""
    kind = obj.get("type")
    if kind in RECORD_TYPES and isinstance(obj.get("payload"), dict):
        return kind, obj["payload"]
    if "record_type" in obj:
        return "state", obj
    if kind is None and "id" in obj and "timestamp" in obj:
        return "session_meta", obj
    if kind in ITEM_TYPES:
        return "response_item", obj
    return str(kind), obj


def _explains(obj: dict[str, Any]) -> bool:
    kind, _ = _unwrap(obj)
    return kind in RECORD_TYPES or kind == "state"


def _signature(obj: dict[str, Any]) -> bool:
    if obj.get("type") == "session_meta" and isinstance(obj.get("payload"), dict):
        return True
    if obj.get("type") in RECORD_TYPES and isinstance(obj.get("payload"), dict) and "timestamp" in obj:
        return True
    return "record_type" in obj or ("type" not in obj and "id" in obj and "instructions" in obj)


@dataclass(slots=True)
class _Session:
    sid: str | None
    lines: list[int] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _State:
    provider: str = "openai"
    model: ModelRef | None = None
    tools: dict[str, str] = field(default_factory=dict)
    echoes: dict[tuple[str, str, str], int] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    times: TimeNotes = field(default_factory=TimeNotes)
    drift: Drift = field(default_factory=Drift)


def _item_texts(payload: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(kind, role, text) keys an event may echo a response item with: a message's text; a
    reasoning item's whole text and, when its summary has several parts, each part (the CLI
    shows one agent_reasoning event per part)."""
    kind = payload.get("type")
    if kind == "message" and payload.get("role") in ("user", "assistant"):
        return [("message", payload["role"], text_of(payload.get("content")).strip())]
    if kind != "reasoning":
        return []
    keys = [("thinking", "assistant", _reasoning(payload).strip())]
    parts = payload.get("summary") if isinstance(payload.get("summary"), list) else []
    if len(parts) > 1:
        keys += [("thinking", "assistant", text_of([p]).strip()) for p in parts]
    return keys


def _echo_table(values: list[tuple[str, dict[str, Any]]]) -> dict[tuple[str, str, str], int]:
    """How many times each echo key is available from the session's response items."""
    items: dict[tuple[str, str, str], int] = {}
    for kind, payload in values:
        for key in _item_texts(payload) if kind == "response_item" else ():
            items[key] = items.get(key, 0) + 1
    return items


def _reasoning(payload: dict[str, Any]) -> str:
    parts = [text_of(payload.get("summary")), text_of(payload.get("content"))]
    text = "\n".join(p for p in parts if p)
    return text or ("[encrypted reasoning]" if payload.get("encrypted_content") else "")


def _echo_key(payload: dict[str, Any]) -> tuple[str, str, str] | None:
    kind = payload.get("type")
    if kind not in ECHOES:
        return None
    text = payload.get("message") if kind in ("user_message", "agent_message") else payload.get("text")
    return (*ECHOES[kind], str(text or "").strip())


def _split(doc: list[Any]) -> list[_Session]:
    sessions: dict[str | None, _Session] = {}
    current: _Session | None = None
    pending: list[int] = []
    for i, obj in enumerate(doc):
        if obj is None:
            continue
        if isinstance(obj, dict):
            kind, payload = _unwrap(obj)
            if kind == "session_meta" and isinstance(payload.get("id"), str):
                current = sessions.setdefault(payload["id"], _Session(payload["id"]))
                current.lines.extend(pending)
                pending = []
        if current is None:
            pending.append(i)
        else:
            current.lines.append(i)
    if pending:
        sessions.setdefault(None, _Session(None)).lines.extend(pending)
    return list(sessions.values())


@register
class Codex(Grammar):
    name = "codex"
    # the signature records' keys, or a long first record's opening
    detect_needs = ('{"timestamp":"', '"payload"', '"record_type"', '"instructions"')
    version = "1"
    structured = True
    description = "OpenAI Codex CLI rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)"
    example = ('{"timestamp": "2025-10-29T00:59:38.317Z", "type": "response_item", "payload": {"type": "message", '
               '"role": "user", "content": [{"type": "input_text", "text": "…"}]}}')

    def detect(self, sample: str, name: str) -> float:
        return record_share(sample, _explains, _signature, _LONG_FIRST)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        doc = read_lines(source.text)
        for group in _split(doc):
            yield self._session(doc, group)

    def _session(self, doc: list[Any], group: _Session) -> ParsedSession:
        state = _State()
        state.echoes = _echo_table([_unwrap(doc[i]) for i in group.lines if isinstance(doc[i], dict)])
        for i in group.lines:
            obj = doc[i]
            if isinstance(obj, dict):
                self._record(state, group, obj, i)
            else:
                state.turns.append(bad_line_turn(str(obj), i))
        sid = group.sid
        session = ParsedSession(sid, "source:session_meta.id" if sid else "none", state.turns,
                                raw=masked(doc, group.lines), pointer="", regions=state.regions)
        session.meta = {"agent": "codex", "lines": [group.lines[0] + 1, group.lines[-1] + 1], **group.meta}
        if state.drift:
            session.meta["formatDrift"] = state.drift.as_meta()
        state.times.flush(session)
        return session

    def _record(self, state: _State, group: _Session, obj: dict[str, Any], i: int) -> None:
        kind, payload = _unwrap(obj)
        when, raw = read_time(obj.get("timestamp"))
        if kind == "session_meta":
            self._meta(state, group, payload)
            content = payload.get("instructions") if isinstance(payload.get("instructions"), str) else None
            state.regions.append(Region(RegionKind.SESSION_HEADER, "session_meta: the session's id, cwd, CLI version",
                                        pointer=f"/{i}", content=content or None))
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                state.model = split_model(state.provider, payload["model"])
            for key in ("cwd", "approval_policy"):
                if isinstance(payload.get(key), str):
                    group.meta.setdefault(key if key == "cwd" else "approvalPolicy", payload[key])
            state.regions.append(Region(RegionKind.METADATA, "turn_context: cwd, model and policies of the turn",
                                        pointer=f"/{i}"))
        elif kind in ("compacted", "state"):
            content = payload.get("message") if isinstance(payload.get("message"), str) else None
            state.regions.append(Region(RegionKind.METADATA, f"{kind}: the CLI's own bookkeeping", pointer=f"/{i}",
                                        content=content))
        elif kind == "response_item":
            state.times.note(when, raw, f"/{i}")
            self._item(state, payload, i, when, raw)
        elif kind == "event_msg":
            self._event(state, group, payload, i, when, raw)
        else:
            self._unknown(state, "recordType", kind, payload, i, when, raw)

    @staticmethod
    def _meta(state: _State, group: _Session, payload: dict[str, Any]) -> None:
        provider = payload.get("model_provider")
        if isinstance(provider, str) and provider:
            state.provider = provider
        if isinstance(payload.get("model"), str):
            state.model = split_model(state.provider, payload["model"])
        git = payload.get("git") if isinstance(payload.get("git"), dict) else {}
        for key, value in (("cwd", payload.get("cwd")), ("agentVersion", payload.get("cli_version")),
                           ("originator", payload.get("originator")), ("gitBranch", git.get("branch")),
                           ("gitCommit", git.get("commit_hash")), ("repositoryUrl", git.get("repository_url"))):
            if isinstance(value, str) and value:
                group.meta.setdefault(key, value)

    def _item(self, state: _State, payload: dict[str, Any], i: int, when, raw) -> None:
        kind = payload.get("type")
        pointer = f"/{i}"
        if kind == "message":
            self._message(state, payload, pointer, when, raw)
        elif kind == "reasoning":
            state.turns.append(Turn("Codex", "assistant", _reasoning(payload), when, raw, state.model, "thinking",
                                    pointer=pointer, extra=compact({"itemId": payload.get("id")})))
        elif kind in CALLS:
            call = payload.get("call_id") or payload.get("id")
            name = str(payload.get("name") or kind.removesuffix("_call"))
            if isinstance(call, str):
                state.tools[call] = name
            body = payload.get(CALLS[kind])
            content = body if isinstance(body, str) else json_text(body)
            state.turns.append(Turn("Codex", "assistant", content, when, raw, state.model, "tool_call",
                                    pointer=pointer, extra=compact({"tool": name, "callId": call})))
        elif kind in OUTPUTS:
            call = str(payload.get("call_id"))
            content, extra = _output(payload.get("output"))
            state.turns.append(Turn(state.tools.get(call, "tool"), "tool", content, when, raw, None, "tool_result",
                                    pointer=pointer, extra=compact({"callId": call, **extra})))
        else:
            self._unknown(state, "itemType", str(kind), payload, i, when, raw)

    @staticmethod
    def _message(state: _State, payload: dict[str, Any], pointer: str, when, raw) -> None:
        role = str(payload.get("role"))
        speaker, mapped = ROLES.get(role, (role, "other"))
        text = text_of(payload.get("content"))
        extra: dict[str, Any] = {"itemId": payload.get("id")}
        m = _INJECTED.match(text) if mapped == "user" else None
        if m:
            speaker, mapped, extra["injected"] = AGENT, "system", m["tag"] or "agents_md"
        model = state.model if mapped == "assistant" else None
        state.turns.append(Turn(speaker, mapped, text, when, raw, model, "message", pointer=pointer,
                                extra=compact(extra)))

    def _event(self, state: _State, group: _Session, payload: dict[str, Any], i: int, when, raw) -> None:
        kind = str(payload.get("type"))
        key = _echo_key(payload)
        if key is not None:
            if state.echoes.get(key, 0) > 0:
                state.echoes[key] -= 1
                state.regions.append(Region(RegionKind.DUPLICATE, f"event {kind} repeats a response item",
                                            pointer=f"/{i}"))
                return
            speaker = "User" if key[1] == "user" else "Codex"
            model = state.model if key[1] == "assistant" else None
            state.turns.append(Turn(speaker, key[1], key[2], when, raw, model, key[0], pointer=f"/{i}",
                                    extra={"event": kind}))
            return
        if kind in NOTICES:
            state.turns.append(Turn(AGENT, "system", str(payload.get("message") or ""), when, raw, None, "error",
                                    pointer=f"/{i}", extra={"event": kind}))
            return
        if kind == "token_count":
            info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
            if isinstance(info.get("total_token_usage"), dict):
                group.meta["tokenUsage"] = info["total_token_usage"]
        elif kind not in EVENTS:
            self._unknown(state, "eventType", kind, payload, i, when, raw)
            return
        state.regions.append(Region(RegionKind.METADATA, f"event {kind}: shown by the CLI, not said in the session",
                                    pointer=f"/{i}"))

    @staticmethod
    def _unknown(state: _State, category: str, kind: str, payload: dict, i: int, when, raw) -> None:
        state.drift.note(category, kind, f"/{i}")
        text = text_of(payload.get("content") or payload.get("message") or payload.get("text"))
        if text.strip():
            state.turns.append(Turn(kind, "other", text, when, raw, None, kind, pointer=f"/{i}",
                                    extra={"recordType": kind}))
        else:
            state.regions.append(Region(RegionKind.METADATA, f"{category} {kind!r} without text", pointer=f"/{i}"))

    def count_turns(self, raw: Any) -> int:
        """Lines that are not JSON, response items, echo events whose text no response item holds,
        error events, and records of unknown types that hold text."""
        values = [_unwrap(v) for v in raw.values() if isinstance(v, dict)]
        items = _echo_table(values)
        count = sum(1 for v in raw.values() if isinstance(v, str))
        for kind, payload in values:
            count += _counts(kind, payload, items)
        return count


def _counts(kind: str, payload: dict[str, Any], items: dict) -> int:
    if kind == "response_item":
        if payload.get("type") in ITEM_TYPES:
            return 1
        return 1 if text_of(payload.get("content") or payload.get("message") or payload.get("text")).strip() else 0
    if kind != "event_msg":
        if kind in RECORD_TYPES or kind == "state":
            return 0
        return 1 if text_of(payload.get("content") or payload.get("message") or payload.get("text")).strip() else 0
    key = _echo_key(payload)
    if key is not None:
        if items.get(key, 0) > 0:
            items[key] -= 1
            return 0
        return 1
    event = payload.get("type")
    if event in NOTICES:
        return 1
    if event in EVENTS:
        return 0
    return 1 if text_of(payload.get("content") or payload.get("message") or payload.get("text")).strip() else 0


def _output(value: Any) -> tuple[str, dict[str, Any]]:
    """The output text of a call and what it says of the command (exit code, duration)."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            inner = orjson.loads(value)
        except orjson.JSONDecodeError:
            inner = None
        if isinstance(inner, dict) and "output" in inner:
            meta = inner.get("metadata") if isinstance(inner.get("metadata"), dict) else {}
            return text_of(inner["output"]), {"exitCode": meta.get("exit_code"),
                                              "durationSeconds": meta.get("duration_seconds")}
    text = text_of(value)
    m = _WALL.match(text) or _EXITED.search(text[:500])
    if m:
        return text, {"exitCode": int(m["code"]), "durationSeconds": float(m["secs"])}
    return text, {}
