"""GitHub Copilot Chat sessions from VS Code: "Chat: Export Chat..." files and ``chatSessions/*.json``.

One JSON object per session (a file holding a list of them gives one session each):
``requesterUsername``, ``responderUsername``, ``requests``; a stored session adds ``version``,
``sessionId``, ``creationDate``, ``lastMessageDate`` and ``customTitle``. Each request
(``/requests/<i>``) is one exchange:

- ``message`` (``{"text", "parts"}``, or a plain string in early files) is one User interaction at
  ``/requests/<i>/message`` (speaker ``requesterUsername``), ``extra`` the request id, the agent,
  the slash command and the names of the attached ``variableData`` variables; an empty message is
  a declared empty record;
- ``response`` is the list of parts VS Code showed, in order, pointer ``/requests/<i>/response/<j>``.
  Markdown (a bare ``{"value"}``, or ``{"kind": "markdownContent", "content": {"value"}}`` in
  older files), inline file references and code block labels that follow each other are one
  Copilot message (the first part's pointer; the others are declared continuations), so a sentence
  cut by a file reference stays one interaction. ``thinking`` is a thinking interaction.
  ``toolInvocationSerialized`` (``toolInvocation`` while live) is a tool_call whose content is the
  call's arguments from ``result.metadata.toolCallRounds`` (matched by call id, else in order when
  the counts agree), else what the part says of it (a terminal command, the raw input, the
  invocation message); when the part holds an outcome (``resultDetails``, ``pastTenseMessage``) or
  ``toolCallResults`` has one, a tool_result follows (role tool, speaker the tool, pointer
  ``.../resultDetails``, ``.../pastTenseMessage`` or the ``toolCallResults`` entry). A
  ``textEditGroup`` is a file_edit interaction (content the edits as compact JSON, ``extra.path``):
  the session record turns it into a file change. ``warning`` and ``confirmation`` are shown in
  the chat: interactions. Progress lines, undo stops, tool announcements and the like are declared
  metadata; unknown kinds are format drift (an interaction when they hold text);
- ``result.errorDetails`` is an error interaction of the responder.

Current VS Code keeps ``chatSessions/<id>.jsonl`` instead: a journal of mutations of that same
object (``_vscode_journal``), replayed and then read as above, every interaction pointing at the
line that wrote its value; values a later line replaced are declared duplicates and lines that
only set session state (the input box, a title, a result's metadata) declared metadata.

The model is the request's ``modelId`` (``copilot/gpt-4.1``, ``github.copilot-chat/claude-sonnet-4``):
the part before the slash is VS Code's language-model vendor, so ``copilot`` and
``github.copilot-chat`` name provider ``github-copilot`` and any other vendor (a bring-your-own-key
provider) names itself; the rest is split by ``split_model``. ``copilot/auto`` names the model that
served it when ``result.metadata.resolvedModel`` does. Response parts carry no time: the user's
message has the request's ``timestamp``, replies the ``responseTimestamp`` where a file has one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import orjson
import regex

from models.records import ModelRef, ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.drift import Drift
from parsers.grammars._agentlog import bad_line_turn, masked, read_lines, split_model, text_of
from parsers.grammars._aiexport import TimeNotes, compact, json_text, read_time
from parsers.grammars._vscode_journal import Journal, journal_head
from parsers.jsonload import load_json, pointer_part
from parsers.registry import register

RESPONDER = "GitHub Copilot"
VENDORS = {"copilot": "github-copilot", "github.copilot-chat": "github-copilot"}
TEXT_KINDS = frozenset({None, "markdownContent", "inlineReference", "codeblockUri", "markdownVuln"})
TOOL_KINDS = frozenset({"toolInvocationSerialized", "toolInvocation"})
EDIT_KINDS = frozenset({"textEditGroup", "notebookEditGroup"})
CREATE_TOOLS = frozenset({"create_file", "copilot_createFile"})
SHOWN_KINDS = {"warning": ("system", "warning"), "confirmation": ("assistant", "confirmation")}
META_KINDS = {
    "prepareToolInvocation": "the announcement of the tool call that follows",
    "undoStop": "an undo checkpoint between edits",
    "progressMessage": "a progress line shown while the reply was written",
    "progressTask": "a progress line shown while the reply was written",
    "progressTaskSerialized": "a progress line shown while the reply was written",
    "mcpServersStarting": "MCP servers starting",
    "codeCitation": "a public-code match notice for a code block",
    "command": "a command button",
    "commandButton": "a command button",
    "references": "the references the reply used",
    "contentReferences": "the references the reply used",
    "clearToPreviousToolInvocation": "a display reset",
    "autoModeResolution": "the model auto mode chose (the request's model)",
}
REQUEST_LISTS = {
    "followups": "follow-up questions the chat suggested (buttons, not said)",
    "contentReferences": "the references the reply used",
    "codeCitations": "public-code matches for the reply's code",
    "promptTokenDetails": "how the prompt's tokens were spent",
    "editedFileEvents": "the user's decisions on the proposed edits",
    "responseMarkdownInfo": "where the reply's code blocks are",
}
_SIGNATURE = regex.compile(r'"(?:responderUsername|requesterUsername)"\s*:')
_REQUESTS = regex.compile(r'"requests"\s*:\s*\[')
_REQUEST_ID = regex.compile(r'"requestId"\s*:\s*"')
_FENCES = regex.compile(r"^(?:\s*```[\w+-]*[ \t]*)+\s*$")
_UUID_NAME = regex.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _plain(parent: str, key: Any, node: Any) -> str:
    """Where a value is in a session object read as it is: under its parent, at its key."""
    return f"{parent}/{pointer_part(str(key))}"


Locate = Callable[[str, Any, Any], str]


@dataclass(slots=True)
class _Request:
    """What one request's walk needs: where it and its parts are, its model and time, its tool
    call rounds and stored results, the tool calls made so far."""

    at: str
    model: ModelRef | None
    when: Any
    raw: str | None
    calls: dict[str, dict[str, Any]]
    ordered: list[dict[str, Any]]
    results: dict[str, Any]
    results_at: str
    locate: Locate
    response_at: str = ""
    parts: list[Any] = field(default_factory=list)
    tool_turns: list[Turn] = field(default_factory=list)

    def part_at(self, j: int) -> str:
        return self.locate(self.response_at, j, self.parts[j])


@dataclass(slots=True)
class _State:
    speaker: str
    locate: Locate = _plain
    turns: list[Turn] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    times: TimeNotes = field(default_factory=TimeNotes)
    drift: Drift = field(default_factory=Drift)


def copilot_model(model_id: Any, resolved: Any = None) -> ModelRef | None:
    """A request's ``modelId`` as provider, name and version (module docstring)."""
    if not isinstance(model_id, str) or not model_id.strip():
        return None
    vendor, slash, name = model_id.strip().partition("/")
    if not slash:
        vendor, name = "copilot", vendor
    if name == "auto" and isinstance(resolved, str) and resolved.strip():
        name = resolved.strip()
    return split_model(VENDORS.get(vendor, vendor), name)


