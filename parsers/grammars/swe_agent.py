"""SWE-agent trajectories (``<instance>.traj``) and mini-SWE-agent ones (``<instance>.traj.json``).

SWE-agent writes ``{"environment", "trajectory": [steps], "history": [messages], "info",
"replay_config"}``; mini-SWE-agent ``{"info", "messages": [...], "trajectory_format"}``. The
conversation is ``history`` (``messages``): one interaction per entry, pointer ``/history/<i>``:

- ``system`` -> System; ``user`` -> User, except an observation (``message_type`` observation, or
  a mini-SWE-agent ``<returncode>`` report) and ``tool`` messages, which are the environment's
  results (role tool, speaker ``environment``, kind tool_result, ``extra.exitCode`` from
  ``<returncode>``);
- ``assistant`` -> the agent's reply (speaker ``Assistant``); one that carries an ``action``, or a
  fenced command block, is a tool_call with ``extra.tool`` ``bash`` and a ``callId``
  (``step-<n>``) shared with the observation that answers it;
- in the tool-calling format (mini-SWE-agent 2, OpenAI-style messages), an assistant entry with
  ``tool_calls`` is its reasoning text (a message at ``.../content``, when it has any) and one
  tool_call per call (content the call's arguments as compact JSON, ``extra.tool`` the function,
  ``extra.callId`` the call's id, pointer ``.../tool_calls/<k>``); a ``tool`` entry answers the
  call its ``tool_call_id`` names, its exit code from ``extra.returncode`` or ``<returncode>``.
  An entry's time is its ``timestamp``, else ``extra.timestamp``.

``trajectory`` repeats the history step by step (thought, action, observation) and is a declared
duplicate region when the history is present; ``info`` and ``replay_config`` are metadata
(exit status, cost and call counts go to the session's meta). The session id is the instance id
(``instance_id`` when present, else the file name). The model is the run's configured model
(``replay_config``/``info.config`` ``model_name``, or the config's ``model.name``), a statement for the
whole run (not explicit per turn), split by ``family_model``. A tool result names the call it answers by
``tool_call_id`` or SWE-agent's ``tool_call_ids``. Detection finds a large trajectory by its first steps
(thought, action, observation) when the run's info lies past the sample.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

import orjson
import regex

from models.records import ModelRef, ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._agentlog import family_model, text_of
from parsers.grammars._aiexport import compact, json_text, read_time
from parsers.jsonload import load_json
from parsers.registry import register

_SIGNATURE = regex.compile(r'"(?:trajectory_format|exit_status|model_stats)"\s*:'
                           r'|"message_type"\s*:\s*"(?:thought|action|observation)"|"tool_call_ids"\s*:')
"""Its own keys: the run's info (often at the end of a large file, past the sample), or the history's
entries of SWE-agent's function-calling layout (``message_type``, ``tool_call_ids``)."""
_STEP_KEYS = tuple(regex.compile(rf'"{k}"\s*:') for k in ("thought", "action", "observation"))
_TRAJECTORY = regex.compile(r'"trajectory"\s*:\s*\[')
_SUPPORT = regex.compile(r'"(?:history|messages|trajectory)"\s*:\s*\[')
_RETURNCODE = regex.compile(r"^\s*<returncode>(?P<code>-?\d+)</returncode>")
_FENCE = regex.compile(r"^```[\w-]*[ \t]*\n.*?^```", regex.MULTILINE | regex.DOTALL)
_MODEL_KEY = regex.compile(r'"model_name"\s*:\s*"(?P<m>[^"]+)"|"model"\s*:\s*\{[^{}]*?"name"\s*:\s*"(?P<n>[^"]+)"')
SUFFIXES = (".traj.json", ".traj")


def _instance(data: dict[str, Any], name: str) -> str | None:
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    for value in (data.get("instance_id"), info.get("instance_id")):
        if isinstance(value, str) and value:
            return value
    base = PurePosixPath(name).name
    for suffix in SUFFIXES:
        if base.endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)]
    return None


def _model(data: dict[str, Any]) -> ModelRef | None:
    for key in ("replay_config", "info"):
        value = data.get(key)
        text = value if isinstance(value, str) else orjson.dumps(value).decode() if value else ""
        m = _MODEL_KEY.search(text)
        if m:
            return family_model(m["m"] or m["n"])
    return None


def _is_observation(entry: dict[str, Any]) -> bool:
    if entry.get("role") == "tool" or entry.get("message_type") == "observation":
        return True
    return entry.get("role") == "user" and bool(_RETURNCODE.match(text_of(entry.get("content"))))


def _is_action(entry: dict[str, Any]) -> bool:
    return entry.get("role") == "assistant" and (bool(entry.get("action")) or bool(
        _FENCE.search(text_of(entry.get("content")))) or bool(entry.get("tool_calls")))


