"""ChatGPT message contents as readable text: one renderer per ``content_type``, as a table.

Every content type seen in exports since 2023 has an entry here with the turn kind it implies
(``None``: the role and the recipient decide). A type that is not in the table still gives its text
(``text``, ``parts``, ``result``... or, failing those, its fields as compact JSON) behind a
``[type]`` marker, and the grammar counts it as format drift. Parts of ``multimodal_text``
(images, audio, transcriptions, app context...) have their own table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parsers.grammars._aiexport import json_text


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _labelled(*pairs: tuple[str, Any]) -> str:
    return "\n".join(f"[{label}]\n{value}" for label, value in pairs if isinstance(value, str) and value.strip())


def _asset(label: str) -> Callable[[dict], str]:
    def render(part: dict) -> str:
        inner = part.get("audio_asset_pointer")
        pointer = _s(part.get("asset_pointer")) or (_s(inner.get("asset_pointer")) if isinstance(inner, dict) else "")
        return f"[{label}: {pointer}]" if pointer else f"[{label}]"
    return render


def _image(part: dict) -> str:
    meta = part.get("metadata") if isinstance(part.get("metadata"), dict) else {}
    dalle = meta.get("dalle") if isinstance(meta.get("dalle"), dict) else {}
    prompt = _s(dalle.get("prompt"))
    return f"[image: {_s(part.get('asset_pointer'))}]" + (f"\n{prompt}" if prompt else "")


def _app_pairing(content: dict) -> str:
    apps = [w for w in content.get("workspaces") or [] if isinstance(w, dict)]
    lines = [f"[app: {_s(w.get('app_name'))} {_s(w.get('title'))}]".replace(" ]", "]") for w in apps]
    lines += [_s(p.get("text")) for p in content.get("context_parts") or [] if isinstance(p, dict) and p.get("text")]
    return "\n".join(lines) or "[app pairing]"


def _search_group(part: dict) -> str:
    entries = [e for e in part.get("entries") or [] if isinstance(e, dict)]
    head = f"[search results: {_s(part.get('domain'))}]"
    return "\n".join([head] + [" ".join(x for x in (_s(e.get("title")), _s(e.get("url"))) if x) for e in entries])


PARTS: dict[str, Callable[[dict], str]] = {
    "image_asset_pointer": _image,
    "audio_transcription": lambda p: _s(p.get("text")),
    "audio_asset_pointer": _asset("audio"),
    "real_time_user_audio_video_asset_pointer": _asset("audio/video"),
    "video_container_asset_pointer": _asset("video"),
    "app_pairing_content": _app_pairing,
    "search_result_group": _search_group,
}
"""``multimodal_text`` parts by their ``content_type`` (a plain string part is text)."""


def _thoughts(content: dict) -> str:
    steps = [t for t in content.get("thoughts") or [] if isinstance(t, dict)]
    body = ["\n".join(x for x in (_s(t.get("summary")), _s(t.get("content"))) if x) for t in steps]
    return "\n".join(["[thoughts]", *body])


def _computer(content: dict) -> str:
    state = content.get("state") if isinstance(content.get("state"), dict) else {}
    shot = content.get("screenshot") if isinstance(content.get("screenshot"), dict) else {}
    where = " ".join(x for x in (_s(state.get("title")), _s(state.get("url"))) if x) or _s(state.get("type"))
    lines = [f"[computer output: {where}]" if where else "[computer output]"]
    if shot.get("asset_pointer"):
        lines.append(f"[screenshot: {_s(shot.get('asset_pointer'))}]")
    return "\n".join(lines)


def _webpage(content: dict) -> str:
    head = " ".join(x for x in (_s(content.get("title")), _s(content.get("url"))) if x)
    return f"[webpage: {head}]\n{_s(content.get('text')) or _s(content.get('snippet'))}".rstrip()


CONTENT: dict[str, tuple[Callable[[dict], str], str | None]] = {
    "text": (lambda c: render_parts(c.get("parts"))[0], None),
    "multimodal_text": (lambda c: render_parts(c.get("parts"))[0], None),
    "code": (lambda c: f"[code: {_s(c.get('language')) or 'unknown'}]\n{_s(c.get('text'))}", None),
    "execution_output": (lambda c: f"[execution output]\n{_s(c.get('text'))}", "tool_result"),
    "tether_quote": (lambda c: f"[quote: {_s(c.get('title'))} {_s(c.get('url'))}]\n{_s(c.get('text'))}", None),
    "tether_browsing_display": (
        lambda c: f"[browsing]\n{_s(c.get('result')) or _s(c.get('summary'))}".rstrip(), "tool_result"),
    "tether_browsing_code": (lambda c: "[browsing code]", "tool_result"),
    "sonic_webpage": (_webpage, "tool_result"),
    "system_error": (lambda c: f"[error: {_s(c.get('name'))}]\n{_s(c.get('text'))}", "error"),
    "thoughts": (_thoughts, "thinking"),
    "reasoning_recap": (lambda c: f"[reasoning recap] {_s(c.get('content'))}".rstrip(), "thinking"),
    "user_editable_context": (lambda c: _labelled(("user profile", c.get("user_profile")),
                                                   ("user instructions", c.get("user_instructions"))), "context"),
    "model_editable_context": (lambda c: _labelled(("model memory", c.get("model_set_context")),
                                                    ("repository", c.get("repo_summary"))), "context"),
    "computer_output": (_computer, "tool_result"),
    "citable_code_output": (lambda c: f"[code output]\n{_s(c.get('output_str'))}", "tool_result"),
    "app_pairing_content": (_app_pairing, "context"),
}
"""``content_type`` -> (renderer, turn kind it implies or None)."""

TEXT_FIELDS = ("text", "parts", "result", "content", "summary", "output_str")


def render_parts(parts: Any) -> tuple[str, list[str]]:
    """The text of a ``parts`` list and the part types it did not know."""
    out, unknown = [], []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict):
            kind = part.get("content_type") or part.get("type") or "part"
            render = PARTS.get(kind) or (CONTENT[kind][0] if kind in CONTENT else None)
            if render is None:
                unknown.append(str(kind))
                out.append(_unknown(str(kind), part))
            else:
                out.append(render(part))
        elif part is not None:
            out.append(json_text(part))
    return "\n".join(out), unknown


def _unknown(kind: str, content: dict) -> str:
    """An unknown content or part type: its text where a usual field holds it, else its fields as JSON."""
    for key in TEXT_FIELDS:
        value = content.get(key)
        if isinstance(value, str) and value.strip():
            return f"[{kind}]\n{value}"
        if key == "parts" and isinstance(value, list):
            return f"[{kind}]\n{render_parts(value)[0]}"
    rest = {k: v for k, v in content.items() if k not in ("content_type", "type")}
    return f"[{kind}]\n{json_text(rest)}" if rest else f"[{kind}]"


def render_content(content: Any) -> str:
    """Readable text of any message content, with a marker for non-text kinds."""
    return render(content)[0]


def render(content: Any) -> tuple[str, str | None, list[str]]:
    """(text, kind implied by the content type or None, unknown types met: the content's or its parts')."""
    if not isinstance(content, dict):
        return ("" if content is None else str(content)), None, []
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        text, unknown = render_parts(content.get("parts"))
        return text, None, [f"part:{u}" for u in unknown]
    entry = CONTENT.get(kind)
    if entry is None:
        return _unknown(str(kind), content), None, [f"content:{kind}"]
    return entry[0](content), entry[1], []