def _text(value: Any) -> str:
    """The text of an ``IMarkdownString`` (``{"value"}``), a string, a list of either, or a
    serialized prompt element (``{"node": ...}``, how tool results are stored): its text leaves."""
    if isinstance(value, dict):
        return _node_text(value["node"]) if isinstance(value.get("node"), dict) else _text(value.get("value"))
    if isinstance(value, list):
        return "".join(_text(v) for v in value)
    return value if isinstance(value, str) else ""


def _node_text(node: dict[str, Any]) -> str:
    """The text leaves of a serialized prompt-tsx element tree, one per line, in order."""
    out: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item.get("text"), str):
            out.append(item["text"])
        children = item.get("children")
        stack.extend(reversed([c for c in children if isinstance(c, dict)] if isinstance(children, list) else []))
    return "\n".join(out)


def call_key(call_id: Any) -> str | None:
    """A tool call id as the response parts write it: the model's id, without the ``__vscode-<n>``
    VS Code appends to it in ``toolCallRounds`` and ``toolCallResults``."""
    return call_id.partition("__vscode-")[0] if isinstance(call_id, str) and call_id else None


def _uri_path(value: Any) -> str:
    """The path a serialized URI, a location (``{"uri", "range"}``) or a URI string points at."""
    if isinstance(value, str):
        return value.removeprefix("file://")
    if not isinstance(value, dict):
        return ""
    if "uri" in value:
        return _uri_path(value["uri"])
    for key in ("fsPath", "path", "external"):
        if isinstance(value.get(key), str) and value[key]:
            return value[key]
    return ""


