"""Grok (xAI) data export: ``{"conversations": [{"conversation": {...}, "responses": [{"response": {...}}]}]}``.

One session per conversation, session_id = ``conversation_id``, title and creation time from the
conversation object.

Decisions:
- Responses form a tree (``parent_response_id``; a regenerated answer is a sibling): the session
  is the branch to ``leaf_response_id`` when the export names it, else to the latest leaf
  (``_aiexport.current_path``, the assumption recorded); every response off it is an
  ``off_branch`` region with its text.
- ``sender`` ``human`` is the user, ``assistant`` (any case) Grok; anything else is drift, role other.
- A response's ``thinking_trace`` is the model's own turn before its answer: a ``thinking``
  interaction of its own (B2), pointing at that field.
- The model: a response's own ``model`` when it has one (explicit); otherwise the model the user's
  message asked for (``metadata.requestModelDetails.modelId`` of the parent), which the export
  states for the request, not the answer: not explicit (rule A2 applies). Provider ``xai``.
- Times: ISO text, or MongoDB-style ``{"$date": {"$numberLong": ms}}`` / ``{"$date": text}``.
- Attachments and generated images add ``[file: id]`` / ``[image: url]`` marker lines; web search
  results and cited results are counted in ``extra``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from models.errors import ParseError, Reason
from models.records import ModelRef, ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import ConversationList, Grammar
from parsers.drift import Drift
from parsers.grammars._aiexport import (
    TimeNotes,
    compact,
    current_path,
    explained_share,
    malformed_turn,
    read_time,
)
from parsers.registry import register

PROVIDER = "xai"
ROLES = {"human": "user", "user": "user", "assistant": "assistant", "grok": "assistant", "system": "system"}


def grok_time(value: Any) -> tuple[datetime | None, str | None]:
    """A Grok export time: ISO text, epoch, or a MongoDB extended-JSON ``$date``."""
    if isinstance(value, dict) and "$date" in value:
        inner = value["$date"]
        if isinstance(inner, dict) and "$numberLong" in inner:
            try:
                return read_time(int(inner["$numberLong"]))
            except (TypeError, ValueError):
                return None, str(inner["$numberLong"])
        return read_time(inner)
    return read_time(value)


def _response(entry: Any) -> dict[str, Any] | None:
    inner = entry.get("response") if isinstance(entry, dict) else None
    return inner if isinstance(inner, dict) else None


def _explains(path: tuple, record: dict) -> bool:
    return "sender" in record and ("response_id" in record or (len(path) >= 2 and path[-1] == "response"))


def _is_conversation(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("conversation"), dict) and "responses" in entry


def _marks(r: dict[str, Any]) -> list[str]:
    out = []
    for key, label in (("file_attachments", "file"), ("image_attachments", "image"),
                       ("generated_image_urls", "generated image")):
        for item in r.get(key) if isinstance(r.get(key), list) else ():
            out.append(f"[{label}: {item}]" if isinstance(item, str) and item else f"[{label}]")
    return out


def _model(r: dict[str, Any], parent: dict[str, Any] | None) -> tuple[ModelRef | None, bool]:
    if isinstance(r.get("model"), str) and r["model"]:
        return ModelRef(PROVIDER, r["model"], None), True
    meta = parent.get("metadata") if isinstance(parent, dict) and isinstance(parent.get("metadata"), dict) else {}
    details = meta.get("requestModelDetails") if isinstance(meta.get("requestModelDetails"), dict) else {}
    asked = details.get("modelId")
    return ModelRef(PROVIDER, asked if isinstance(asked, str) and asked else None, None), False


class _Reader:
    """The turns of one conversation's responses (see the module docstring)."""

    def __init__(self, responses: list[Any], base: str) -> None:
        self.responses, self.base = responses, base
        self.by_id = {r["response_id"]: r for r in map(_response, responses) if r and r.get("response_id")}
        self.times, self.drift = TimeNotes(), Drift()

    def turns(self, i: int) -> list[Turn]:
        pointer = f"{self.base}/responses/{i}/response"
        r = _response(self.responses[i])
        if r is None:
            return [malformed_turn(self.responses[i], f"{self.base}/responses/{i}")]
        sender = r.get("sender") if isinstance(r.get("sender"), str) else "unknown"
        role = ROLES.get(sender.lower(), "other")
        if role == "other":
            self.drift.note("sender", sender, pointer)
        when, raw = grok_time(r.get("create_time"))
        self.times.note(when, raw, pointer)
        model, explicit = (_model(r, self.by_id.get(r.get("parent_response_id"))) if role == "assistant"
                           else (None, True))
        text = "\n".join(x for x in (r.get("message") if isinstance(r.get("message"), str) else "", *_marks(r)) if x)
        extra = compact({"responseId": r.get("response_id"), "partial": r.get("partial") or None,
                         "webSearchResults": len(r.get("web_search_results") or []) or None,
                         "citedWebSearchResults": len(r.get("cited_web_search_results") or []) or None,
                         "error": r.get("error")})
        out = []
        thinking = r.get("thinking_trace")
        if role == "assistant" and isinstance(thinking, str) and thinking.strip():
            out.append(Turn("Grok", "assistant", thinking, when, raw, model, "thinking",
                            pointer=f"{pointer}/thinking_trace", model_explicit=explicit))
        speaker = "Grok" if role == "assistant" else sender
        out.append(Turn(speaker, role, text, when, raw, model, "message", pointer=pointer, extra=extra,
                        model_explicit=explicit))
        return out


