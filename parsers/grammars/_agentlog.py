"""Helpers shared by the coding-agent log grammars (Claude Code, Codex CLI, Aider).

**JSON Lines as one JSON document.** A JSON Lines log is read as the list of its lines, each parsed
(a blank line is ``null``, a line that is not JSON stays a string): line ``n`` of the file is
``/<n-1>`` in that document, and every turn and region pointer is absolute in it. A file may hold
several sessions; each session's ``raw`` is that list with the other sessions' lines masked to
``null`` (same indices, so pointers stay absolute), and its ``pointer`` is ``""``.

**Model strings** split into name and version in one place (``split_model``): a version after
``@`` (``claude-3-5-sonnet@20240620``), else a trailing date stamp ``YYYYMMDD`` or ``YYYY-MM-DD``
(``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5`` / ``20250929``; ``gpt-4o-2024-08-06`` ->
``gpt-4o`` / ``2024-08-06``); anything else keeps the whole string as the name and no version
("unknown" in the document). A ``provider/`` prefix (``gemini/gemini-2.5-pro``, LiteLLM style)
names the provider when the caller does not know it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson
import regex

from models.records import ModelRef, Turn
from parsers.sample import json_line, whole_nonblank

_DATE_TAIL = regex.compile(r"^(?P<name>.+?)-(?P<version>(?:19|20)\d{2}(?:\d{4}|-\d{2}-\d{2}))$")
_MODELS: dict[tuple[str | None, str], ModelRef] = {}
FAMILIES = (("claude", "anthropic"), ("gpt-", "openai"), ("o1", "openai"), ("o3", "openai"), ("o4", "openai"),
            ("chatgpt", "openai"), ("codex", "openai"), ("gemini", "google"), ("deepseek", "deepseek"),
            ("grok", "xai"), ("mistral", "mistral"), ("codestral", "mistral"))
"""Model families whose maker is unambiguous, for tools that name a model without its provider."""
SAMPLE_LINES = 200


def split_model(provider: str | None, model: Any) -> ModelRef | None:
    """A model string as the log wrote it, split into name and version (module docstring)."""
    if not isinstance(model, str) or not model.strip():
        return None
    key = (provider, model)
    ref = _MODELS.get(key)
    if ref is None:
        name, version = model.strip(), None
        if provider is None and "/" in name.strip("/"):
            provider, name = name.split("/", 1)
        if "@" in name:
            name, _, version = name.partition("@")
        else:
            m = _DATE_TAIL.match(name)
            if m:
                name, version = m["name"], m["version"]
        ref = _MODELS[key] = ModelRef(provider, name or model, version or None)
    return ref


def family_model(model: Any) -> ModelRef | None:
    """``split_model`` for a model string from a multi-provider tool: the ``provider/`` prefix when
    there is one, else the provider of the model's family (``FAMILIES``), else none."""
    if not isinstance(model, str) or "/" in model.strip("/"):
        return split_model(None, model)
    low = model.strip().lower()
    return split_model(next((p for prefix, p in FAMILIES if low.startswith(prefix)), None), model)


def read_lines(text: str) -> list[Any]:
    """The JSON Lines document: one parsed value per line of the file (``null`` for a blank line,
    the line itself as a string when it is not JSON)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    loads, error = orjson.loads, orjson.JSONDecodeError
    doc: list[Any] = []
    for line in lines:
        if not line.strip():
            doc.append(None)
            continue
        try:
            doc.append(loads(line))
        except error:
            doc.append(line)
    return doc


def masked(doc: list[Any], own: Iterable[int]) -> dict[str, Any]:
    """A session's raw: its own lines of ``doc`` under their indexes (``{"3": record}``), so the
    pointer ``/3`` means the same in the session's view as in the whole file."""
    return {str(i): doc[i] for i in sorted(set(own))}


def sample_share(sample: str, explains: Callable[[dict[str, Any]], bool]) -> tuple[int, int]:
    """(explained, total) over the JSON Lines records of a possibly truncated sample."""
    lines = whole_nonblank(sample, SAMPLE_LINES)  # the sample may end inside its last line
    good = 0
    for ln in lines:
        if not ln.lstrip().startswith("{"):
            continue
        obj = json_line(sample, ln)
        if isinstance(obj, dict) and explains(obj):
            good += 1
    return good, len(lines)


def record_share(sample: str, explains: Callable[[dict[str, Any]], bool],
                 signature: Callable[[dict[str, Any]], bool], long_first: regex.Pattern) -> float:
    """A JSON Lines agent log's detection share: the records it explains, when at least one carries
    the format's signature; 0.9 for a single record longer than the sample that opens the way the
    format writes records (``long_first``)."""
    if long_first.match(sample) and sample.count("\n") == 0:
        return 0.9
    good, total = sample_share(sample, explains)
    if not total or not good:
        return 0.0
    strong, _ = sample_share(sample, signature)
    return good / total if strong else 0.0


def text_of(value: Any) -> str:
    """The text of a content value: a string, or the text parts of a list of blocks."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type") in ("image", "input_image"):
                    parts.append("[image]")
        return "\n".join(parts)
    return "" if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def bad_line_turn(line: str, index: int) -> Turn:
    """A line that is not JSON: still one turn (B1), kept verbatim as a System notice."""
    return Turn("System", "system", line, kind="notice", pointer=f"/{index}", extra={"malformedLine": index + 1})
