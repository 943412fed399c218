"""Gemini CLI session files: ``~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json``.

One JSON object per session: ``sessionId``, ``projectHash``, ``startTime``, ``lastUpdated``,
optional ``summary`` (the title) and ``messages``. A file that holds a list of such objects gives
one session each. Each message of type:

- ``user``: one User interaction (pointer ``/messages/<i>``); the ``<session_context>`` block the
  CLI sends as the first user message (workspace, date, folder tree) is a System interaction of
  the CLI with ``extra.injected``;
- ``gemini``: its ``thoughts`` (each a thinking interaction, subject and description), its
  ``content`` (one message, pointer ``.../content``), then for every entry of ``toolCalls`` a
  tool_call (content the ``args`` as compact JSON, pointer ``.../toolCalls/<k>/args``) and, when
  the call has a ``result`` or ``resultDisplay``, a tool_result (role tool, speaker the tool name,
  pointer ``.../toolCalls/<k>/result``, ``extra.isError`` when its status is not success); a
  message with none of these is a declared empty record;
- ``info``, ``warning``, ``error``: System interactions (kind message or error).

The model is the message's ``model`` (provider ``google``, split by ``split_model``); ``tokens``
are summed into the session's ``tokenUsage``. Unknown message types are format drift; one with
text is still an interaction (role other).

**The append-only layout** (``session-*.jsonl``, Gemini CLI 0.40 and later) is read as the list of
its lines (``_agentlog``): line 1 is the session's metadata (a declared session header), then
message records, ``{"$set": {...}}`` metadata patches and ``{"$rewindTo": id}`` markers. The log
is replayed the way the CLI reads it back: a record whose ``id`` was already written rewrites that
message (it keeps its place; the earlier record is a declared duplicate); the messages of a
``$set`` batch are upserted the same way (a batch that restates the context after a compression
does not erase what was said before it); a rewind to a message takes that message and every
later one off the conversation (declared ``off_branch`` with their text). The live messages then
map as above, each at its own pointer (``/<line>`` or ``/<line>/$set/messages/<k>``).
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
from parsers.grammars._agentlog import bad_line_turn, masked, read_lines, split_model, text_of
from parsers.grammars._aiexport import TimeNotes, compact, json_text, read_time
from parsers.jsonload import load_json
from parsers.registry import register
from parsers.sessions import file_name_id

PROVIDER = "google"
_SIGNATURE = regex.compile(r'"projectHash"\s*:')
_SUPPORT = regex.compile(r'"messages"\s*:\s*\[')
NOTICES = {"info": "message", "warning": "message", "error": "error"}
_EXIT = regex.compile(r"^Exit Code: (?P<code>-?\d+)", regex.MULTILINE)
_INJECTED = regex.compile(r"^\s*<session_context>")
_CREATED = regex.compile(r"^Successfully created and wrote to new file")


@dataclass(slots=True)
class _State:
    turns: list[Turn] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    times: TimeNotes = field(default_factory=TimeNotes)
    drift: Drift = field(default_factory=Drift)


def _result_text(call: dict[str, Any]) -> str:
    shown = call.get("resultDisplay")
    if isinstance(shown, str) and shown:
        return shown
    parts = []
    for item in call.get("result") if isinstance(call.get("result"), list) else []:
        response = (item.get("functionResponse") or {}).get("response") if isinstance(item, dict) else None
        if isinstance(response, dict):
            value = response.get("output", response.get("error", response))
            parts.append(value if isinstance(value, str) else json_text(value))
    return "\n".join(parts) if parts else (json_text(shown) if shown else "")


def _outputs(call: dict[str, Any]) -> str:
    """The functionResponse outputs as the model saw them (exit codes and creations are read here)."""
    out = []
    for item in call.get("result") if isinstance(call.get("result"), list) else []:
        response = (item.get("functionResponse") or {}).get("response") if isinstance(item, dict) else None
        if isinstance(response, dict) and isinstance(response.get("output"), str):
            out.append(response["output"])
    return "\n".join(out)


def _has_result(call: dict[str, Any]) -> bool:
    return "result" in call or "resultDisplay" in call


@register
class GeminiCli(Grammar):
    name = "gemini-cli"
    version = "1"
    structured = True
    description = "Gemini CLI session file (~/.gemini/tmp/<hash>/chats/session-*.json or .jsonl)"
    example = '{"sessionId": "…", "projectHash": "…", "startTime": "…", "messages": [{"type": "user", "content": "…"}]}'

    def detect(self, sample: str, name: str) -> float:
        if _SIGNATURE.search(sample) and _SUPPORT.search(sample):
            return 0.95
        return 0.95 if _jsonl_head(sample) is not None else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        if _jsonl_head(source.text) is not None:
            yield self._log_session(source)
            return
        data = load_json(source.text, source.name, self.name)
        if isinstance(data, list):
            for i, item in enumerate(data):
                yield self._session(item if isinstance(item, dict) else {}, f"/{i}")
        else:
            yield self._session(data if isinstance(data, dict) else {}, "")

    def _session(self, data: dict[str, Any], base: str) -> ParsedSession:
        state = _State()
        messages = data.get("messages") if isinstance(data.get("messages"), list) else []
        for i, m in enumerate(messages):
            at = f"{base}/messages/{i}"
            if isinstance(m, dict):
                self._message(state, m, at)
            else:
                state.turns.append(Turn("System", "system", text_of(m), kind="notice", pointer=at,
                                        extra={"malformedEntry": True}))
        sid = data.get("sessionId") if isinstance(data.get("sessionId"), str) else None
        session = ParsedSession(sid, "source:sessionId" if sid else "none", state.turns, raw=data, pointer=base,
                                regions=state.regions)
        session.title = data.get("summary") if isinstance(data.get("summary"), str) else None
        session.created, session.created_raw = read_time(data.get("startTime"))
        session.meta = compact({"agent": "gemini-cli", "projectHash": data.get("projectHash"),
                                "lastUpdatedRaw": data.get("lastUpdated"),
                                "tokenUsage": dict(sorted(state.tokens.items())),
                                "formatDrift": state.drift.as_meta() if state.drift else None}) or {}
        state.times.flush(session)
        return session

    def _message(self, state: _State, m: dict[str, Any], at: str) -> None:
        kind = str(m.get("type"))
        when, raw = read_time(m.get("timestamp"))
        state.times.note(when, raw, at)
        if kind == "user" and _INJECTED.match(text_of(m.get("content"))):
            state.turns.append(Turn("Gemini CLI", "system", text_of(m.get("content")), when, raw, None, "message",
                                    pointer=at, extra=compact({"id": m.get("id"), "injected": "session_context"})))
        elif kind == "user":
            state.turns.append(Turn("User", "user", text_of(m.get("content")), when, raw, None, "message",
                                    pointer=at, extra=compact({"id": m.get("id")})))
        elif kind == "gemini":
            self._reply(state, m, at, when, raw)
        elif kind in NOTICES:
            state.turns.append(Turn("Gemini CLI", "system", text_of(m.get("content")), when, raw, None,
                                    NOTICES[kind], pointer=at, extra={"type": kind}))
        else:
            state.drift.note("messageType", kind, at)
            text = text_of(m.get("content"))
            if text.strip():
                state.turns.append(Turn(kind, "other", text, when, raw, None, kind, pointer=at))
            else:
                state.regions.append(Region(RegionKind.EMPTY_RECORD, f"message type {kind!r} without text",
                                            pointer=at))

    def _reply(self, state: _State, m: dict[str, Any], at: str, when, raw) -> None:
        model = split_model(PROVIDER, m.get("model"))
        for k, v in (m.get("tokens") or {}).items() if isinstance(m.get("tokens"), dict) else ():
            if isinstance(v, int) and not isinstance(v, bool):
                state.tokens[k] = state.tokens.get(k, 0) + v
        before = len(state.turns)
        for k, thought in enumerate(m.get("thoughts") or []):
            if isinstance(thought, dict):
                text = "\n".join(x for x in (thought.get("subject"), thought.get("description")) if isinstance(x, str))
                state.turns.append(Turn("Gemini", "assistant", text, when, raw, model, "thinking",
                                        pointer=f"{at}/thoughts/{k}"))
        text = text_of(m.get("content"))
        if text.strip():
            state.turns.append(Turn("Gemini", "assistant", text, when, raw, model, "message", pointer=f"{at}/content",
                                    extra=compact({"id": m.get("id")})))
        for k, call in enumerate(m.get("toolCalls") or []):
            if isinstance(call, dict):
                self._call(state, call, f"{at}/toolCalls/{k}", model)
        if len(state.turns) == before:
            state.regions.append(Region(RegionKind.EMPTY_RECORD, "gemini message with no text, thought or call",
                                        pointer=at))

    @staticmethod
    def _call(state: _State, call: dict[str, Any], at: str, model) -> None:
        when, raw = read_time(call.get("timestamp"))
        name, cid = str(call.get("name") or "tool"), call.get("id")
        output = _outputs(call)
        created = "create" if _CREATED.match(output) else None
        state.turns.append(Turn("Gemini", "assistant", json_text(call.get("args")), when, raw, model, "tool_call",
                                pointer=f"{at}/args", extra=compact({"tool": name, "callId": cid,
                                                                     "fileOperation": created})))
        if _has_result(call):
            failed = call.get("status") not in (None, "success")
            code = _EXIT.search(output)
            extra = {"callId": cid, "isError": failed or None, "status": call.get("status"),
                     "exitCode": int(code["code"]) if code else None}
            state.turns.append(Turn(name, "tool", _result_text(call), when, raw, None, "tool_result",
                                    pointer=f"{at}/result", extra=compact(extra)))

    def _log_session(self, source: SourceText) -> ParsedSession:
        """A session written in the append-only layout (module docstring)."""
        doc = read_lines(source.text)
        head = doc[0] if isinstance(doc[0], dict) else {}
        state = _State()
        state.regions.append(Region(RegionKind.SESSION_HEADER, "session metadata: id, project hash, start time",
                                    pointer="/0"))
        patches: dict[str, Any] = {}
        live = _replay(doc, state.regions, patches)
        for at, m in live:
            if isinstance(m, dict):
                self._message(state, m, at)
            else:
                state.turns.append(bad_line_turn(str(m), int(at[1:])))
        sid = head.get("sessionId") if isinstance(head.get("sessionId"), str) else None
        sid, id_source = (sid, "source:sessionId") if sid else (file_name_id(source.name), "file-name")
        session = ParsedSession(sid, id_source if sid else "none", state.turns, raw=masked(doc, range(len(doc))),
                                pointer="", regions=state.regions)
        summary = patches.get("summary", head.get("summary"))
        session.title = summary if isinstance(summary, str) else None
        session.created, session.created_raw = read_time(head.get("startTime"))
        session.meta = compact({"agent": "gemini-cli", "layout": "jsonl", "projectHash": head.get("projectHash"),
                                "kind": head.get("kind"), "lastUpdatedRaw": patches.get("lastUpdated",
                                                                                         head.get("lastUpdated")),
                                "tokenUsage": dict(sorted(state.tokens.items())),
                                "formatDrift": state.drift.as_meta() if state.drift else None}) or {}
        state.times.flush(session)
        return session

    def count_turns(self, raw: Any) -> int:
        """User and notice messages, unknown ones with text, and for Gemini's own messages every
        thought, a non-blank content, every tool call and every call that carries a result; in the
        append-only layout, of the messages left when the log is replayed (last write per id, rewinds
        applied), lines that are not JSON included."""
        if isinstance(raw, dict) and "0" in raw:
            return sum(1 if isinstance(m, str) else _count_message(m) for m in _final_messages(raw))
        messages = raw.get("messages") if isinstance(raw, dict) and isinstance(raw.get("messages"), list) else []
        return sum(_count_message(m) for m in messages)


def _count_message(m: Any) -> int:
    if not isinstance(m, dict) or m.get("type") in ("user", *NOTICES):
        return 1
    if m.get("type") == "gemini":
        calls = [c for c in m.get("toolCalls") or [] if isinstance(c, dict)]
        return (sum(isinstance(t, dict) for t in m.get("thoughts") or []) + bool(text_of(m.get("content")).strip())
                + len(calls) + sum(map(_has_result, calls)))
    return int(bool(text_of(m.get("content")).strip()))


def _jsonl_head(text: str) -> dict[str, Any] | None:
    """The metadata line that opens an append-only session file, or None (the whole-object layout
    starts with a line that is not JSON on its own, or an object that holds the messages)."""
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    if '"projectHash"' not in first or not first.lstrip().startswith("{"):
        return None
    try:
        head = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None
    return head if isinstance(head, dict) and "messages" not in head and "sessionId" in head else None


def _replay(doc: list[Any], regions: list[Region], patches: dict[str, Any]) -> list[tuple[str, Any]]:
    """The live messages of an append-only log in conversation order, as (pointer, record); what the
    replay sets aside is declared in ``regions``, metadata patches collected in ``patches``."""
    live: dict[str, tuple[str, Any]] = {}
    for i in range(1, len(doc)):
        rec, at = doc[i], f"/{i}"
        if rec is None:
            continue
        if isinstance(rec, dict) and "$rewindTo" in rec:
            regions.append(Region(RegionKind.METADATA, f"rewind to message {rec['$rewindTo']!r}", pointer=at))
            _rewind(live, rec["$rewindTo"], at, regions)
        elif isinstance(rec, dict) and "$set" in rec:
            patch = rec["$set"] if isinstance(rec["$set"], dict) else {}
            batch = patch.get("messages") if isinstance(patch.get("messages"), list) else None
            patches.update({k: v for k, v in patch.items() if k != "messages"})
            for k, m in enumerate(batch or ()):
                _upsert(live, m, f"{at}/$set/messages/{k}", regions)
            if batch is None:
                regions.append(Region(RegionKind.METADATA, "metadata patch ($set)", pointer=at))
        else:
            _upsert(live, rec, at, regions)
    return list(live.values())


def _upsert(live: dict[str, tuple[str, Any]], m: Any, at: str, regions: list[Region] | None) -> None:
    key = m["id"] if isinstance(m, dict) and isinstance(m.get("id"), str) else at
    if key in live and regions is not None:
        regions.append(Region(RegionKind.DUPLICATE, f"rewritten by the record at {at}", pointer=live[key][0]))
    live[key] = (at, m)


def _rewind(live: dict[str, tuple[str, Any]], target: Any, at: str, regions: list[Region] | None) -> None:
    keys = list(live)
    if target not in keys:
        return
    for key in keys[keys.index(target):]:
        where, m = live.pop(key)
        if regions is not None:
            text = text_of(m.get("content")) if isinstance(m, dict) else str(m)
            regions.append(Region(RegionKind.OFF_BRANCH, f"rewound by {at}", pointer=where, content=text or None))


def _final_messages(raw: dict[str, Any]) -> list[Any]:
    """The messages an append-only log holds once replayed (for the independent count)."""
    live: dict[str, tuple[str, Any]] = {}
    for index in sorted(int(k) for k in raw if k.isdigit() and k != "0"):
        rec = raw[str(index)]
        if isinstance(rec, dict) and "$rewindTo" in rec:
            _rewind(live, rec["$rewindTo"], "", None)
        elif isinstance(rec, dict) and "$set" in rec:
            batch = rec["$set"].get("messages") if isinstance(rec["$set"], dict) else None
            for k, m in enumerate(batch if isinstance(batch, list) else ()):
                _upsert(live, m, f"/{index}/{k}", None)
        elif rec is not None:
            _upsert(live, rec, f"/{index}", None)
    return [m for _, m in live.values()]
