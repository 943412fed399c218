"""Claude Code session logs: ``~/.claude/projects/<project>/<session>.jsonl`` (and ``agent-*.jsonl``).

One JSON record per line. Records of type ``user``, ``assistant`` and ``system`` are said in the
session; ``summary``, ``file-history-snapshot``, ``queue-operation``, ``progress`` and the like describe it
(declared metadata regions). Sessions are grouped by ``sessionId`` in order of first appearance
(a resumed session appended to a file is a session of its own); records without one (summaries,
snapshots) belong to the session of the record before them, or the first session at the start.

Mapping (the document is the list of parsed lines, see ``_agentlog``):

- every content block of a ``message`` is one interaction, pointer ``/<line>/message/content/<j>``:
  ``text`` (user -> User, assistant -> Claude, kind message), ``thinking`` and
  ``redacted_thinking`` (Claude, kind thinking: thinking is an interaction of its own),
  ``tool_use`` (Claude, kind tool_call, content the input as compact JSON, ``extra`` tool and
  callId), ``tool_result`` (role tool, speaker the tool's name, kind tool_result, ``extra`` callId,
  isError, exitCode/durationMs where the record's ``toolUseResult`` gives them), ``image``
  (kind image, a marker); a string ``content`` is one interaction at ``/<line>/message``;
- one assistant reply written as several records that share ``message.id`` (one content block
  each, as Claude Code streams them) stays several interactions, one per block, each with
  ``extra.messageId``; the reply's token usage is counted once per ``message.id`` (the last
  record's usage, which is the final one); a block repeated with the same ``message.id`` and the
  same content, or a record whose ``uuid`` was already seen, is a declared duplicate;
- ``system`` records with content are System interactions (speaker "Claude Code"); ``isMeta``
  user records (caveats the CLI injects) and ``isCompactSummary`` ones (the summary a compacted
  conversation continues from) are System interactions with that flag in ``extra``; a user's
  ``<bash-input>`` (a shell command typed with ``!``) is kind command with ``extra.userCommand``;
- sidechain records (``isSidechain``: a subagent's turns) are kept in place with
  ``extra.sidechain`` and ``extra.startedBy``, the call id of the ``Task``/``Agent`` call whose
  ``prompt`` equals the sidechain's first user text (else the latest such call before it);
- a tool_use whose result record's ``toolUseResult`` keeps the file's text before the edit
  (``originalFile``, MultiEdit's ``originalFileContents``) hands that text on as the turn's
  ``base_text``: the session record's patch for the edit applies to exactly that base;
- the model is ``message.model`` split by ``split_model`` with provider ``anthropic`` (the tool);
  ``<synthetic>`` (a message the CLI wrote itself) names no model.

``attachment`` records (context the CLI attaches for the model: a hook's output, a reminder) are
System interactions of the CLI (kind attachment, ``extra.attachmentType``) when they hold text,
else declared metadata; ``last-prompt``, ``permission-mode`` and ``file-history-delta`` records
are declared metadata. The session's title is the user's ``custom-title`` (the latest), else the first
``summary``, else the generated ``ai-title`` (the latest); each is a declared metadata record.

Session meta: cwd, gitBranch, agentVersion, tokenUsage, agentId. Unknown record and block types
are noted as format drift; one with text is still an interaction (role other).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.drift import Drift
from parsers.grammars._agentlog import bad_line_turn, masked, read_lines, record_share, split_model, text_of
from parsers.grammars._aiexport import TimeNotes, compact, json_text, read_time
from parsers.registry import register
from parsers.sessions import file_name_id

PROVIDER = "anthropic"
AGENT = "Claude Code"
TURN_TYPES = frozenset({"user", "assistant", "system"})
META_TYPES = {
    "summary": "session summary written by Claude Code (title of a conversation leaf)",
    "file-history-snapshot": "file backup snapshot for undo, not said in the session",
    "queue-operation": "prompt queue bookkeeping; a queued prompt appears as its own user record when sent",
    "custom-title": "title set by the user",
    "progress": "progress of a running tool, hook or subagent; its outcome is the tool result",
    "last-prompt": "the last prompt typed, kept to restore the input box (the prompt is its own user record)",
    "permission-mode": "the session's permission mode",
    "file-history-delta": "file backup bookkeeping for undo, not said in the session",
    "ai-title": "title Claude Code generated for the session",
}
TITLE_FIELDS = (("custom-title", "customTitle"), ("summary", "summary"), ("ai-title", "title"))
"""Where a record names the session, strongest first: the user's own title (the latest one), Claude
Code's summary of a leaf (the first one), the generated title (the latest one)."""
TASK_TOOLS = frozenset({"Task", "Agent"})
ORIGINAL_KEYS = ("originalFile", "originalFileContents")
"""Where a tool result keeps the edited file's text before the edit (Edit and Write; MultiEdit)."""
META_FIELDS = (("cwd", "cwd"), ("gitBranch", "gitBranch"), ("version", "agentVersion"), ("agentId", "agentId"))
KNOWN_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use", "tool_result", "image", "document"})
_EXIT = regex.compile(r"^Exit code (\d+)")
_LONG_FIRST = regex.compile(r'\A\{"(?:parentUuid|isSidechain|type|uuid|sessionId)":[^\n]{0,2000}"sessionId":"[^"]+"')
_UUID_NAME = regex.compile(r"(?:^|/)(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")