def _part_text(part: dict[str, Any]) -> str:
    """The text a markdown-like part adds to its message."""
    kind = part.get("kind")
    if kind == "inlineReference":
        name = part.get("name")
        path = _uri_path(part.get("inlineReference"))
        label = name if isinstance(name, str) and name else PurePosixPath(path).name
        return f"`{label}`" if label else ""
    if kind == "codeblockUri":
        return ""
    if kind in ("markdownContent", "markdownVuln"):  # the text under content, or under value as converters write it
        return _text(part.get("content")) or _text(part.get("value"))
    return _text(part.get("value"))


def _journal_path(entry: dict[str, Any]) -> str:
    """What a journal line that says nothing sets: the session's initial state or a property path."""
    if entry.get("kind") == 0:
        return "the session's initial state (id, dates, input box)"
    path = entry.get("k") if isinstance(entry.get("k"), list) else []
    return "sets " + ".".join(str(k) for k in path) if path else "a session property"


def _session_id(data: dict[str, Any], requests: list[Any], name: str | None) -> tuple[str | None, str]:
    """The stored session's ``sessionId``; in an export (which drops it) the ``sessionId`` Copilot
    wrote in its first request's result metadata, else a UUID file name."""
    if isinstance(data.get("sessionId"), str) and data["sessionId"]:
        return data["sessionId"], "source:sessionId"
    for req in requests:
        sid = _result_of(req)[1].get("sessionId") if isinstance(req, dict) else None
        if isinstance(sid, str) and sid:
            return sid, "source:result.metadata.sessionId"
    stem = PurePosixPath(name).name.removesuffix(".jsonl").removesuffix(".json") if name else ""
    return (stem, "file-name") if _UUID_NAME.match(stem) else (None, "none")


def _fence(part: dict[str, Any]) -> bool:
    """A markdown part that is only code fences: what VS Code writes around an edit block (the
    edit is its own part), not something said."""
    return part.get("kind") in (None, "markdownContent") and bool(_FENCES.match(_part_text(part)))


def _kind(part: Any) -> Any:
    return part.get("kind") if isinstance(part, dict) else "?"


def _rounds(metadata: dict[str, Any]) -> tuple[dict[str, dict], list[dict]]:
    """The tool calls of ``toolCallRounds``, by id and in order."""
    by_id: dict[str, dict] = {}
    ordered: list[dict] = []
    rounds = metadata.get("toolCallRounds")
    for rnd in rounds if isinstance(rounds, list) else ():
        calls = rnd.get("toolCalls") if isinstance(rnd, dict) else None
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict):
                ordered.append(call)
                if call_key(call.get("id")):
                    by_id[call_key(call["id"])] = call
    return by_id, ordered


