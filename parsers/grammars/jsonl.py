"""JSON Lines message logs in the OpenAI / Anthropic API style.

Two shapes, decided per line:
- a message per line: ``{"role": "user", "content": "..."}`` with optional ``model``, ``name``,
  ``timestamp``/``created``/``created_at`` (ISO text or epoch seconds or milliseconds),
  ``tool_calls`` (or the older ``function_call``), ``tool_call_id``; ``content`` may be a list of
  blocks (text, image, tool_use, tool_result). One session per file, or one per value of
  ``session_id``/``conversation_id``/``thread_id``, in order of first appearance; lines without
  such a field belong to the session of the line before (the file's first session at the start);
- a conversation per line (the OpenAI fine-tuning format): ``{"messages": [...]}``, one session
  per line, its id from the same fields when the line has one.

Speaker is ``name`` when given, else the role as written. A line that is not a JSON object is
never dropped silently: the session it falls in is marked partial naming the line numbers, and
the independent count, which counts that session's non-blank lines, shows the gap. ``model`` is
an explicit model name; a provider only when given (``"provider"``, or ``"openai/gpt-4o"``). A
single-session file with no session field takes its id from a ``session-<id>.jsonl`` file name.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import regex

from models.records import ModelRef, ParsedSession, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._aiexport import TimeNotes, compact, json_text, malformed_turn, odd_warning, read_time
from parsers.registry import register
from parsers.sessions import file_name_id

SESSION_KEYS = ("session_id", "conversation_id", "thread_id")
ROLES = {"user": "user", "human": "user", "assistant": "assistant", "model": "assistant", "system": "system",
         "developer": "system", "tool": "tool", "function": "tool", "ipython": "tool"}
_NON_BLANK = regex.compile(r"^[ \t]*\S", regex.MULTILINE)


def _image(block: dict[str, Any]) -> str:
    """An image block as a marker: its URL when it has a short one (never a base64 data URL)."""
    ref = block.get("image_url")
    url = ref.get("url") if isinstance(ref, dict) else ref
    source = block.get("source")
    if not isinstance(url, str) and isinstance(source, dict):
        url = source.get("url")
    if isinstance(url, str) and url and not url.startswith("data:") and len(url) <= 500:
        return f"[image: {url}]"
    return "[image]"


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
                elif kind in ("image", "image_url", "input_image"):
                    out.append(_image(block))
                elif kind == "tool_use":
                    out.append(f"[tool_use: {block.get('name', '')}]\n{json_text(block.get('input'))}")
                elif kind == "tool_result":
                    out.append(f"[tool_result]\n{_content(block.get('content'))}")
                else:
                    out.append(f"[{kind}]")
            else:
                out.append(json_text(block))
        return "\n".join(out)
    return "" if value is None else json_text(value)


_MODELS: dict[tuple[str, str | None], ModelRef] = {}


def _model(name: Any, provider: Any) -> ModelRef | None:
    """ModelRef of a ``model`` (and ``provider``) field, one object per distinct pair."""
    if not isinstance(name, str) or not name:
        return None
    provider = provider if isinstance(provider, str) and provider else None
    ref = _MODELS.get((name, provider))
    if ref is None:
        given, short = provider, name
        if given is None and "/" in name.strip("/"):
            given, short = name.split("/", 1)
        ref = _MODELS[(name, provider)] = ModelRef(given, short, None)
    return ref


def _session_key(obj: dict[str, Any]) -> tuple[str, Any] | None:
    for key in SESSION_KEYS:
        value = obj.get(key)
        if value is not None and value != "":
            return key, value
    return None


def message_turn(m: dict[str, Any], lines: tuple[int, int] | None, pointer: str | None, times: TimeNotes) -> Turn:
    # Called once per line of files with millions of lines: plain messages take the short road.
    get = m.get
    raw_role = get("role")
    raw_role = raw_role if isinstance(raw_role, str) and raw_role else str(raw_role or "unknown")
    role = ROLES.get(raw_role, "other")
    name = get("name")
    speaker = name if isinstance(name, str) and name else (str(name) if name else raw_role)
    body = get("content")
    kind = "tool_result" if role == "tool" else ("system" if role == "system" else "message")
    if isinstance(body, str):
        content = body
    else:
        content = _content(body)
        if isinstance(body, list):
            blocks = {b.get("type") for b in body if isinstance(b, dict)}
            if blocks and blocks <= {"tool_result"}:
                kind = "tool_result"
            elif "tool_use" in blocks and role != "system":
                kind = "tool_call"
    extra = None
    if "tool_calls" in m or "function_call" in m or "tool_call_id" in m or "id" in m:
        calls = get("tool_calls") if isinstance(get("tool_calls"), list) and get("tool_calls") else None
        if calls is None and isinstance(get("function_call"), dict):
            calls = [{"type": "function", "function": m["function_call"]}]
        if calls:
            kind = "tool_call"
            names = ", ".join(str((c.get("function") or {}).get("name", "")) for c in calls if isinstance(c, dict))
            content = "\n".join(x for x in (content, f"[tool_calls: {names}]") if x)
        extra = compact({"toolCalls": calls, "toolCallId": get("tool_call_id"), "messageId": get("id")})
    value = get("timestamp")
    if value is None:
        value = get("created_at")
        if value is None:
            value = get("created")
            if value is None:
                value = get("time")
    when, raw = read_time(value)
    if when is None and raw is not None:
        times.note(when, raw, f"line {lines[0]}" if lines else str(pointer))
    return Turn(speaker, role, content, when, raw, _model(get("model"), get("provider")), kind, lines, pointer, extra)


class _Group:
    """The lines of one session in a message-per-line file."""

    __slots__ = ("bad", "field", "key", "lines", "times", "turns")

    def __init__(self, field: str | None, key: Any) -> None:
        self.field, self.key = field, key
        self.lines: list[int] = []
        self.bad: list[int] = []
        self.turns: list[Turn] = []
        self.times = TimeNotes()


@register
class JsonLines(Grammar):
    name = "jsonl"
    version = "2"
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
        # Sessions are yielded in order of first appearance; a message-per-line session is open
        # until the file ends (its lines may interleave with others), so all are built first.
        order: list[_Group | ParsedSession] = []
        groups: dict[Any, _Group] = {}
        current: _Group | None = None
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        for number, line in enumerate(source.text.split("\n"), 1):
            if not line or line.isspace():
                continue
            try:
                obj = loads(line)
            except decode_error:
                obj = None
            is_dict = type(obj) is dict
            if is_dict and isinstance(obj.get("messages"), list):
                order.append(self._conversation(number, obj))
                continue
            found = _session_key(obj) if is_dict else None
            if current is None or (found is not None and found[1] != current.key):
                field, key = found or (None, None)
                current = groups.get(key)
                if current is None:
                    current = groups[key] = _Group(field, key)
                    order.append(current)
            current.lines.append(number)
            if is_dict:
                current.turns.append(message_turn(obj, (number, number), None, current.times))
            else:
                current.bad.append(number)
        whole_file = len(order) == 1 and isinstance(order[0], _Group)
        for item in order:
            yield item if isinstance(item, ParsedSession) else self._group_session(item, source, whole_file)

    @staticmethod
    def _group_session(group: _Group, source: SourceText, whole_file: bool) -> ParsedSession:
        if group.key is not None:
            sid, id_source = str(group.key), f"source:{group.field}"
        elif whole_file and file_name_id(source.name):
            sid, id_source = file_name_id(source.name), "file-name"
        else:
            sid, id_source = None, "none"
        # One session for the whole file: its count is a scan of the text itself.
        raw = ("text", source.text) if whole_file else ("lines", group.lines)
        session = ParsedSession(sid, id_source, group.turns, raw=raw, lines=(group.lines[0], group.lines[-1]))
        if group.bad:
            shown = ", ".join(map(str, group.bad[:20])) + (" ..." if len(group.bad) > 20 else "")
            session.coverage_reason = f"{len(group.bad)} lines are not JSON message objects (lines {shown})"
        group.times.flush(session)
        return session

    @staticmethod
    def _conversation(number: int, obj: dict[str, Any]) -> ParsedSession:
        found = _session_key(obj)
        session = ParsedSession(None if found is None else str(found[1]),
                                "none" if found is None else f"source:{found[0]}", [],
                                raw=("messages", obj["messages"]), lines=(number, number))
        times = TimeNotes()
        odd = 0
        for i, m in enumerate(obj["messages"]):
            if isinstance(m, dict):
                session.turns.append(message_turn(m, (number, number), f"/messages/{i}", times))
            else:
                odd += 1
                session.turns.append(malformed_turn(m, f"/messages/{i}", (number, number)))
        if odd:
            session.warnings.append(odd_warning(odd, "messages"))
        times.flush(session)
        return session

    def count_turns(self, raw: Any) -> int:
        """Non-blank lines of the session (a scan of the whole text for a one-session file), or the
        entries of a fine-tuning line's ``messages``."""
        how, value = raw
        if how == "text":
            return len(_NON_BLANK.findall(value))
        return len(value)