def _explains(obj: dict[str, Any]) -> bool:
    kind = obj.get("type")
    if kind in TURN_TYPES or kind == "attachment":
        return "uuid" in obj and ("sessionId" in obj or "parentUuid" in obj)
    return kind in META_TYPES and ("leafUuid" in obj or "messageId" in obj or "sessionId" in obj)


def _signature(obj: dict[str, Any]) -> bool:
    return obj.get("type") in TURN_TYPES and "parentUuid" in obj and isinstance(obj.get("message"), dict)


@dataclass(slots=True)
class _State:
    """What one session's walk remembers."""

    tools: dict[str, str]
    tasks: list[tuple[int, str, str]]
    results: dict[str, dict[str, Any]]
    turns: list[Turn] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    uuids: set[str] = field(default_factory=set)
    blocks: set[tuple[str, bytes]] = field(default_factory=set)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    times: TimeNotes = field(default_factory=TimeNotes)
    drift: Drift = field(default_factory=Drift)
    meta: dict[str, Any] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)

    def title(self) -> str | None:
        return next((self.titles[kind] for kind, _ in TITLE_FIELDS if kind in self.titles), None)

    def note_title(self, kind: str, obj: dict[str, Any]) -> None:
        key = dict(TITLE_FIELDS).get(kind)
        value = obj.get(key) if key else None
        if isinstance(value, str) and value and (kind != "summary" or kind not in self.titles):
            self.titles[kind] = value


def _prescan(doc: list[Any], lines: list[int]) -> tuple[dict[str, str], list[tuple[int, str, str]], dict]:
    """Tool names by call id, Task calls (line, call id, prompt) and toolUseResult by call id."""
    tools: dict[str, str] = {}
    tasks: list[tuple[int, str, str]] = []
    results: dict[str, dict[str, Any]] = {}
    for i in lines:
        obj = doc[i]
        message = obj.get("message") if isinstance(obj, dict) else None
        blocks = message.get("content") if isinstance(message, dict) else None
        if not isinstance(blocks, list):
            continue
        for b in blocks:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                tools[b["id"]] = str(b.get("name") or "tool")
                prompt = (b.get("input") or {}).get("prompt") if isinstance(b.get("input"), dict) else None
                if b.get("name") in TASK_TOOLS:
                    tasks.append((i, b["id"], prompt if isinstance(prompt, str) else ""))
            elif b.get("type") == "tool_result" and isinstance(obj.get("toolUseResult"), dict):
                results[str(b.get("tool_use_id"))] = obj["toolUseResult"]
    return tools, tasks, results


def _group(doc: list[Any]) -> list[tuple[str | None, list[int]]]:
    """Line indices per sessionId, in order of first appearance (module docstring)."""
    order: dict[str | None, list[int]] = {}
    pending: list[int] = []
    current: str | None = None
    started = False
    for i, obj in enumerate(doc):
        if obj is None:
            continue
        sid = obj.get("sessionId") if isinstance(obj, dict) else None
        if isinstance(sid, str) and sid:
            current, started = sid, True
            order.setdefault(sid, []).extend(pending)
            pending = []
            order[sid].append(i)
        elif started:
            order[current].append(i)
        else:
            pending.append(i)
    if pending:
        order.setdefault(None, []).extend(pending)
    return [(k, sorted(v)) for k, v in order.items()]


