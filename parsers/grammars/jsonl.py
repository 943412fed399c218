"""JSON Lines chat logs: API-style messages, chat records with common field names, fine-tune lines.

Record layouts are data (``LAYOUTS``): each names the fields that hold a record's author, text
and time, and a line is read with the first layout whose author field (and text or media field)
it has: ``{"role", "content"}`` (OpenAI / Anthropic API style, with ``name``, ``model``,
``tool_calls``, content blocks), ``{"sender_name", "timestamp_ms", "content"}`` (Messenger style,
photos and files as markers), ``{"from", "text", "date"}`` (Telegram style, text entities joined),
``{"author", "message"|"content", "time"|"timestamp"}`` (an author object's name when it is one),
``{"user_name"|"username"|"user", "text", "ts"}`` (Slack style, ``ts`` epoch text), and generic
``speaker``/``sender``/``nick`` records. A line holding a whole conversation is a session of its own:
``{"messages": [...]}`` of API-style messages (the OpenAI fine-tuning format), ``{"conversations":
[{"from": "human", "value": ...}]}`` (ShareGPT), ``{"conversation": [...]}`` (LMSYS style), or a bare
list of API-style messages (in a file of more than one line: a single line holding a list is a JSON
document, ``openai_chat.py``). ``conversation`` reads one such list, for ``openai_chat.py`` too.
A line that wraps its record under its own type is read with that type's layout (``WRAPPED``): the
Mattermost bulk export (``import.jsonl``: ``{"type": "post", "post": {"team", "channel", "user",
"message", "create_at", "replies"}}``, ``direct_post`` likewise) is one session per channel or direct
channel, each post's ``replies`` turns after it, ``system_*`` posts System turns with the user as
actor, and its server, team, channel and user lines declared metadata.

Sessions: one per file, or one per value of a session field (``session_id``, ``conversation_id``,
``thread_id``, ``chat_id``, ``channel_id`` and their camelCase forms), in order of first appearance;
lines without such a field belong to the session of the line before (the file's first session at
the start); a fine-tune line is a session. A single-session file with no session field takes its
id from a ``session-<id>.jsonl`` file name.

**The document and its pointers.** A JSON Lines file is read as one JSON document: the list of its
lines, each parsed (line *n* at index *n-1*; blank lines null, a line that is not JSON its text).
Every turn and region pointer is absolute in it (``/4`` is line 5, ``/0/messages/2`` the third
message of line 1). A fine-tune session's ``raw`` is its line's object at ``/<index>``; a
message-per-line session's ``raw`` is its own view of the document, an object holding only its
lines under their indexes (``{"0": ..., "3": ...}``), so the same pointers hold in it while the
lines of interleaved sessions stay apart. Turns also carry their line (``lines``).

Nothing is dropped silently: a line that is not a JSON object, or is cut off, makes its session
partial, naming the line numbers (and the independent count counts it); an object that is not a
message record (no author and no text field: a file header, an event) is declared a ``metadata``
region with its JSON kept. Keys a layout does not know are tallied with their first pointer in
``meta["formatDrift"]``. ``model`` is an explicit model name; a provider only when given
(``"provider"``, or ``"openai/gpt-4o"``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import orjson
import regex

from models.records import ModelRef, ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.drift import Drift
from parsers.grammars._aiexport import TimeNotes, compact, json_text, malformed_turn, odd_warning, read_time
from parsers.registry import register
from parsers.sample import BAD_JSON, json_line, whole_nonblank
from parsers.sessions import file_name_id
from parsers.speakers import role_of

SESSION_KEYS = ("session_id", "conversation_id", "thread_id", "chat_id", "channel_id",
                "sessionId", "conversationId", "threadId", "chatId", "channelId")
ROLES = {"user": "user", "human": "user", "assistant": "assistant", "model": "assistant", "system": "system",
         "developer": "system", "tool": "tool", "function": "tool", "ipython": "tool"}
_EPOCH_TEXT = regex.compile(r"^\d{9,13}(?:\.\d+)?$")


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


_TEXT_KEYS = ("thinking", "content", "value", "output", "result", "summary", "refusal", "transcript")
_MAX_VERBATIM = 2000


def _unknown_block(kind: Any, block: dict[str, Any]) -> str:
    """A content block of a type not known here: a marker and the text it holds (never dropped)."""
    for key in _TEXT_KEYS:
        value = block.get(key)
        if isinstance(value, str) and value:
            return f"[{kind}]\n{value}"
    rest = {k: v for k, v in block.items() if k != "type"}
    verbatim = json_text(rest) if rest else ""
    return f"[{kind}]\n{verbatim}" if verbatim and len(verbatim) <= _MAX_VERBATIM else f"[{kind}]"


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
                elif isinstance(block.get("text"), str):  # a text entity (bold, link...) keeps its text
                    out.append(block["text"])
                else:
                    out.append(_unknown_block(kind, block))
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


_SESSION_KEYSET = frozenset(SESSION_KEYS)


def _session_key(obj: dict[str, Any]) -> tuple[str, Any] | None:
    if _SESSION_KEYSET.isdisjoint(obj):
        return None
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


@dataclass(frozen=True, slots=True)
class Layout:
    """One recognised set of field names for a chat record: who, what, when (first present wins)."""

    name: str
    actor: tuple[str, ...]
    content: tuple[str, ...]
    time: tuple[str, ...]
    media: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    """Other keys the layout knows (not format drift)."""
    marks: tuple[str, ...] = ()
    """Keys a record must all have to be this layout (one exporter's own field set)."""
    facts: tuple[str, ...] = ()
    """Keys kept in the turn's ``extra`` when they hold something (a quote, reactions, a deleted flag)."""
    suffix: str = ""
    """What the exporter appends to every text (signal-export's Markdown line break): not the text's."""

    def known_keys(self) -> frozenset[str]:
        return frozenset((*self.actor, *self.content, *self.time, *self.media, *self.extra, *self.marks,
                          *self.facts, *SESSION_KEYS))


_COMMON = ("id", "type", "model", "provider", "reactions", "edited", "edited_at", "reply_to", "reply_to_message_id",
           "is_unsent", "attachments", "files")
LAYOUTS: tuple[Layout, ...] = (
    Layout("api", ("role",), ("content",), ("timestamp", "created_at", "created", "time"),
           extra=("name", "tool_calls", "function_call", "tool_call_id", *_COMMON)),
    Layout("messenger", ("sender_name",), ("content",), ("timestamp_ms", "timestamp"),
           media=("photos", "videos", "audio_files", "gifs", "sticker", "share", "files", "attachments"),
           extra=(*_COMMON, "is_geoblocked_for_viewer", "is_unsent_image_by_messenger_kid_parent")),
    Layout("sharegpt", ("from",), ("value",), ("timestamp", "time", "date"), extra=("weight", "loss", *_COMMON)),
    Layout("telegram", ("from",), ("text",), ("date", "date_unixtime"),
           media=("photo", "file", "media_type", "sticker_emoji"),
           extra=(*_COMMON, "from_id", "text_entities", "date_unixtime", "edited_unixtime", "forwarded_from",
                  "width", "height", "duration_seconds", "mime_type", "thumbnail", "file_name", "file_size")),
    # signal-export's data.json (one message per line): its own field set, its texts end with two spaces
    Layout("signal-export", ("sender",), ("body",), ("date",), media=("attachments", "sticker"),
           marks=("sender", "body", "quote", "reactions", "deleted", "call", "missed"),
           facts=("quote", "reactions", "deleted", "call", "missed"), suffix="  "),
    Layout("author", ("author",), ("message", "content", "text"), ("time", "timestamp", "date", "created_at"),
           media=("attachments", "embeds"), extra=_COMMON),
    Layout("slack", ("user_name", "username", "user"), ("text",), ("ts", "timestamp", "time", "date"),
           media=("files", "attachments"), extra=(*_COMMON, "subtype", "thread_ts", "team", "blocks", "bot_id")),
    Layout("generic", ("speaker", "sender", "nick", "nickname", "from_name", "user_name", "username", "user"),
           ("text", "message", "body", "msg", "content"),
           ("timestamp", "time", "date", "datetime", "ts", "created_at", "sent_at", "timestamp_ms"),
           media=("attachments", "files", "media"), extra=_COMMON),
)
"""Recognised field-name sets, most specific first."""
_REPLY_KEYS = ("type", "props", "edit_at", "reactions", "replies", "is_pinned", "flagged_by", "attachments")
WRAPPED: dict[str, Layout] = {
    "post": Layout("mattermost", ("user",), ("message",), ("create_at",), media=("attachments",),
                   extra=("team", "channel", *_REPLY_KEYS)),
    "direct_post": Layout("mattermost-direct", ("user",), ("message",), ("create_at",), media=("attachments",),
                          extra=("channel_members", *_REPLY_KEYS)),
}
"""Records a line wraps under its own type (the Mattermost bulk export: ``{"type": "post", "post": {...}}``),
read with that type's layout at ``/<line>/<type>``; their ``replies`` are turns of their own after them."""
WRAPPED_SESSION = {"post": ("team", "channel"), "direct_post": ("channel_members",)}
"""The fields of a wrapped record that name its conversation (one session per channel or direct channel)."""
ENTITIES = frozenset({"version", "role", "scheme", "team", "channel", "user", "direct_channel", "emoji", "bot"})
"""The other lines of a Mattermost bulk export (server, teams, channels, users): declared metadata."""
_KNOWN = {layout.name: layout.known_keys() for layout in (*LAYOUTS, *WRAPPED.values())}
_ACTOR_NAMES = ("name", "display_name", "global_name", "username", "nickname", "id")


def layout_of(obj: dict[str, Any]) -> Layout | None:
    """The first layout whose author field and text (or media) field the record has."""
    for layout in LAYOUTS:
        if layout.marks and not all(k in obj for k in layout.marks):
            continue
        if any(k in obj for k in layout.actor) and (
                layout.name == "api" or any(k in obj for k in layout.content) or any(k in obj for k in layout.media)):
            return layout
    return None


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return key, value
    return None, None


def _actor(value: Any) -> str:
    if type(value) is str and value:
        return value
    if isinstance(value, dict):
        _, value = _first(value, _ACTOR_NAMES)
    return "unknown" if value is None or value == "" else str(value)


def _time(key: str | None, value: Any) -> tuple[Any, str | None]:
    if isinstance(value, str) and _EPOCH_TEXT.match(value):  # Slack's "1700000000.000200"
        when, _ = read_time(float(value), guess_millis=key == "timestamp_ms" or len(value.split(".")[0]) >= 12)
        return when, value
    return read_time(value)


def _entities(value: Any) -> str:
    """A record's text: Telegram-style lists of text pieces and entities are one inline text."""
    if isinstance(value, list) and all(isinstance(v, str) or (isinstance(v, dict) and isinstance(v.get("text"), str))
                                       for v in value):
        return "".join(v if isinstance(v, str) else v["text"] for v in value)
    return _content(value)


def _media_item(item: Any) -> str:
    if isinstance(item, dict):
        _, ref = _first(item, ("uri", "url", "file_name", "filename", "name", "title", "path"))
        return str(ref) if ref is not None else json_text(item)
    return str(item)


def _media(key: str, value: Any) -> str:
    """An attachment field as a marker naming what it holds (``[photos: photos/1.jpg, photos/2.jpg]``)."""
    items = value if isinstance(value, list) else [value]
    return f"[{key}: {', '.join(_media_item(i) for i in items)}]"


RECORD_ROLES = {**ROLES, "gpt": "assistant", "bot": "assistant", "chatgpt": "assistant", "bard": "assistant",
                "bing": "assistant", "function_call": "assistant", "observation": "tool", "function_response": "tool"}
"""Role names chat datasets use as authors (ShareGPT's ``human``/``gpt``); any other author is a person."""


RECORD_KINDS = {"function_call": "tool_call", "tool_call": "tool_call"}


def actor_role(speaker: str) -> str:
    return RECORD_ROLES.get(speaker.lower()) or role_of(speaker)


_ROLE_KIND: dict[str, tuple[str, str]] = {}


def _role_kind(speaker: str) -> tuple[str, str]:
    """(role, kind) of a record's author, computed once per distinct author."""
    found = _ROLE_KIND.get(speaker)
    if found is None:
        role = actor_role(speaker)
        kind = RECORD_KINDS.get(speaker.lower()) or {"system": "system", "tool": "tool_result"}.get(role, "message")
        found = _ROLE_KIND[speaker] = (role, kind)
    return found


def record_turn(layout: Layout, obj: dict[str, Any], lines: tuple[int, int] | None, pointer: str,
                times: TimeNotes) -> Turn:
    """A chat record of a non-API layout as one turn; media become markers after the text."""
    # Runs once per line of files with millions of lines: the plain text record takes the short road.
    get = obj.get
    speaker = _actor(_first(obj, layout.actor)[1])
    body = _first(obj, layout.content)[1]
    content = body if type(body) is str else ("" if body is None else _entities(body))
    if layout.suffix and content.endswith(layout.suffix):
        content = content[:-len(layout.suffix)]
    media = [_media(key, obj[key]) for key in layout.media if get(key)]
    if media:
        content = "\n".join(p for p in (content, *media) if p)
    key, value = _first(obj, layout.time)
    when, raw = _time(key, value)
    if when is None and raw is not None:
        times.note(when, raw, f"line {lines[0]}" if lines else pointer)
    mid, typ = get("id"), get("type")
    extra = compact({"messageId": mid, "type": typ}) if mid is not None or typ is not None else None
    if layout.facts:
        facts = {key: value for key in layout.facts if (value := get(key))}  # a false flag says nothing
        extra = {**(extra or {}), **facts} or None
    role, kind = _role_kind(speaker)
    model = get("model")
    return Turn(speaker, role, content, when, raw, _model(model, get("provider")) if model else None, kind, lines,
                pointer, extra)


def wrapped(obj: dict[str, Any]) -> str | None:
    """The type of a line that wraps its record under that type (``{"type": "post", "post": {...}}``), else None."""
    kind = obj.get("type")
    return kind if type(kind) is str and kind in WRAPPED and type(obj.get(kind)) is dict else None


def wrapped_turn(kind: str, record: dict[str, Any], lines: tuple[int, int], pointer: str, times: TimeNotes) -> Turn:
    """A wrapped record as a turn; a Mattermost ``system_*`` post is a System turn with its user as actor."""
    turn = record_turn(WRAPPED[kind], record, lines, pointer, times)
    subtype = record.get("type")
    if type(subtype) is str and subtype.startswith("system_"):
        return replace(turn, speaker="System", role="system", kind="system",
                       extra={**(turn.extra or {}), "actor": turn.speaker})
    return turn


def _wrapped_session(obj: dict[str, Any], kind: str) -> tuple[str, Any]:
    fields = WRAPPED_SESSION[kind]
    values = [obj[kind].get(f) for f in fields]
    shown = [",".join(sorted(map(str, v))) if type(v) is list else str(v) for v in values]
    return "+".join(fields), "/".join(shown)


def _line_turns(value: Any) -> int:
    """Turns a line holds by the independent count: a wrapped record and its replies, a message record one."""
    if type(value) is not dict:
        return 1
    kind = wrapped(value)
    if kind is not None:
        replies = value[kind].get("replies")
        return 1 + (len(replies) if type(replies) is list else 0)
    if _entity(value):
        return 0
    return 0 if _FIELDS.isdisjoint(value) else 1


def _entity(obj: dict[str, Any]) -> bool:
    """A Mattermost bulk export's server, team, channel or user line (``{"type": "user", "user": {...}}``)."""
    kind = obj.get("type")
    return type(kind) is str and kind in ENTITIES and kind in obj


KNOWN_BLOCKS = frozenset({"text", "input_text", "output_text", "image", "image_url", "input_image", "tool_use",
                          "tool_result"})
_CONVERSATION_KEYS = frozenset({"messages", "conversations", "conversation", "dialog", "dialogue", *SESSION_KEYS,
                                "id", "tools", "functions", "parallel_tool_calls", "metadata", "model", "turn",
                                "language", "system"})


def note_drift(drift: Drift, obj: dict[str, Any], layout: Layout, pointer: str) -> None:
    """Keys the layout does not know, and content block types the content reader does not know."""
    drift.unknown_keys(obj, _KNOWN[layout.name], pointer)
    blocks = obj.get("content")
    if layout.name == "api" and isinstance(blocks, list):
        _note_blocks(drift, blocks, pointer)


def _note_blocks(drift: Drift, blocks: list[Any], pointer: str) -> None:
    for i, block in enumerate(blocks):
        if isinstance(block, dict) and block.get("type") not in KNOWN_BLOCKS:
            drift.note("contentType", str(block.get("type")), f"{pointer}/content/{i}")


_SHAPES: dict[tuple[str, ...], tuple[Layout | None, tuple[str, ...]]] = {}
_MAX_SHAPES = 4096


def _shape(obj: dict[str, Any]) -> tuple[Layout | None, tuple[str, ...]]:
    """(layout, unknown keys) of a record, by its keys alone: computed once per distinct key list."""
    keys = tuple(obj)
    found = _SHAPES.get(keys)
    if found is None:
        layout = layout_of(obj)
        unknown = tuple(str(k) for k in keys if layout is not None and k not in _KNOWN[layout.name])
        found = (layout, unknown)
        if len(_SHAPES) < _MAX_SHAPES:
            _SHAPES[keys] = found
    return found


class LineView(dict):
    """A message-per-line session's view of the file's document: its lines under their indexes."""

    __slots__ = ()


class _Group:
    """The lines of one session in a message-per-line file."""

    __slots__ = ("bad", "drift", "field", "key", "regions", "times", "turns", "view")

    def __init__(self, field: str | None, key: Any) -> None:
        self.field, self.key = field, key
        self.view = LineView()
        self.bad: list[int] = []
        self.turns: list[Turn] = []
        self.regions: list[Region] = []
        self.times = TimeNotes()
        self.drift = Drift()

    def add(self, number: int, obj: Any, line: str) -> None:
        index = number - 1
        pointer = f"/{index}"
        if type(obj) is not dict:
            self.view[str(index)] = line if obj is _NOT_JSON else obj
            self.bad.append(number)
            return
        self.view[str(index)] = obj
        kind = wrapped(obj)
        if kind is not None:
            self._wrapped(number, obj[kind], kind)
            return
        layout, unknown = _shape(obj)
        if layout is None:
            entity = _entity(obj)
            self.regions.append(Region(RegionKind.METADATA, f"the export's {obj['type']} record" if entity else
                                       "an object with no author and no text field", pointer=pointer,
                                       content=json_text(obj)))
            if not entity:
                self.drift.note("record", "no message fields", pointer)
            return
        for key in unknown:
            self.drift.note("key", key, pointer)
        if layout.name == "api":
            if type(obj.get("content")) is list:
                _note_blocks(self.drift, obj["content"], pointer)
            self.turns.append(message_turn(obj, (number, number), pointer, self.times))
        else:
            self.turns.append(record_turn(layout, obj, (number, number), pointer, self.times))


    def _wrapped(self, number: int, record: dict[str, Any], kind: str) -> None:
        at = f"/{number - 1}/{kind}"
        self.drift.unknown_keys(record, _KNOWN[WRAPPED[kind].name], at)
        self.turns.append(wrapped_turn(kind, record, (number, number), at, self.times))
        replies = record.get("replies")
        for j, reply in enumerate(replies if type(replies) is list else ()):
            where = f"{at}/replies/{j}"
            self.turns.append(wrapped_turn(kind, reply, (number, number), where, self.times) if type(reply) is dict
                              else malformed_turn(reply, where, (number, number)))


_NOT_JSON = object()


CONVERSATION_LISTS: tuple[tuple[str, bool], ...] = (
    ("messages", True), ("conversations", False), ("conversation", False), ("dialog", False), ("dialogue", False),
)
"""Keys of a conversation-per-line record and whether their entries must be API-style (``role``):
``messages`` (OpenAI fine-tuning), ``conversations`` (ShareGPT ``from``/``value``), ``conversation``
(LMSYS style). A ``messages`` list of other records (a platform export on one line) is not one."""


_CONVERSATION_KEYSET = frozenset(key for key, _ in CONVERSATION_LISTS)


def conversation_key(obj: Any) -> str | None:
    """The key of a conversation-per-line record's message list, or None."""
    if type(obj) is not dict or _CONVERSATION_KEYSET.isdisjoint(obj):
        return None
    for key, api_only in CONVERSATION_LISTS:
        entries = obj.get(key)
        if not isinstance(entries, list):
            continue
        dicts = [m for m in entries[:5] if isinstance(m, dict)]
        if not entries or (dicts and all(("role" in m) if api_only else layout_of(m) is not None for m in dicts)):
            return key
    return None


def _messages_held(obj: Any) -> int:
    """How many message records a line that is no chat record holds (a platform's page of messages), at least one."""
    if type(obj) is not dict:
        return 1
    return max([1, *(len(v) for k, v in obj.items() if k in _CONVERSATION_KEYSET and isinstance(v, list))])


def _opens_document(line: str) -> bool:
    """True for the first line of an indented JSON document (``[``, ``{``, ``[{``, ``{"key": [``)."""
    text = line.strip()
    if text in ("[", "{", "[{"):
        return True
    if text[:1] in "[{":
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError:
            return text.endswith(("[", "{", ","))
    return False


def api_list(value: Any) -> bool:
    """True for a bare list of API-style messages (``[{"role": ..., "content": ...}, ...]``): its first
    entries are objects with a ``role`` (a conversation without the ``{"messages": ...}`` around it)."""
    if type(value) is not list or not value:
        return False
    head = value[:5]
    return all(type(m) is dict and "role" in m for m in head)


def conversation(holder: Any, entries: list[Any], base: str, at: str) -> ParsedSession:
    """One conversation's session: ``entries`` (at pointer ``at``) read one turn each, held by ``holder``
    (at pointer ``base``: the line's object, a bare list, or a whole document), whose session field names
    it and whose other keys are the conversation's metadata (unknown ones are format drift)."""
    found = _session_key(holder) if type(holder) is dict else None
    session = ParsedSession(None if found is None else str(found[1]),
                            "none" if found is None else f"source:{found[0]}", [], raw=holder, pointer=base)
    times = TimeNotes()
    odd = 0
    drift = Drift()
    if type(holder) is dict:
        drift.unknown_keys(holder, _CONVERSATION_KEYS, base)
    for i, m in enumerate(entries):
        pointer = f"{at}/{i}"
        layout = layout_of(m) if isinstance(m, dict) else None
        if layout is None:
            odd += 1
            session.turns.append(malformed_turn(m, pointer))
            continue
        note_drift(drift, m, layout, pointer)
        turn = message_turn if layout.name == "api" else partial(record_turn, layout)
        session.turns.append(turn(m, None, pointer, times))
    if odd:
        session.warnings.append(odd_warning(odd, at.rpartition("/")[2] if at != base else "list"))
    if drift:
        session.meta["formatDrift"] = drift.as_meta()
    times.flush(session)
    return session


@register
class JsonLines(Grammar):
    name = "jsonl"
    version = "3"
    structured = True
    description = "JSON Lines chat logs: API-style messages, chat records (Messenger, Telegram, Slack style...), " \
                  "fine-tuning conversations"
    example = '{"role": "assistant", "content": "Hello!", "model": "gpt-4o-mini", "timestamp": "2025-01-01T10:00:00Z"}'

    def detect(self, sample: str, name: str) -> float:
        """The share of the sample's message records that are chat records, counted like the JSON
        grammars count theirs: a message-per-line record is one, a conversation per line holds one per
        message (an empty one none), and any other line counts as the messages it holds, at least one.
        So a line of another platform's page with forty messages weighs forty, as its own grammar
        counts it, and empty pages (``{"ok": true, "messages": []}``) explain nothing."""
        lines = whole_nonblank(sample, 200)  # the sample may end inside its last line
        if lines and _opens_document(lines[0]):
            return 0.0  # a pretty-printed JSON document, whose inner lines may look like records
        explained = total = empty = 0
        many = len(lines) > 1  # a single line holding a list is a JSON document: the JSON grammars read it
        for ln in lines:
            obj = json_line(sample, ln)
            if obj is BAD_JSON:
                total += 1
                continue
            key = conversation_key(obj)
            if key is not None or (many and api_list(obj)):
                held = len(obj[key] if key is not None else obj)
                explained, total, empty = explained + held, total + held, empty + (not held)
            elif type(obj) is dict and layout_of(obj) is not None:
                explained, total = explained + 1, total + 1
            elif type(obj) is dict and wrapped(obj) is not None:
                held = _line_turns(obj)
                explained, total = explained + held, total + held
            elif type(obj) is dict and _entity(obj):
                continue  # a Mattermost export's server, team, channel or user line: it holds no message
            else:
                total += _messages_held(obj)
        if not total:  # nothing but empty conversations: what they are is all the sample says
            return 1.0 if empty else 0.0
        return explained / total

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        # Sessions are yielded in order of first appearance; a message-per-line session is open
        # until the file ends (its lines may interleave with others), so all are built first.
        order: list[_Group | ParsedSession] = []
        groups: dict[Any, _Group] = {}
        current: _Group | None = None
        pending: list[tuple[int, Any, str]] = []
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        for number, line in enumerate(source.text.split("\n"), 1):
            if not line or line.isspace():
                continue
            try:
                obj = loads(line)
            except decode_error:
                obj = _NOT_JSON
            if (key := conversation_key(obj)) is not None:
                order.append(conversation(obj, obj[key], f"/{number - 1}", f"/{number - 1}/{key}"))
                continue
            if api_list(obj):  # a bare list of API messages on one line
                order.append(conversation(obj, obj, f"/{number - 1}", f"/{number - 1}"))
                continue
            kind = wrapped(obj) if type(obj) is dict else None
            found = _wrapped_session(obj, kind) if kind else _session_key(obj) if type(obj) is dict else None
            if current is None and found is None and type(obj) is dict and layout_of(obj) is None:
                pending.append((number, obj, line))  # a file header: it goes with the first session
                continue
            if current is None or (found is not None and found[1] != current.key):
                field, key = found or (None, None)
                current = groups.get(key)
                if current is None:
                    current = groups[key] = _Group(field, key)
                    order.append(current)
                    for held in pending:
                        current.add(*held)
                    pending.clear()
            current.add(number, obj, line)
        if pending:  # a file of headers only
            order.append(group := _Group(None, None))
            for held in pending:
                group.add(*held)
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
        session = ParsedSession(sid, id_source, group.turns, raw=group.view, pointer="", regions=group.regions)
        if group.bad:
            shown = ", ".join(map(str, group.bad[:20])) + (" ..." if len(group.bad) > 20 else "")
            session.coverage_reason = f"{len(group.bad)} lines are not JSON message objects (lines {shown})"
        if group.drift:
            session.meta["formatDrift"] = group.drift.as_meta()
        group.times.flush(session)
        return session

    def count_turns(self, raw: Any) -> int:
        """Its own count from the raw lines: each line of a message-per-line session that is not a
        JSON object, or an object with any author or text field of any layout, is one turn; a
        fine-tuning conversation has one per entry of ``messages``."""
        if isinstance(raw, LineView):
            return sum(_line_turns(value) for value in raw.values())
        if isinstance(raw, list):  # a bare list of API messages
            return len(raw)
        return next(len(raw[key]) for key, _ in CONVERSATION_LISTS if isinstance(raw.get(key), list))


_FIELDS = frozenset(k for layout in LAYOUTS for k in (*layout.actor, *layout.content))
