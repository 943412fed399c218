"""Gemini CLI session files: ``~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json``.

One JSON object per session: ``sessionId``, ``projectHash``, ``startTime``, ``lastUpdated``,
optional ``summary`` (the title) and ``messages``. A file that holds a list of such objects gives
one session each. Each message of type:

- ``user``: one User interaction (pointer ``/messages/<i>``);
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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
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

PROVIDER = "google"
_SIGNATURE = regex.compile(r'"projectHash"\s*:')
_SUPPORT = regex.compile(r'"messages"\s*:\s*\[')
NOTICES = {"info": "message", "warning": "message", "error": "error"}
_EXIT = regex.compile(r"^Exit Code: (?P<code>-?\d+)", regex.MULTILINE)
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
    description = "Gemini CLI session file (~/.gemini/tmp/<hash>/chats/session-*.json)"
    example = '{"sessionId": "…", "projectHash": "…", "startTime": "…", "messages": [{"type": "user", "content": "…"}]}'

    def detect(self, sample: str, name: str) -> float:
        return 0.95 if _SIGNATURE.search(sample) and _SUPPORT.search(sample) else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
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
        if kind == "user":
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

    def count_turns(self, raw: Any) -> int:
        """User and notice messages, unknown ones with text, and for Gemini's own messages every
        thought, a non-blank content, every tool call and every call that carries a result."""
        messages = raw.get("messages") if isinstance(raw, dict) and isinstance(raw.get("messages"), list) else []
        count = 0
        for m in messages:
            if not isinstance(m, dict) or m.get("type") in ("user", *NOTICES):
                count += 1
            elif m.get("type") == "gemini":
                calls = [c for c in m.get("toolCalls") or [] if isinstance(c, dict)]
                count += sum(isinstance(t, dict) for t in m.get("thoughts") or [])
                count += bool(text_of(m.get("content")).strip()) + len(calls) + sum(map(_has_result, calls))
            else:
                count += bool(text_of(m.get("content")).strip())
        return count