@register
class ClaudeCode(Grammar):
    name = "claude-code"
    detect_needs = ('"parentUuid"', '"sessionId"')  # the signature record's key, or a long first record's
    version = "1"
    structured = True
    description = "Claude Code session log (~/.claude/projects/<project>/<session>.jsonl)"
    example = ('{"type": "user", "uuid": "…", "parentUuid": null, "sessionId": "…", "cwd": "/repo", '
               '"message": {"role": "user", "content": "Fix the failing test"}}')

    def detect(self, sample: str, name: str) -> float:
        return record_share(sample, _explains, _signature, _LONG_FIRST)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        doc = read_lines(source.text)
        groups = _group(doc)
        for sid, lines in groups:
            yield self._session(doc, sid, lines, source.name, len(groups) == 1)

    def _session(self, doc: list[Any], sid: str | None, lines: list[int], name: str, alone: bool) -> ParsedSession:
        tools, tasks, results = _prescan(doc, lines)
        state = _State(tools, tasks, results)
        for i in lines:
            obj = doc[i]
            if isinstance(obj, dict):
                self._record(state, obj, i)
            else:
                state.turns.append(bad_line_turn(str(obj), i))
        id_source = "source:sessionId"
        if sid is None:
            m = _UUID_NAME.search(name)
            sid = m["id"] if m and alone else (file_name_id(name) if alone else None)
            id_source = "file-name" if sid else "none"
        session = ParsedSession(sid, id_source, state.turns, raw=masked(doc, lines), pointer="",
                                title=state.title(), regions=state.regions)
        session.meta = self._meta(state, lines)
        bad = sum(1 for t in state.turns if t.extra and "malformedLine" in t.extra)
        if bad:
            session.warnings.append(f"{bad} lines are not JSON: kept verbatim as System notices")
        state.times.flush(session)
        if any(t.role == "assistant" for t in state.turns):
            session.assumptions.append(f"provider '{PROVIDER}' for Claude turns: the log is Claude Code's")
        return session

    @staticmethod
    def _meta(state: _State, lines: list[int]) -> dict[str, Any]:
        meta = {"agent": "claude-code", "lines": [lines[0] + 1, lines[-1] + 1], **state.meta}
        if state.usage:
            total: dict[str, int] = {}
            for usage in state.usage.values():
                for k, v in usage.items():
                    total[k] = total.get(k, 0) + v
            meta["tokenUsage"] = {"messages": len(state.usage), **dict(sorted(total.items()))}
        if state.drift:
            meta["formatDrift"] = state.drift.as_meta()
        return meta

    @staticmethod
    def _capture(state: _State, obj: dict[str, Any]) -> None:
        """The session's cwd, branch, version and agent id: the first value each record field gives."""
        for key, meta_key in META_FIELDS:
            value = obj.get(key)
            if isinstance(value, str) and value and meta_key not in state.meta:
                state.meta[meta_key] = value

    def _record(self, state: _State, obj: dict[str, Any], i: int) -> None:
        kind = obj.get("type")
        self._capture(state, obj)
        if kind in META_TYPES:
            state.note_title(kind, obj)
            state.regions.append(Region(RegionKind.METADATA, f"{kind}: {META_TYPES[kind]}", pointer=f"/{i}"))
            return
        uid = obj.get("uuid")
        if isinstance(uid, str) and uid in state.uuids:
            state.regions.append(Region(RegionKind.DUPLICATE, f"record uuid {uid} already seen", pointer=f"/{i}"))
            return
        if isinstance(uid, str):
            state.uuids.add(uid)
        if kind == "attachment":
            self._attachment(state, obj, i)
            return
        if kind not in TURN_TYPES:
            self._unknown(state, obj, i)
            return
        if kind == "system":
            self._system(state, obj, i)
            return
        message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        if kind == "assistant":
            self._usage(state, message)
        content = message.get("content")
        before, declared = len(state.turns), len(state.regions)
        if isinstance(content, list):
            for j, block in enumerate(content):
                self._block(state, obj, message, block, f"/{i}/message/content/{j}")
        elif isinstance(content, str) and content.strip():
            state.turns.append(self._turn(state, obj, message, "text", content, f"/{i}/message"))
        if len(state.turns) == before and len(state.regions) == declared:
            state.regions.append(Region(RegionKind.EMPTY_RECORD, f"{kind} record with no content", pointer=f"/{i}"))

    @staticmethod
    def _usage(state: _State, message: dict[str, Any]) -> None:
        usage, mid = message.get("usage"), message.get("id")
        if isinstance(usage, dict) and isinstance(mid, str):
            state.usage[mid] = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}

    def _block(self, state: _State, obj: dict, message: dict, block: Any, pointer: str) -> None:
        if not isinstance(block, dict):
            state.turns.append(self._turn(state, obj, message, "text", text_of(block), pointer))
            return
        kind = str(block.get("type"))
        mid = message.get("id")
        if obj.get("type") == "assistant" and isinstance(mid, str):
            key = (mid, orjson.dumps(block, option=orjson.OPT_SORT_KEYS))
            if key in state.blocks:
                state.regions.append(Region(RegionKind.DUPLICATE, f"block repeated in message {mid}", pointer=pointer))
                return
            state.blocks.add(key)
        if kind not in KNOWN_BLOCKS:
            state.drift.note("contentType", kind, pointer)
        body = _block_text(block, kind)
        if not body.strip() and kind in ("text", "thinking"):
            state.regions.append(Region(RegionKind.EMPTY_RECORD, f"empty {kind} block", pointer=pointer))
            return
        state.turns.append(self._turn(state, obj, message, kind, body, pointer, block))

    def _turn(self, state: _State, obj: dict, message: dict, kind: str, content: str, pointer: str,
              block: dict | None = None) -> Turn:
        when, raw = read_time(obj.get("timestamp"))
        state.times.note(when, raw, pointer)
        extra: dict[str, Any] = {"uuid": obj.get("uuid"), "parentUuid": obj.get("parentUuid"),
                                 "messageId": message.get("id")}
        extra.update(self._sidechain(state, obj, content, pointer))
        role = "assistant" if obj.get("type") == "assistant" else "user"
        speaker, model, turn_kind = ("Claude", None, "message") if role == "assistant" else ("User", None, "message")
        if role == "assistant":
            model = split_model(PROVIDER, message.get("model")) if message.get("model") != "<synthetic>" else None
            extra["synthetic"] = True if message.get("model") == "<synthetic>" else None
        if obj.get("isMeta") or obj.get("isCompactSummary"):
            speaker, role = AGENT, "system"
            extra["isMeta" if obj.get("isMeta") else "isCompactSummary"] = True
        elif role == "user" and kind == "text" and content.startswith("<bash-input>"):
            extra["userCommand"], turn_kind = "!", "command"
        original = None
        if kind in ("thinking", "redacted_thinking"):
            turn_kind = "thinking"
        elif kind == "tool_use" and block is not None:
            turn_kind = "tool_call"
            extra.update(tool=block.get("name"), callId=block.get("id"))
            result = state.results.get(str(block.get("id"))) or {}
            operation = result.get("type")
            extra["fileOperation"] = operation if operation in ("create", "update") else None
            original = next((result[k] for k in ORIGINAL_KEYS if isinstance(result.get(k), str)), None)
        elif kind == "tool_result" and block is not None:
            call = str(block.get("tool_use_id"))
            speaker, role, turn_kind = state.tools.get(call, "tool"), "tool", "tool_result"
            extra.update(_result_extra(call, block, content, state.results.get(call)))
        elif kind not in ("text", "thinking"):
            turn_kind = kind
        return Turn(speaker, role, content, when, raw, model, turn_kind, pointer=pointer, extra=compact(extra),
                    base_text=original)

    @staticmethod
    def _sidechain(state: _State, obj: dict, content: str, pointer: str) -> dict[str, Any]:
        if not obj.get("isSidechain"):
            return {}
        uid, parent = obj.get("uuid"), obj.get("parentUuid")
        started = state.links.get(parent) if isinstance(parent, str) else None
        if started is None:
            line = int(pointer.split("/")[1])
            before = [t for t in state.tasks if t[0] < line]
            matching = [t for t in before if t[2] and t[2] == content]
            chosen = (matching or before or [None])[-1]
            started = chosen[1] if chosen else None
        if isinstance(uid, str) and started:
            state.links[uid] = started
        return {"sidechain": True, "startedBy": started, "agentId": obj.get("agentId")}

    def _system(self, state: _State, obj: dict, i: int) -> None:
        content = obj.get("content")
        text = text_of(content) if content is not None else ""
        if not text.strip():
            state.regions.append(Region(RegionKind.EMPTY_RECORD, "system record with no content", pointer=f"/{i}"))
            return
        when, raw = read_time(obj.get("timestamp"))
        state.times.note(when, raw, f"/{i}")
        extra = compact({"uuid": obj.get("uuid"), "parentUuid": obj.get("parentUuid"), "subtype": obj.get("subtype"),
                         "level": obj.get("level")})
        state.turns.append(Turn(AGENT, "system", text, when, raw, None, "message", pointer=f"/{i}", extra=extra))

    @staticmethod
    def _attachment(state: _State, obj: dict, i: int) -> None:
        """Context the CLI attached for the model (a hook's output, a reminder, a file it noticed): a
        System interaction of the CLI when it has text, else declared."""
        attached = obj.get("attachment") if isinstance(obj.get("attachment"), dict) else {}
        kind = str(attached.get("type") or "attachment")
        text = _attachment_text(attached)
        if not text.strip():
            state.regions.append(Region(RegionKind.METADATA, f"attachment {kind!r} with no text", pointer=f"/{i}"))
            return
        when, raw = read_time(obj.get("timestamp"))
        state.times.note(when, raw, f"/{i}")
        extra = compact({"uuid": obj.get("uuid"), "parentUuid": obj.get("parentUuid"), "attachmentType": kind})
        state.turns.append(Turn(AGENT, "system", text, when, raw, None, "attachment", pointer=f"/{i}/attachment",
                                extra=extra))

    @staticmethod
    def _unknown(state: _State, obj: dict, i: int) -> None:
        kind = str(obj.get("type"))
        state.drift.note("recordType", kind, f"/{i}")
        message = obj.get("message")
        text = text_of(message.get("content")) if isinstance(message, dict) else text_of(obj.get("content"))
        if text.strip():
            when, raw = read_time(obj.get("timestamp"))
            state.turns.append(Turn(kind, "other", text, when, raw, None, kind, pointer=f"/{i}",
                                    extra=compact({"uuid": obj.get("uuid"), "recordType": kind})))
        else:
            state.regions.append(Region(RegionKind.METADATA, f"record type {kind!r} without text", pointer=f"/{i}"))

    def count_turns(self, raw: Any) -> int:
        """Lines that are not JSON, plus every non-empty content block (or string content) of user
        and assistant records and every system or unknown record with text, not counting records
        whose uuid repeats or assistant blocks repeated under the same message id."""
        count = 0
        uuids: set[str] = set()
        blocks: set[bytes] = set()
        for value in raw.values():
            if isinstance(value, str):
                count += 1
            if not isinstance(value, dict) or value.get("type") in META_TYPES:
                continue
            uid = value.get("uuid")
            if uid in uuids:
                continue
            if isinstance(uid, str):
                uuids.add(uid)
            count += _count_record(value, blocks)
        return count


