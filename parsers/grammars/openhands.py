"""OpenHands trajectories: the event list a conversation exports (``trajectory.json``).

A JSON list of events ``{"id", "timestamp", "source", "message", "action"|"observation",
"args"|"extras", "cause"}``. One interaction per event, pointer ``/<i>``:

- action ``message``: from the user -> User, from the agent -> OpenHands (kind message);
  ``system`` -> System; ``think`` -> OpenHands, kind thinking; ``finish`` -> OpenHands, its final
  thought (kind message);
- any other action (``run``, ``run_ipython``, ``edit``, ``read``, ``write``, ``browse``...) is a
  tool_call, ``extra.tool`` the function the model called (``tool_call_metadata.function_name``,
  else the action), ``extra.callId`` ``event-<id>``; its content is the arguments the model sent
  for that call (the ``tool_calls`` entry of ``tool_call_metadata.model_response`` with the
  event's ``tool_call_id``) with the action's ``thought`` beside them, as compact JSON: the
  ``args`` OpenHands keeps are its own translation of the call (an ``edit`` keeps neither the
  command nor the file text); without that metadata, the ``args``;
- an observation answers the action it names in ``cause``: role tool, speaker the action, kind
  tool_result, content its ``content``, ``extra.exitCode`` from ``extras.metadata.exit_code``;
  ``error`` observations are System interactions (kind error); ``agent_state_changed``,
  ``null`` and ``recall`` observations are the runtime's own bookkeeping (declared metadata).

The model is the one the event's ``tool_call_metadata.model_response`` names (explicit per
turn, provider from ``family_model``). The file holds no conversation id: the session id comes
from a ``session-``/``conversation-`` file name, else none.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._agentlog import family_model, text_of
from parsers.grammars._aiexport import TimeNotes, compact, json_text, read_time
from parsers.jsonload import load_json
from parsers.registry import register
from parsers.sessions import file_name_id

AGENT = "OpenHands"
_SIGNATURE = regex.compile(r'\A\s*\[\s*\{')
_SOURCE = regex.compile(r'"source"\s*:\s*"(?:user|agent|environment)"')
_KIND = regex.compile(r'"(?:action|observation)"\s*:\s*"')
BOOKKEEPING = frozenset({"agent_state_changed", "null", "recall", "change_agent_state"})
MESSAGES = {"message": "message", "finish": "message", "think": "thinking", "system": "message"}


def _model(event: dict[str, Any]):
    meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else {}
    response = meta.get("model_response") if isinstance(meta.get("model_response"), dict) else {}
    return family_model(response.get("model"))


def _text(event: dict[str, Any], action: str) -> str:
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    for key in ("content", "final_thought", "thought"):
        if isinstance(args.get(key), str) and args[key].strip():
            return args[key]
    return text_of(event.get("message")) if action != "system" else text_of(args.get("content"))


def _call_text(event: dict[str, Any], meta: dict[str, Any]) -> str:
    """A tool action's content (module docstring)."""
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    response = meta.get("model_response") if isinstance(meta.get("model_response"), dict) else {}
    for choice in response.get("choices") or () if isinstance(response.get("choices"), list) else ():
        message = choice.get("message") if isinstance(choice, dict) else None
        for call in message.get("tool_calls") or () if isinstance(message, dict) else ():
            if isinstance(call, dict) and call.get("id") == meta.get("tool_call_id"):
                sent = (call.get("function") or {}).get("arguments") if isinstance(call.get("function"), dict) else None
                try:
                    arguments = orjson.loads(sent) if isinstance(sent, str) else None
                except orjson.JSONDecodeError:
                    arguments = None
                if isinstance(arguments, dict):
                    thought = args.get("thought")
                    return json_text({**arguments, "thought": thought} if isinstance(thought, str) and thought
                                     else arguments)
    return json_text(event.get("args"))


@register
class OpenHands(Grammar):
    name = "openhands"
    version = "1"
    structured = True
    description = "OpenHands trajectory (the event list of a conversation, trajectory.json)"
    example = '[{"id": 0, "timestamp": "…", "source": "user", "message": "…", "action": "message", "args": {…}}]'

    def detect(self, sample: str, name: str) -> float:
        ok = _SIGNATURE.search(sample) and _SOURCE.search(sample) and _KIND.search(sample)
        return 0.95 if ok else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        events = data if isinstance(data, list) else []
        turns: list[Turn] = []
        regions: list[Region] = []
        times = TimeNotes()
        names: dict[Any, str] = {}
        for i, event in enumerate(events):
            if not isinstance(event, dict):
                turns.append(Turn("System", "system", text_of(event), kind="notice", pointer=f"/{i}",
                                  extra={"malformedEntry": True}))
                continue
            when, raw = read_time(event.get("timestamp"))
            times.note(when, raw, f"/{i}")
            if "observation" in event:
                self._observation(event, i, when, raw, names, turns, regions)
            else:
                turns.append(self._action(event, i, when, raw, names))
        sid = file_name_id(source.name)
        session = ParsedSession(sid, "file-name" if sid else "none", turns, raw=events, pointer="", regions=regions)
        session.meta = {"agent": "openhands"}
        times.flush(session)
        yield session

    @staticmethod
    def _action(event: dict[str, Any], i: int, when, raw, names: dict[Any, str]) -> Turn:
        action = str(event.get("action"))
        at = f"/{i}"
        if action in MESSAGES:
            user = event.get("source") == "user"
            speaker, role = ("User", "user") if user else ("System", "system") if action == "system" else (
                AGENT, "assistant")
            model = _model(event) if role == "assistant" else None
            return Turn(speaker, role, _text(event, action), when, raw, model, MESSAGES[action], pointer=at,
                        extra=compact({"action": action, "id": event.get("id")}))
        meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else {}
        tool = str(meta.get("function_name") or action)
        names[event.get("id")] = tool
        return Turn(AGENT, "assistant", _call_text(event, meta), when, raw, _model(event), "tool_call",
                    pointer=at, extra=compact({"tool": tool, "callId": f"event-{event.get('id')}", "action": action}))

    @staticmethod
    def _observation(event: dict[str, Any], i: int, when, raw, names: dict[Any, str], turns: list[Turn],
                     regions: list[Region]) -> None:
        kind = str(event.get("observation"))
        if kind in BOOKKEEPING:
            regions.append(Region(RegionKind.METADATA, f"observation {kind}: the runtime's own bookkeeping",
                                  pointer=f"/{i}"))
            return
        content = text_of(event.get("content")) or text_of(event.get("message"))
        if kind == "error":
            turns.append(Turn("System", "system", content, when, raw, None, "error", pointer=f"/{i}"))
            return
        extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
        meta = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
        cause = event.get("cause")
        extra = {"callId": f"event-{cause}" if cause is not None else None, "exitCode": meta.get("exit_code"),
                 "observation": kind}
        turns.append(Turn(names.get(cause, kind), "tool", content, when, raw, None, "tool_result", pointer=f"/{i}",
                          extra=compact(extra)))

    def count_turns(self, raw: Any) -> int:
        """Every event except the runtime's bookkeeping observations."""
        return sum(1 for e in raw if not (isinstance(e, dict) and e.get("observation") in BOOKKEEPING))
