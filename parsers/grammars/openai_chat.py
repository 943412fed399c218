"""OpenAI chat messages as one JSON document: the shape of the OpenAI API, fine-tuning sets, LiteLLM and
LangChain dumps and several agent frameworks' trajectories.

Two forms, each one session:

- a bare list of messages, ``[{"role": "system"|"user"|"assistant"|"tool", "content": ...}, ...]``;
- the same list under ``messages`` in an object with metadata beside it (``{"model": ..., "id": ...,
  "messages": [...]}``; keys the reader does not know are format drift, a ``conversation_id`` or kin
  names the session).

A message is read as the JSON Lines grammar reads an API-style record (``jsonl.message_turn``, one
reader for the shape wherever it comes from): ``content`` as a string or a list of parts (text parts
joined, images as markers), ``name`` as the speaker when given, else the role; an assistant message
with ``tool_calls`` (or the older ``function_call``) is a ``tool_call`` turn listing the calls (kept in
``extra.toolCalls``); a ``tool`` (or ``function``) message is a turn of its own, a ``tool_result`` with
its ``tool_call_id``; a ``model`` on a message is explicit. The same shape one conversation per line
is JSON Lines (``jsonl.py``). An entry that is not an object is kept verbatim as a notice.

Detection: the share of the sample's message records that are ``role`` records at the top level of
the document or in a ``messages`` list; a generic convention (specificity 1), so a platform's own
export holding such records wins a close call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from models.errors import ParseError, Reason
from models.records import ParsedSession, SourceText
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._chatjson import TOP, Record, explained_share
from parsers.grammars.jsonl import api_list, conversation, conversation_key
from parsers.jsonload import load_json
from parsers.registry import register


def _api_record(record: Record) -> bool:
    return "role" in record.keys and record.container in (TOP, "messages")


@register
class OpenAiChat(Grammar):
    name = "openai-chat"
    version = "1"
    structured = True
    specificity = 1
    detect_needs = ('"role"',)
    description = ("OpenAI chat messages as one JSON document: a bare list of {role, content} messages, or "
                   "{\"messages\": [...]} with metadata beside it (tool calls and tool messages as turns)")
    example = '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}]'

    def detect(self, sample: str, name: str) -> float:
        start = sample.lstrip()[:1]
        if start not in ("[", "{") or (start == "{" and '"messages"' not in sample):
            return 0.0
        return explained_share(sample, _api_record) or 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        if api_list(data):
            yield conversation(data, data, "", "")
            return
        if conversation_key(data) == "messages":
            yield conversation(data, data["messages"], "", "/messages")
            return
        raise ParseError(Reason.PARSE_ERROR, "neither a list of role messages nor an object with a messages list "
                         "of them", path=source.name, grammar=self.name)

    def count_turns(self, raw: Any) -> int:
        """Every entry of the message list, whatever it holds."""
        entries = raw if isinstance(raw, list) else raw.get("messages") if isinstance(raw, dict) else None
        return len(entries) if isinstance(entries, list) else 0