def _attachment_text(attached: dict[str, Any]) -> str:
    for key in ("content", "text", "stdout", "message", "prompt"):
        text = text_of(attached.get(key)) if attached.get(key) is not None else ""
        if text.strip():
            return text
    return ""


def _count_record(value: dict[str, Any], blocks: set[bytes]) -> int:
    if value.get("type") == "attachment":
        attached = value.get("attachment") if isinstance(value.get("attachment"), dict) else {}
        return int(bool(_attachment_text(attached).strip()))
    message = value.get("message") if isinstance(value.get("message"), dict) else None
    if value.get("type") not in ("user", "assistant"):
        content = message.get("content") if message else value.get("content")
        return 1 if text_of(content).strip() else 0
    if message is None:
        return 0
    content = message.get("content")
    if isinstance(content, str):
        return 1 if content.strip() else 0
    if not isinstance(content, list):
        return 0
    n = 0
    for block in content:
        if isinstance(block, dict) and value.get("type") == "assistant":
            key = orjson.dumps([message.get("id"), block], option=orjson.OPT_SORT_KEYS)
            if key in blocks:
                continue
            blocks.add(key)
        kind = block.get("type") if isinstance(block, dict) else "text"
        n += not (kind in ("text", "thinking") and not _block_text(block, str(kind)).strip())
    return n


