"""Google AI Studio prompts as saved to Google Drive: ``{"runSettings", "systemInstruction", "chunkedPrompt"}``.

One file is one session (AI Studio saves each chat as one Drive file, usually without an extension,
named by its title); it has no id (``999``) and no times (the document has no dates: nothing is
invented).

Decisions:
- Each chunk of ``chunkedPrompt.chunks`` is one turn: ``user`` or ``model`` (the assistant); a
  chunk with ``isThought`` is the model's ``thinking`` turn. Images, documents, videos and files a
  chunk carries (``driveImage``, ``inlineImage``, ``driveDocument``, ``youtubeVideo``...) add
  ``[image: id]``-style marker lines; inline data is never copied.
- ``systemInstruction`` is a setting of the prompt shown beside the chat, not a message in it: a
  declared ``metadata`` region that keeps its text.
- The model is ``runSettings.model`` (``models/gemini-2.5-pro``): stated for the whole prompt, not
  per turn, so rule A2 applies to it; provider ``google``. Token counts and finish reasons go to
  ``extra``.
- ``pendingInputs`` (what was left typed but unsent in the input box) are declared ``metadata``
  regions: never sent, so not turns.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from models.errors import ParseError, Reason
from models.records import ModelRef, ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.drift import Drift
from parsers.grammars._aiexport import compact, explained_share, malformed_turn, record_role
from parsers.jsonload import load_json
from parsers.registry import register

PROVIDER = "google"
ROLES = {"user": "user", "model": "assistant"}
MEDIA = (("driveImage", "image"), ("inlineImage", "image"), ("driveDocument", "document"),
         ("driveVideo", "video"), ("youtubeVideo", "video"), ("inlineFile", "file"), ("driveAudio", "audio"))
CHUNK_KEYS = frozenset({"text", "role", "tokenCount", "isThought", "parts", "finishReason", "thoughtSignatures",
                        "errorMessage", "executableCode", "codeExecutionResult", "functionCall", "functionResponse",
                        "grounding", "branchParent", "branchChildren", "isEdited", *(k for k, _ in MEDIA)})


def _explains(path: tuple, record: dict) -> bool:
    return "role" in record and ("chunks" in path or "pendingInputs" in path)


def _is_prompt(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("chunkedPrompt"), dict)


def _marks(chunk: dict[str, Any]) -> list[str]:
    out = []
    for key, label in MEDIA:
        item = chunk.get(key)
        if isinstance(item, dict):
            ref = item.get("id") or item.get("videoId") or item.get("mimeType") or item.get("name")
            out.append(f"[{label}: {ref}]" if isinstance(ref, str) and ref else f"[{label}]")
    return out


def _model(settings: Any) -> ModelRef | None:
    name = settings.get("model") if isinstance(settings, dict) else None
    if not isinstance(name, str) or not name:
        return ModelRef(PROVIDER, None, None)
    return ModelRef(PROVIDER, name.removeprefix("models/"), None)


def _system(instruction: Any) -> str:
    if not isinstance(instruction, dict):
        return ""
    if isinstance(instruction.get("text"), str):
        return instruction["text"]
    parts = instruction.get("parts") if isinstance(instruction.get("parts"), list) else []
    return "\n".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


def _turn(chunk: Any, pointer: str, model: ModelRef | None, drift: Drift) -> Turn:
    if not isinstance(chunk, dict):
        return malformed_turn(chunk, pointer)
    drift.unknown_keys(chunk, CHUNK_KEYS, pointer)
    raw_role, role = record_role(chunk, ROLES, drift, pointer)
    text = chunk.get("text") if isinstance(chunk.get("text"), str) else ""
    content = "\n".join(x for x in (text, *_marks(chunk)) if x)
    kind = "thinking" if chunk.get("isThought") else "message"
    extra = compact({"tokenCount": chunk.get("tokenCount"), "finishReason": chunk.get("finishReason")})
    return Turn(raw_role, role, content, None, None, model if role == "assistant" else None, kind, pointer=pointer,
                extra=extra, model_explicit=False)


@register
class AIStudio(Grammar):
    name = "ai-studio"
    detect_needs = ('"chunkedPrompt"',)  # its key
    version = "1"
    structured = True
    description = "Google AI Studio prompt saved to Drive (runSettings, systemInstruction, chunkedPrompt chunks)"
    example = ('{"runSettings": {"model": "models/gemini-2.5-pro"}, "systemInstruction": {}, "chunkedPrompt": '
               '{"chunks": [{"text": "hi", "role": "user", "tokenCount": 1}]}}')

    def detect(self, sample: str, name: str) -> float:
        if '"chunkedPrompt"' not in sample:
            return 0.0
        return explained_share(sample, _explains, _is_prompt)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        if not _is_prompt(data):
            raise ParseError(Reason.PARSE_ERROR, "expected an object with a chunkedPrompt", path=source.name,
                             grammar=self.name)
        session = ParsedSession(None, "none", [], raw=data, pointer="")
        model, drift = _model(data.get("runSettings")), Drift()
        system = _system(data.get("systemInstruction"))
        if system.strip():
            session.regions.append(Region(RegionKind.METADATA, "the prompt's system instructions: a setting "
                                          "shown beside the chat, not a message in it", pointer="/systemInstruction",
                                          content=system))
        chunks = data["chunkedPrompt"].get("chunks")
        for i, chunk in enumerate(chunks if isinstance(chunks, list) else []):
            session.turns.append(_turn(chunk, f"/chunkedPrompt/chunks/{i}", model, drift))
        self._pending(session, data)
        if model is not None and model.name:
            session.meta["runModel"] = model.name
        if drift:
            session.meta["formatDrift"] = drift.as_meta()
        yield session

    @staticmethod
    def _pending(session: ParsedSession, data: dict[str, Any]) -> None:
        for base in ("", "/chunkedPrompt"):
            holder = data if not base else data["chunkedPrompt"]
            pending = holder.get("pendingInputs")
            for i, _ in enumerate(pending if isinstance(pending, list) else []):
                session.regions.append(Region(RegionKind.METADATA, "left typed in the input box and never sent "
                                              "(pendingInputs)", pointer=f"{base}/pendingInputs/{i}"))

    def count_turns(self, raw: Any) -> int:
        chunks = raw.get("chunkedPrompt", {}).get("chunks") if isinstance(raw, dict) else None
        return len(chunks) if isinstance(chunks, list) else 0
