"""Speaker headers shared by the transcript grammars: roles from names, models from parentheses."""

from __future__ import annotations

import regex

from models.records import ModelRef

ROLE_WORDS: dict[str, str] = {
    "user": "user", "human": "user", "you": "user", "me": "user", "customer": "user",
    "assistant": "assistant", "ai": "assistant", "bot": "assistant", "chatgpt": "assistant",
    "gpt": "assistant", "claude": "assistant", "model": "assistant", "gemini": "assistant",
    "copilot": "assistant", "llama": "assistant", "mistral": "assistant",
    "system": "system", "developer": "system",
    "tool": "tool", "function": "tool", "tool result": "tool", "tool call": "tool",
    "observation": "tool",
}

# "(openai:gpt-4o@2024-08-06)", "(ollama:llama3:8b)", "(anthropic:claude-3-opus)"
_MODEL_SPEC = regex.compile(
    r"(?P<provider>[^\s:()@]+):(?P<name>[^\s()@]+?)(?:@(?P<version>[^\s()]+))?"
)
_PARENS = regex.compile(r"^(?P<base>.*?)\s*\((?P<inner>[^()]*)\)$")
_BARE_MODEL = regex.compile(r"[A-Za-z][\w.:-]*\d[\w.:-]*|[A-Za-z][\w.-]*-[\w.-]+")


def role_of(name: str) -> str:
    """The role a speaker name implies: known role words, else a person ("user")."""
    return ROLE_WORDS.get(name.strip().lower(), "user")


def split_speaker(label: str) -> tuple[str, ModelRef | None]:
    """``Assistant (openai:gpt-4o@2024-08-06)`` -> ("Assistant", the model it names explicitly).

    Parentheses name a model only when they hold ``provider:name[@version]``, or a bare model id
    after an assistant role word (``Assistant (gpt-4o)``); otherwise they are part of the name
    (``Bob (work)``) and the normaliser keeps them losslessly.
    """
    label = label.strip()
    m = _PARENS.match(label)
    if not m or not m["base"]:
        return label, None
    base, inner = m["base"].strip(), m["inner"].strip()
    spec = _MODEL_SPEC.fullmatch(inner)
    if spec:
        return base, ModelRef(spec["provider"], spec["name"], spec["version"])
    if ROLE_WORDS.get(base.lower()) == "assistant" and _BARE_MODEL.fullmatch(inner):
        name, _, version = inner.partition("@")
        return base, ModelRef(None, name, version or None)
    return label, None


def parse_model_spec(value: str) -> ModelRef | None:
    """``provider:name@version`` (or ``provider:name``, or a bare name) from front matter."""
    value = value.strip().strip("\"'")
    if not value:
        return None
    spec = _MODEL_SPEC.fullmatch(value)
    if spec:
        return ModelRef(spec["provider"], spec["name"], spec["version"])
    name, _, version = value.partition("@")
    return ModelRef(None, name or None, version or None)