def _branch(conversation: dict[str, Any], responses: list[Any]) -> tuple[list[int], str | None]:
    """Indexes of the responses on the current branch, root first, and the assumption made."""
    index = {}
    parents: dict[str, str | None] = {}
    for i, entry in enumerate(responses):
        r = _response(entry)
        key = r.get("response_id") if r and isinstance(r.get("response_id"), str) else f"#{i}"
        index[key] = i
        parent = r.get("parent_response_id") if r else None
        parents[key] = parent if isinstance(parent, str) else None

    def time_of(key: str) -> float | None:
        when = grok_time((_response(responses[index[key]]) or {}).get("create_time"))[0]
        return when.timestamp() if when is not None else None

    leaf = conversation.get("leaf_response_id")
    path, note = current_path(parents, leaf if isinstance(leaf, str) else None, time_of)
    return [index[k] for k in path], note


@register
class Grok(Grammar):
    name = "grok"
    detect_needs = ('"responses"',)  # its key
    version = "1"
    structured = True
    conversations = ConversationList()
    description = "Grok (xAI) data export: conversations with their responses (the current branch)"
    example = ('{"conversations": [{"conversation": {"conversation_id": "…", "title": "…"}, "responses": '
               '[{"response": {"response_id": "…", "message": "hi", "sender": "human", "create_time": "…"}}]}]}')

    def detect(self, sample: str, name: str) -> float:
        if '"responses"' not in sample or ('"sender"' not in sample and '"conversation"' not in sample):
            return 0.0
        return explained_share(sample, _explains, _is_conversation)

    def parse_conversation(self, pointer: str, value: Any, source: SourceText, settings: Settings
                           ) -> Iterator[ParsedSession]:
        if not pointer:  # the whole input, neither a list nor a wrapper of one
            raise ParseError(Reason.PARSE_ERROR, "expected a conversations list", path=source.name, grammar=self.name)
        if _is_conversation(value):  # another entry is not a conversation: not read, as ever
            yield self._conversation(value, pointer)

    def _conversation(self, item: dict[str, Any], pointer: str) -> ParsedSession:
        conv = item["conversation"]
        responses = item["responses"] if isinstance(item["responses"], list) else []
        cid = conv.get("conversation_id") or conv.get("id")
        session = ParsedSession(str(cid) if cid else None, "source:conversation_id" if cid else "none", [],
                                raw=item, pointer=pointer)
        session.title = conv.get("title") if isinstance(conv.get("title"), str) and conv["title"] else None
        session.created, session.created_raw = grok_time(conv.get("create_time"))
        session.regions.append(Region(RegionKind.METADATA, "the conversation's own record (id, title, times)",
                                      pointer=f"{pointer}/conversation"))
        branch, note = _branch(conv, responses)
        if note:
            session.assumptions.append(note)
        reader = _Reader(responses, pointer)
        for i in branch:
            session.turns.extend(reader.turns(i))
        on_branch = set(branch)
        for i, entry in enumerate(responses):
            if i not in on_branch:
                r = _response(entry) or {}
                session.regions.append(Region(RegionKind.OFF_BRANCH, "not on the current branch (a regenerated "
                                              "answer or an edited message)", pointer=f"{pointer}/responses/{i}",
                                              content=r.get("message") if isinstance(r.get("message"), str) else None))
        reader.times.flush(session)
        if reader.drift:
            session.meta["formatDrift"] = reader.drift.as_meta()
        return session

    def count_turns(self, raw: Any) -> int:
        """The responses on the current branch, plus one per answer with a thinking trace."""
        responses = raw.get("responses") if isinstance(raw, dict) else None
        if not isinstance(responses, list):
            return 0
        branch, _ = _branch(raw.get("conversation") or {}, responses)
        thinking = sum(1 for i in branch if isinstance(t := (_response(responses[i]) or {}).get("thinking_trace"), str)
                       and t.strip() and ROLES.get(str((_response(responses[i]) or {}).get("sender")).lower())
                       == "assistant")
        return len(branch) + thinking
