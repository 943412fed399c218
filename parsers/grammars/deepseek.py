"""DeepSeek data export ``conversations.json``: conversations with a ``mapping`` tree whose messages are ``fragments``.

Shape: ``[{"id", "title", "inserted_at", "updated_at", "mapping": {"root": {"parent": null, "children":
[...], "message": null}, "1": {"parent": "root", "children": [...], "message": {"model", "inserted_at",
"files", "fragments": [{"type": "REQUEST"|"THINK"|"RESPONSE"|"SEARCH"..., "content"}]}}}}]``. One
session per conversation, session_id = its ``id``.

Decisions:
- The mapping is a tree (an edited question or a regenerated answer is a sibling): the session is the
  branch to the latest leaf by ``inserted_at`` (``_aiexport.current_path``; the export names no current
  node), every message off it an ``off_branch`` region with its text.
- Each fragment is one turn (B2): ``REQUEST`` the user's message, ``THINK`` the model's ``thinking``,
  ``RESPONSE`` its answer, ``SEARCH`` the web results it read (a ``tool`` turn listing them); another
  type is drift, kept as a turn of role other with its content. A message's ``files`` are marked
  ``[file: name]`` in its first turn and each declared as a ``metadata`` region.
- The model is the message's own ``model`` (``deepseek-chat``, ``deepseek-reasoner``): explicit,
  provider ``deepseek``. Names: the export has none, so the speakers are ``user`` and ``assistant``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from models.errors import ParseError, Reason
from models.records import ModelRef, ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import ConversationList, Grammar
from parsers.drift import Drift
from parsers.grammars._aiexport import TimeNotes, current_path, explained_share, read_time
from parsers.jsonload import pointer_part
from parsers.registry import register

PROVIDER = "deepseek"
FRAGMENTS = {"REQUEST": ("user", "message"), "THINK": ("assistant", "thinking"), "RESPONSE": ("assistant", "message"),
             "SEARCH": ("tool", "tool_result")}


def _message(node: Any) -> dict[str, Any] | None:
    message = node.get("message") if isinstance(node, dict) else None
    return message if isinstance(message, dict) else None


def _explains(path: tuple, record: dict) -> bool:
    return len(path) >= 3 and path[-1] == "message" and path[-3] == "mapping" and "fragments" in record


def _is_conversation(entry: Any) -> bool:
    mapping = entry.get("mapping") if isinstance(entry, dict) else None
    return isinstance(mapping, dict) and "inserted_at" in entry


def _search_text(fragment: dict[str, Any]) -> str:
    results = fragment.get("results") if isinstance(fragment.get("results"), list) else []
    lines = [f"[search result: {r.get('title') or ''} {r.get('url') or ''}]".replace("  ", " ").replace(" ]", "]")
             for r in results if isinstance(r, dict)]
    content = fragment.get("content") if isinstance(fragment.get("content"), str) else ""
    return "\n".join(x for x in (content, *lines) if x)


def _fragment_turn(fragment: Any, pointer: str, when, raw: str | None, model: ModelRef | None,
                   drift: Drift) -> Turn:
    kind_of = fragment.get("type") if isinstance(fragment, dict) else None
    role, kind = FRAGMENTS.get(kind_of, ("other", "message"))
    if kind_of not in FRAGMENTS:
        drift.note("fragmentType", str(kind_of), pointer)
    if isinstance(fragment, dict):
        text = _search_text(fragment) if kind_of == "SEARCH" else (
            fragment["content"] if isinstance(fragment.get("content"), str) else "")
    else:
        text = str(fragment)
    speaker = {"user": "user", "assistant": "assistant", "tool": "web search"}.get(role, str(kind_of).lower())
    return Turn(speaker, role, text, when, raw, model if role == "assistant" else None, kind, pointer=pointer)


def _files(message: dict[str, Any]) -> list[str]:
    files = message.get("files") if isinstance(message.get("files"), list) else []
    return [f"[file: {f.get('file_name') or f.get('name') or f.get('id') or ''}]".replace(": ]", "]")
            for f in files if isinstance(f, dict)]


def _branch(mapping: dict[str, Any]) -> tuple[list[str], str | None]:
    parents = {k: (v.get("parent") if isinstance(v, dict) and isinstance(v.get("parent"), str) else None)
               for k, v in mapping.items()}

    def time_of(node: str) -> float | None:
        when = read_time((_message(mapping[node]) or {}).get("inserted_at"))[0]
        return when.timestamp() if when is not None and when.tzinfo is not None else None

    return current_path(parents, None, time_of)


@register
class DeepSeek(Grammar):
    name = "deepseek"
    detect_needs = ('"fragments"',)  # its key
    version = "1"
    structured = True
    conversations = ConversationList(own_key="mapping", wrappers=())
    description = "DeepSeek export conversations.json (mapping tree of fragment messages, the current branch)"
    example = ('[{"id": "…", "title": "…", "inserted_at": "…", "mapping": {"1": {"parent": null, "children": [], '
               '"message": {"model": "deepseek-chat", "inserted_at": "…", "fragments": [{"type": "REQUEST", '
               '"content": "hi"}]}}}}]')

    def detect(self, sample: str, name: str) -> float:
        if '"fragments"' not in sample or '"mapping"' not in sample:
            return 0.0
        return explained_share(sample, _explains, _is_conversation)

    def parse_conversation(self, pointer: str, value: Any, source: SourceText, settings: Settings
                           ) -> Iterator[ParsedSession]:
        if not isinstance(value, dict) or not isinstance(value.get("mapping"), dict):
            raise ParseError(Reason.PARSE_ERROR, f"conversation at {pointer or '/'} has no mapping object",
                             path=source.name, grammar=self.name)
        yield self._conversation(pointer, value)

    def _conversation(self, pointer: str, conv: dict[str, Any]) -> ParsedSession:
        cid = conv.get("id")
        session = ParsedSession(str(cid) if cid else None, "source:id" if cid else "none", [], raw=conv,
                                pointer=pointer)
        session.title = conv.get("title") if isinstance(conv.get("title"), str) and conv["title"] else None
        session.created, session.created_raw = read_time(conv.get("inserted_at"))
        mapping = conv["mapping"]
        branch, note = _branch(mapping)
        if note:
            session.assumptions.append(note)
        times, drift = TimeNotes(), Drift()
        for node in branch:
            self._node(session, f"{pointer}/mapping/{pointer_part(node)}", _message(mapping[node]), times, drift)
        on_branch = set(branch)
        for node, value in mapping.items():
            message = _message(value)
            if node not in on_branch and message is not None:
                text = "\n".join(f["content"] for f in message.get("fragments") or []
                                 if isinstance(f, dict) and isinstance(f.get("content"), str))
                session.regions.append(Region(RegionKind.OFF_BRANCH, "not on the current branch (an edited "
                                              "question or a regenerated answer)",
                                              pointer=f"{pointer}/mapping/{pointer_part(node)}", content=text or None))
        times.flush(session)
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        return session

    @staticmethod
    def _node(session: ParsedSession, at: str, message: dict[str, Any] | None, times: TimeNotes,
              drift: Drift) -> None:
        if message is None:
            return  # the root: no message
        when, raw = read_time(message.get("inserted_at"))
        times.note(when, raw, at)
        name = message.get("model")
        model = ModelRef(PROVIDER, name if isinstance(name, str) and name else None, None)
        fragments = message.get("fragments") if isinstance(message.get("fragments"), list) else []
        marks = _files(message)
        for i, fragment in enumerate(fragments):
            turn = _fragment_turn(fragment, f"{at}/message/fragments/{i}", when, raw, model, drift)
            if i == 0 and marks:
                turn.content = "\n".join(x for x in (turn.content, *marks) if x)
            session.turns.append(turn)
        for i, _ in enumerate(message.get("files") if isinstance(message.get("files"), list) else []):
            session.regions.append(Region(RegionKind.METADATA, "an attached file's record (marked in the message)",
                                          pointer=f"{at}/message/files/{i}"))
        if not fragments:
            session.regions.append(Region(RegionKind.EMPTY_RECORD, "a message with no fragments",
                                          pointer=f"{at}/message"))

    def count_turns(self, raw: Any) -> int:
        """The fragments of the messages on the current branch."""
        mapping = raw.get("mapping") if isinstance(raw, dict) else None
        if not isinstance(mapping, dict):
            return 0
        branch, _ = _branch(mapping)
        return sum(len(m.get("fragments")) for n in branch
                   if (m := _message(mapping[n])) is not None and isinstance(m.get("fragments"), list))
