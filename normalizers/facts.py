"""What the source itself says about builds and protocols, each fact pointing at its turn.

Kept apart from how the reconstruction was made: tool calls, shell commands, file changes,
``diff_json_v1`` patches (and whether the reply holding one obeyed seed 004's clean-JSON rule)
and heuristics ``H-...`` named in the chat. Cheap substring tests guard every regex, so turns
that mention none of these cost next to nothing.
"""

from __future__ import annotations

import orjson
import regex

_FENCE_CMD = regex.compile(r"^```(?:bash|sh|shell|console|zsh|powershell|ps1|cmd)[ \t]*\n(?P<body>.*?)^```",
                           regex.MULTILINE | regex.DOTALL)
_DIFF_GIT = regex.compile(r"^diff --git a/(?P<a>\S+) b/(?P<b>\S+)", regex.MULTILINE)
_HEURISTIC = regex.compile(r"(?<![\w-])H-[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]")
_TARGET_PATH = regex.compile(r'"path"\s*:\s*"(?P<p>[^"\n]{1,300})"')


class Facts:
    """Collects the session record while interactions are assembled."""

    def __init__(self) -> None:
        self.record: dict[str, list[dict]] = {
            "toolCalls": [], "commands": [], "fileChanges": [], "patches": [], "heuristicsNamed": []
        }
        self.clean_checked = 0
        self.clean_ok = 0

    def observe(self, ordinal: int, role: str, kind: str, speaker: str, content: str) -> None:
        if kind in ("tool_call", "tool_result") or role == "tool":
            self.record["toolCalls"].append({"turn": ordinal, "kind": kind, "name": speaker})
        if "```" in content:
            for m in _FENCE_CMD.finditer(content):
                first = m["body"].strip().split("\n", 1)[0][:200]
                if first:
                    self.record["commands"].append({"turn": ordinal, "command": first})
        if "diff --git" in content:
            for m in _DIFF_GIT.finditer(content):
                self.record["fileChanges"].append({"turn": ordinal, "path": m["b"], "via": "git-diff"})
        if "diff_json_v1" in content:
            self._patch(ordinal, role, content)
        if "H-" in content:
            seen = set()
            for m in _HEURISTIC.finditer(content):
                if m.group(0) not in seen:
                    seen.add(m.group(0))
                    self.record["heuristicsNamed"].append({"turn": ordinal, "id": m.group(0)})

    def _patch(self, ordinal: int, role: str, content: str) -> None:
        stripped = content.strip()
        clean = stripped.startswith("{") and stripped.endswith("}")
        if clean:
            try:
                obj = orjson.loads(stripped)
                clean = isinstance(obj, dict) and obj.get("protocol_id") == "diff_json_v1"
            except orjson.JSONDecodeError:
                clean = False
        path = _TARGET_PATH.search(content)
        self.record["patches"].append(
            {"turn": ordinal, "protocolId": "diff_json_v1", "cleanJson": clean,
             "targetPath": path["p"] if path else None}
        )
        if path:
            self.record["fileChanges"].append({"turn": ordinal, "path": path["p"], "via": "diff_json_v1"})
        if role == "assistant":
            self.clean_checked += 1
            self.clean_ok += clean