def _result_of(req: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    result = req.get("result") if isinstance(req.get("result"), dict) else {}
    metadata = result.get("metadata") if isinstance(result.get("metadata"), dict) else {}
    return result, metadata


def _stored(metadata: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """``toolCallResults`` by call key: (the key as stored, the result)."""
    results = metadata.get("toolCallResults")
    return {call_key(k): (k, v) for k, v in results.items() if call_key(k)} if isinstance(results, dict) else {}


def _subagent(part: dict[str, Any]) -> dict[str, Any]:
    data = part.get("toolSpecificData")
    return data if isinstance(data, dict) and data.get("kind") == "subagent" else {}


def _has_result(part: dict[str, Any], results: dict[str, tuple[str, Any]]) -> bool:
    return ("resultDetails" in part or "pastTenseMessage" in part or isinstance(_subagent(part).get("result"), str)
            or call_key(part.get("toolCallId")) in results)


def _user_text(message: Any) -> str:
    if isinstance(message, dict):
        return text_of(message.get("text")) if message.get("text") is not None else text_of(message.get("parts"))
    return text_of(message)


def _variables(req: dict[str, Any]) -> list[str] | None:
    data = req.get("variableData")
    items = data.get("variables") if isinstance(data, dict) else None
    names = [str(v.get("name")) for v in items or () if isinstance(v, dict) and v.get("name")]
    return names or None


@register
class CopilotChat(Grammar):
    name = "copilot-chat"
    version = "1"
    structured = True
    description = "GitHub Copilot Chat session from VS Code (Chat: Export Chat..., chatSessions/*.json)"
    example = ('{"requesterUsername": "octocat", "responderUsername": "GitHub Copilot", "requests": '
               '[{"message": {"text": "…"}, "response": [{"value": "…"}], "modelId": "copilot/gpt-4.1"}]}')

    def detect(self, sample: str, name: str) -> float:
        if journal_head(sample):
            return 0.95
        head = sample.lstrip("\ufeff \t\r\n")[:1]
        if head not in ("{", "[") or not _REQUESTS.search(sample):
            return 0.0
        return 0.95 if _SIGNATURE.search(sample) or _REQUEST_ID.search(sample) else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        if journal_head(source.text):
            yield self._journal_session(source)
            return
        data = load_json(source.text, source.name, self.name)
        if isinstance(data, list):
            for i, item in enumerate(data):
                yield self._session(item if isinstance(item, dict) else {}, f"/{i}", None)
        else:
            yield self._session(data if isinstance(data, dict) else {}, "", source.name)

    def _journal_session(self, source: SourceText) -> ParsedSession:
        """A session kept as VS Code's journal (``_vscode_journal``): the replayed session read as
        the ``.json`` layout, each value at the line that wrote it; what later lines replaced is a
        declared duplicate, a line that is not JSON a System notice."""
        doc = read_lines(source.text)
        journal = Journal(doc)
        data = journal.state if isinstance(journal.state, dict) else {}
        session = self._session(data, "", source.name, journal.locate)
        session.raw = masked(doc, range(len(doc)))
        session.regions.extend(Region(RegionKind.DUPLICATE, "replaced by a later line of the journal", pointer=p)
                               for p in journal.stale())
        for n in journal.unreadable:
            if isinstance(doc[n], str):
                session.turns.append(bad_line_turn(doc[n], n))
            else:
                session.regions.append(Region(RegionKind.METADATA, "journal line of an unknown kind", pointer=f"/{n}"))
        if journal.unreadable:
            session.warnings.append(f"{len(journal.unreadable)} journal lines could not be replayed: kept as they are")
        owned = {p.split("/", 2)[1] for p in (t.pointer for t in session.turns) if p}
        owned |= {r.pointer.split("/", 2)[1] for r in session.regions if r.pointer}
        session.regions.extend(Region(RegionKind.METADATA, f"journal line: {_journal_path(doc[n])}", pointer=f"/{n}")
                               for n in range(len(doc)) if isinstance(doc[n], dict) and str(n) not in owned)
        session.meta["layout"] = "journal"
        return session

    def _session(self, data: dict[str, Any], base: str, name: str | None, locate: Locate = _plain) -> ParsedSession:
        user = data.get("requesterUsername")
        state = _State(user if isinstance(user, str) and user.strip() else "User", locate)
        responder = data.get("responderUsername")
        responder = responder if isinstance(responder, str) and responder.strip() else RESPONDER
        requests = data.get("requests") if isinstance(data.get("requests"), list) else []
        listed = locate(base, "requests", requests)
        for i, req in enumerate(requests):
            at = locate(listed, i, req)
            if isinstance(req, dict):
                self._request(state, req, at, responder)
            else:
                state.turns.append(Turn("System", "system", text_of(req), kind="notice", pointer=at,
                                        extra={"malformedEntry": True}))
        sid, id_source = _session_id(data, requests, name)
        session = ParsedSession(sid, id_source, state.turns, raw=data, pointer=base, regions=state.regions)
        session.title = data.get("customTitle") if isinstance(data.get("customTitle"), str) else None
        session.created, session.created_raw = read_time(data.get("creationDate"))
        session.meta = compact({
            "agent": "copilot-chat", "version": data.get("version"), "initialLocation": data.get("initialLocation"),
            "responder": responder, "lastMessageDateRaw": data.get("lastMessageDate"),
            "tokenUsage": dict(sorted(state.tokens.items())),
            "formatDrift": state.drift.as_meta() if state.drift else None}) or {}
        state.times.flush(session)
        return session

    def _request(self, state: _State, req: dict[str, Any], at: str, responder: str) -> None:
        result, metadata = _result_of(req)
        when, raw = read_time(req.get("timestamp"))
        state.times.note(when, raw, at)
        self._message(state, req, at, when, raw)
        self._usage(state, result, metadata)
        for key, value in req.items():  # lists of objects the request keeps beside what was said
            if key != "response" and isinstance(value, list) and any(isinstance(v, dict) for v in value):
                state.regions.append(Region(RegionKind.METADATA, REQUEST_LISTS.get(key, f"request field {key!r}"),
                                            pointer=state.locate(at, key, value)))
        by_id, ordered = _rounds(metadata)
        reply_when, reply_raw = read_time(req.get("responseTimestamp"))
        response = req.get("response")
        served = copilot_model(req.get("modelId"), _served(metadata, response))
        loc = state.locate
        result_at = loc(at, "result", result)
        results_at = loc(loc(result_at, "metadata", metadata), "toolCallResults", metadata.get("toolCallResults"))
        ctx = _Request(at, served, reply_when, reply_raw, by_id, ordered, _stored(metadata), results_at, loc)
        if isinstance(response, list):
            ctx.response_at, ctx.parts = loc(at, "response", response), response
            self._response(state, ctx, response, responder)
        error, where = _error(req, result)
        if error is not None:
            error_at = loc(result_at, "errorDetails", error) if where.startswith("result/") else loc(at, where, error)
            state.turns.append(Turn(responder, "system", _text(error.get("message")), ctx.when, ctx.raw, None,
                                    "error", pointer=error_at,
                                    extra=compact({"code": error.get("code"),
                                                   "filtered": error.get("responseIsFiltered") or None})))

    @staticmethod
    def _message(state: _State, req: dict[str, Any], at: str, when: Any, raw: str | None) -> None:
        text = _user_text(req.get("message"))
        message_at = state.locate(at, "message", req.get("message"))
        if not text.strip():
            state.regions.append(Region(RegionKind.EMPTY_RECORD, "request with no message text", pointer=message_at))
            return
        agent = req.get("agent") if isinstance(req.get("agent"), dict) else {}
        command = req.get("slashCommand") if isinstance(req.get("slashCommand"), dict) else {}
        extra = compact({"requestId": req.get("requestId"), "agent": agent.get("id"),
                         "slashCommand": command.get("name"), "variables": _variables(req),
                         "responseCanceled": True if req.get("isCanceled") else None})
        state.turns.append(Turn(state.speaker, "user", text, when, raw, None, "message", pointer=message_at,
                                extra=extra))

    @staticmethod
    def _usage(state: _State, result: dict[str, Any], metadata: dict[str, Any]) -> None:
        usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        pairs = [("promptTokens", usage.get("promptTokens", metadata.get("promptTokens"))),
                 ("completionTokens", usage.get("completionTokens", metadata.get("outputTokens")))]
        for key, value in pairs:
            if isinstance(value, int) and not isinstance(value, bool):
                state.tokens[key] = state.tokens.get(key, 0) + value

    def _response(self, state: _State, ctx: _Request, parts: list[Any], responder: str) -> None:
        run: list[tuple[int, str]] = []
        # a subagent's own calls are not in the request's rounds: only the request's calls pair in order
        invocations = [p for p in parts if _kind(p) in TOOL_KINDS and not p.get("subAgentInvocationId")]
        in_order = len(invocations) == len(ctx.ordered) and not any(
            call_key(p.get("toolCallId")) in ctx.calls for p in invocations)
        seen_tools = 0
        for j, part in enumerate(parts):
            kind = _kind(part)
            if kind in TEXT_KINDS and isinstance(part, dict) and not _fence(part):
                run.append((j, _part_text(part)))
                continue
            self._flush(state, ctx, run, responder)
            run = []
            if kind in TEXT_KINDS:
                state.regions.append(Region(RegionKind.BOILERPLATE, "a code fence VS Code writes around an edit block",
                                            pointer=ctx.part_at(j)))
            elif kind in TOOL_KINDS:
                call = ctx.calls.get(call_key(part.get("toolCallId")) or "")
                if in_order and not part.get("subAgentInvocationId"):
                    call, seen_tools = ctx.ordered[seen_tools], seen_tools + 1
                self._tool(state, ctx, part, j, call, responder)
            elif kind in EDIT_KINDS:
                state.turns.append(self._edit(part, ctx, ctx.part_at(j), responder))
            else:
                self._other(state, ctx, part, j, responder)
        self._flush(state, ctx, run, responder)

    @staticmethod
    def _flush(state: _State, ctx: _Request, run: list[tuple[int, str]], responder: str) -> None:
        """One message for a run of markdown-like parts; the parts after the first are continuations."""
        if not run:
            return
        first = ctx.part_at(run[0][0])
        text = "".join(t for _, t in run)
        if not text.strip():
            for j, _ in run:
                state.regions.append(Region(RegionKind.EMPTY_RECORD, "response part with no text",
                                            pointer=ctx.part_at(j)))
            return
        state.turns.append(Turn(responder, "assistant", text, ctx.when, ctx.raw, ctx.model, "message", pointer=first))
        for j, _ in run[1:]:
            state.regions.append(Region(RegionKind.CONTINUATION, f"part of the message at {first}",
                                        pointer=ctx.part_at(j)))

    def _other(self, state: _State, ctx: _Request, part: Any, j: int, responder: str) -> None:
        at = ctx.part_at(j)
        kind = _kind(part)
        if kind == "thinking":
            text = _text(part.get("value"))
            if text.strip():
                state.turns.append(Turn(responder, "assistant", text, ctx.when, ctx.raw, ctx.model, "thinking",
                                        pointer=at, extra=compact({"id": part.get("id")})))
            else:
                state.regions.append(Region(RegionKind.EMPTY_RECORD, "empty thinking part", pointer=at))
        elif kind in SHOWN_KINDS:
            role, turn_kind = SHOWN_KINDS[kind]
            text = "\n".join(t for t in (_text(part.get("title")), _text(part.get("message")),
                                         _text(part.get("content"))) if t)
            state.turns.append(Turn(responder, role, text, ctx.when, ctx.raw, None, turn_kind, pointer=at))
        elif kind in META_KINDS:
            state.regions.append(Region(RegionKind.METADATA, f"{kind}: {META_KINDS[kind]}", pointer=at))
        else:
            self._unknown(state, ctx, part, at)

    @staticmethod
    def _unknown(state: _State, ctx: _Request, part: Any, at: str) -> None:
        kind = str(_kind(part))
        state.drift.note("contentType", kind, at)
        text = _unknown_text(part)
        if text.strip():
            state.turns.append(Turn(kind, "other", text, ctx.when, ctx.raw, None, kind, pointer=at))
        else:
            state.regions.append(Region(RegionKind.METADATA, f"response part {kind!r} without text", pointer=at))

    @staticmethod
    def _edit(part: dict[str, Any], ctx: _Request, at: str, responder: str) -> Turn:
        """The edits an editor applied to one file; ``byTool`` names the call of this request whose
        arguments name the same file (the session record counts that change once, at the call)."""
        path = _uri_path(part.get("uri"))
        quoted = orjson.dumps(path).decode()[1:-1] if path else None
        by_tool = next((t.extra.get("callId") or t.extra.get("tool") for t in reversed(ctx.tool_turns)
                        if quoted and t.extra and quoted in t.content), None)
        edits = []
        groups = part.get("edits") if isinstance(part.get("edits"), list) else []
        for group in groups:
            for edit in group if isinstance(group, list) else [group]:
                if isinstance(edit, dict):
                    rng = edit.get("range") if isinstance(edit.get("range"), dict) else {}
                    edits.append({"range": [rng.get(k) for k in ("startLineNumber", "startColumn", "endLineNumber",
                                                                "endColumn")], "text": edit.get("text")})
        content = json_text({"path": path, "edits": edits})
        return Turn(responder, "assistant", content, ctx.when, ctx.raw, ctx.model, "file_edit", pointer=at,
                    extra=compact({"path": path or None, "editKind": _kind(part), "done": part.get("done"),
                                   "byTool": by_tool}))

    def _tool(self, state: _State, ctx: _Request, part: dict[str, Any], j: int, call: dict | None,
              responder: str) -> None:
        at = ctx.part_at(j)
        cid = part.get("toolCallId") if isinstance(part.get("toolCallId"), str) else None
        name = str((call or {}).get("name") or part.get("toolId") or "tool")
        content = _call_input(part, call)
        parent = part.get("subAgentInvocationId")
        extra = {"tool": name, "callId": cid, "toolId": part.get("toolId") if part.get("toolId") != name else None,
                 "fileOperation": "create" if name in CREATE_TOOLS else None,
                 "sidechain": True if parent else None, "startedBy": parent}
        state.turns.append(Turn(responder, "assistant", content, ctx.when, ctx.raw, ctx.model, "tool_call", pointer=at,
                                extra=compact(extra)))
        ctx.tool_turns.append(state.turns[-1])
        if not _has_result(part, ctx.results):
            return
        where, text = _outcome(part, ctx.results.get(call_key(cid) or ""), at, ctx)
        details = part.get("resultDetails") if isinstance(part.get("resultDetails"), dict) else {}
        data = part.get("toolSpecificData") if isinstance(part.get("toolSpecificData"), dict) else {}
        terminal = data.get("terminalCommandState") if isinstance(data.get("terminalCommandState"), dict) else {}
        code = terminal.get("exitCode")
        extra = {"callId": cid, "isError": True if details.get("isError") else None,
                 "exitCode": code if isinstance(code, int) and not isinstance(code, bool) else None,
                 "sidechain": True if parent else None, "startedBy": parent}
        state.turns.append(Turn(name, "tool", text, ctx.when, ctx.raw, None, "tool_result", pointer=where,
                                extra=compact(extra)))

    def count_turns(self, raw: Any) -> int:
        """Per request: a message with text, every run of markdown-like parts with text, every
        thinking with text, edit group, warning, confirmation and unknown part with text, every tool
        invocation and every invocation with an outcome, an error with a message."""
        lines = None
        if isinstance(raw, dict) and isinstance(raw.get("0"), dict) and raw["0"].get("kind") == 0:
            lines = [raw.get(str(n)) for n in range(max(int(k) for k in raw if k.isdigit()) + 1)]
            raw = Journal(lines).state
        requests = raw.get("requests") if isinstance(raw, dict) and isinstance(raw.get("requests"), list) else []
        bad = sum(isinstance(line, str) for line in lines or ())
        return bad + sum(_count_request(r) if isinstance(r, dict) else 1 for r in requests)


def _count_request(req: dict[str, Any]) -> int:
    result, metadata = _result_of(req)
    results = _stored(metadata)
    count = bool(_user_text(req.get("message")).strip()) + (_error(req, result)[0] is not None)
    text = ""
    for part in req.get("response") if isinstance(req.get("response"), list) else ():
        kind = _kind(part)
        if kind in TEXT_KINDS and isinstance(part, dict) and not _fence(part):
            text += _part_text(part)
            continue
        count += bool(text.strip())
        text = ""
        if kind in TEXT_KINDS:
            continue  # a code fence around an edit block
        if kind in TOOL_KINDS:
            count += 1 + _has_result(part, results)
        elif kind in EDIT_KINDS or kind in SHOWN_KINDS:
            count += 1
        elif kind == "thinking":
            count += bool(_text(part.get("value")).strip())
        elif kind not in META_KINDS:
            count += bool(_unknown_text(part).strip())
    return count + bool(text.strip())


def _served(metadata: dict[str, Any], response: Any) -> str | None:
    """The model that served an ``auto`` request: ``resolvedModel``, an ``autoModeResolution`` part,
    or the model of its first tool call round."""
    if isinstance(metadata.get("resolvedModel"), str):
        return metadata["resolvedModel"]
    for part in response if isinstance(response, list) else ():
        resolved = part.get("resolved") if _kind(part) == "autoModeResolution" else None
        if isinstance(resolved, dict) and isinstance(resolved.get("id"), str):
            return resolved["id"]
    rounds = metadata.get("toolCallRounds")
    first = rounds[0] if isinstance(rounds, list) and rounds and isinstance(rounds[0], dict) else {}
    return first.get("modelId") if isinstance(first.get("modelId"), str) else None


def _error(req: dict[str, Any], result: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The error shown instead of (or after) a reply: ``result.errorDetails``, in early files
    ``responseErrorDetails``; None when there is none or it has no message."""
    for error, where in ((result.get("errorDetails"), "result/errorDetails"),
                         (req.get("responseErrorDetails"), "responseErrorDetails")):
        if isinstance(error, dict) and _text(error.get("message")).strip():
            return error, where
    return None, ""


def _unknown_text(part: Any) -> str:
    if not isinstance(part, dict):
        return text_of(part)
    for key in ("value", "content", "message", "title"):
        text = _text(part.get(key))
        if text:
            return text
    return ""


def _call_input(part: dict[str, Any], call: dict | None) -> str:
    """The call's arguments as compact JSON (what the model sent), else what the part shows of them."""
    args = (call or {}).get("arguments")
    if isinstance(args, str) and args.strip():
        try:
            return json_text(orjson.loads(args))
        except orjson.JSONDecodeError:
            return args
    if isinstance(args, dict):
        return json_text(args)
    data = part.get("toolSpecificData") if isinstance(part.get("toolSpecificData"), dict) else {}
    if data.get("kind") == "terminal":
        line = data.get("commandLine")
        # what ran: the user's edit of the command, else the tool's rewrite of it, else the model's
        command = _text(line.get("userEdited") or line.get("toolEdited") or line.get("original")) if isinstance(
            line, dict) else None
        return json_text({"command": command or _text(data.get("command"))})
    if data.get("kind") == "input" and "rawInput" in data:
        return json_text(data["rawInput"])
    if data.get("kind") == "subagent" and isinstance(data.get("prompt"), str):
        return json_text({k: data[k] for k in ("agentName", "description", "prompt") if isinstance(data.get(k), str)})
    return _text(part.get("invocationMessage")) or f"[{part.get('toolId') or 'tool'}]"


def _outcome(part: dict[str, Any], stored: tuple[str, Any] | None, at: str, ctx: _Request) -> tuple[str, str]:
    """(pointer, text) of a tool invocation's outcome: the output the part shows, else the text of
    its ``toolCallResults`` entry, else a subagent's result, else the files it lists or its
    past-tense line."""
    details = part.get("resultDetails")
    details_at = ctx.locate(at, "resultDetails", details)
    if isinstance(details, dict):
        output = details.get("output")
        text = "\n".join(_text(o) for o in output) if isinstance(output, list) else _text(output)
        if text:
            return details_at, text
    key, value = stored if stored is not None else (str(part.get("toolCallId")), None)
    content = value.get("content") if isinstance(value, dict) else value
    texts = [v for v in (_text(c) for c in content) if v] if isinstance(content, list) else [_text(content)]
    stored_at = ctx.locate(ctx.results_at, key, value)
    if any(texts):
        return stored_at, "\n".join(texts)
    if isinstance(_subagent(part).get("result"), str):
        return f"{ctx.locate(at, 'toolSpecificData', part['toolSpecificData'])}/result", _subagent(part)["result"]
    summary = _text(part.get("pastTenseMessage"))
    if isinstance(details, list):
        paths = [p for p in (_uri_path(d) for d in details) if p]
        return details_at, "\n".join([summary, *paths]).strip()
    if "pastTenseMessage" in part:
        return ctx.locate(at, "pastTenseMessage", part["pastTenseMessage"]), summary
    return (details_at, "") if details is not None else (stored_at, "")