def _block_text(block: Any, kind: str) -> str:
    if not isinstance(block, dict):
        return text_of(block)
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "thinking":
        return str(block.get("thinking", ""))
    if kind == "redacted_thinking":
        return "[redacted thinking]"
    if kind == "tool_use":
        return json_text(block.get("input"))
    if kind == "tool_result":
        return text_of(block.get("content"))
    if kind in ("image", "document"):
        source = block.get("source") if isinstance(block.get("source"), dict) else {}
        return f"[{kind}: {source.get('media_type') or source.get('type') or 'attached'}]"
    return text_of(block.get("text") or block.get("content")) or f"[{kind}]"


def _result_extra(call: str, block: dict, content: str, result: dict | None) -> dict[str, Any]:
    extra: dict[str, Any] = {"callId": call, "isError": True if block.get("is_error") else None}
    m = _EXIT.match(content)
    if m:
        extra["exitCode"] = int(m.group(1))
    if isinstance(result, dict):
        for key, out in (("exitCode", "exitCode"), ("exit_code", "exitCode"), ("durationMs", "durationMs"),
                         ("totalDurationMs", "durationMs"), ("interrupted", "interrupted"), ("agentId", "agentId")):
            value = result.get(key)
            if (isinstance(value, (int, str)) and not isinstance(value, bool)) or value is True:
                extra[out] = value
    return extra