@register
class SweAgent(Grammar):
    name = "swe-agent"
    detect_needs = ('"trajectory_format"', '"exit_status"', '"model_stats"', '"message_type"', '"tool_call_ids"',
                    '"trajectory"')  # its signature keys
    version = "1"
    structured = True
    description = "SWE-agent / mini-SWE-agent trajectory (<instance>.traj, <instance>.traj.json)"
    example = '{"history": [{"role": "system", "content": "…"}, …], "trajectory": […], "info": {"exit_status": "…"}}'

    def detect(self, sample: str, name: str) -> float:
        """Its signature keys with a message list; or, in a large file whose sample ends inside the
        ``trajectory`` it starts with, that list's steps (thought, action and observation)."""
        steps = _TRAJECTORY.search(sample) and all(k.search(sample) for k in _STEP_KEYS)
        return 0.95 if (_SIGNATURE.search(sample) or steps) and _SUPPORT.search(sample) else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        data = data if isinstance(data, dict) else {}
        key = "history" if isinstance(data.get("history"), list) else "messages"
        entries = data.get(key) if isinstance(data.get(key), list) else []
        model = _model(data)
        turns = self._turns(entries, key, model)
        regions = [Region(RegionKind.METADATA, f"{k}: the run's configuration and outcome", pointer=f"/{k}")
                   for k in ("info", "replay_config", "environment") if k in data]
        if key == "history" and isinstance(data.get("trajectory"), list):
            regions.append(Region(RegionKind.DUPLICATE, "trajectory: the history again, step by step",
                                  pointer="/trajectory"))
        sid = _instance(data, source.name)
        session = ParsedSession(sid, "source:instance id" if sid else "none", turns, raw=data, pointer="",
                                regions=regions)
        info = data.get("info") if isinstance(data.get("info"), dict) else {}
        stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else None
        session.meta = compact({"agent": "swe-agent", "exitStatus": info.get("exit_status"), "modelStats": stats,
                                "format": data.get("trajectory_format")}) or {}
        yield session

    @staticmethod
    def _turns(entries: list[Any], key: str, model: ModelRef | None) -> list[Turn]:
        turns: list[Turn] = []
        step = 0
        for i, entry in enumerate(entries):
            at = f"/{key}/{i}"
            if not isinstance(entry, dict):
                turns.append(Turn("System", "system", text_of(entry), kind="notice", pointer=at,
                                  extra={"malformedEntry": True}))
                continue
            text = text_of(entry.get("content"))
            when, raw = read_time(_entry_time(entry))
            if _is_observation(entry):
                turns.append(Turn("environment", "tool", text, when, raw, None, "tool_result", pointer=at,
                                  extra=_result_extra(entry, text, step)))
            elif entry.get("role") == "assistant" and _calls(entry):
                step += 1
                turns.extend(_tool_calls(entry, at, text, when, raw, model))
            elif entry.get("role") == "assistant":
                action = _is_action(entry)
                step += action
                extra = {"tool": "bash", "callId": f"step-{step}"} if action else None
                kind = "tool_call" if action else "message"
                turns.append(Turn("Assistant", "assistant", text, when, raw, model, kind, pointer=at, extra=extra,
                                  model_explicit=False))
            elif entry.get("role") == "system":
                turns.append(Turn("System", "system", text, when, raw, None, "message", pointer=at))
            else:
                turns.append(Turn("User", "user" if entry.get("role") == "user" else "other", text, when, raw, None,
                                  "message", pointer=at))
        return turns

    def count_turns(self, raw: Any) -> int:
        """Every entry of ``history`` (else ``messages``); an assistant entry with tool calls counts
        each call, and its text when it has any."""
        if not isinstance(raw, dict):
            return 0
        entries = raw.get("history") if isinstance(raw.get("history"), list) else raw.get("messages")
        if not isinstance(entries, list):
            return 0
        return sum(len(_calls(e)) + bool(text_of(e.get("content")).strip())
                   if isinstance(e, dict) and e.get("role") == "assistant" and _calls(e) else 1 for e in entries)


def _calls(entry: dict[str, Any]) -> list[dict[str, Any]]:
    calls = entry.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _entry_time(entry: dict[str, Any]) -> Any:
    extra = entry.get("extra") if isinstance(entry.get("extra"), dict) else {}
    return entry.get("timestamp", extra.get("timestamp"))


def _result_extra(entry: dict[str, Any], text: str, step: int) -> dict[str, Any] | None:
    extra = entry.get("extra") if isinstance(entry.get("extra"), dict) else {}
    code = extra.get("returncode")
    if not isinstance(code, int) or isinstance(code, bool):
        m = _RETURNCODE.match(text)
        code = int(m["code"]) if m else None
    ids = entry.get("tool_call_ids")
    cid = entry.get("tool_call_id") if isinstance(entry.get("tool_call_id"), str) else (
        ids[0] if isinstance(ids, list) and ids and isinstance(ids[0], str) else f"step-{step}")
    return compact({"callId": cid, "exitCode": code})


def _tool_calls(entry: dict[str, Any], at: str, text: str, when, raw, model: ModelRef | None) -> list[Turn]:
    """The reasoning text and the calls of an assistant entry in the tool-calling format."""
    out = []
    if text.strip():
        out.append(Turn("Assistant", "assistant", text, when, raw, model, "message", pointer=f"{at}/content",
                        model_explicit=False))
    for k, call in enumerate(_calls(entry)):
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        arguments = function.get("arguments")
        try:
            parsed = orjson.loads(arguments) if isinstance(arguments, str) else arguments
        except orjson.JSONDecodeError:
            parsed = arguments
        content = parsed if isinstance(parsed, str) else json_text(parsed)
        extra = {"tool": str(function.get("name") or "bash"), "callId": call.get("id")}
        out.append(Turn("Assistant", "assistant", content, when, raw, model, "tool_call",
                        pointer=f"{at}/tool_calls/{k}", extra=compact(extra), model_explicit=False))
    return out
