"""What the source itself says about builds and protocols, each fact pointing at its turn.

Kept apart from how the reconstruction was made: tool calls, shell commands, file changes,
``diff_json_v1`` patches (and whether the reply holding one obeyed seed 004's clean-JSON rule)
and heuristics ``H-...`` named in the chat. Cheap substring tests guard every regex, so turns
that mention none of these cost next to nothing.

Coding-agent logs (Claude Code, Codex CLI, Aider) say more, and their grammars hand it on in
``Turn.extra``: ``tool`` and ``callId`` on a tool call, ``callId``, ``isError``, ``exitCode``,
``durationSeconds``/``durationMs`` on its result, ``fileOperation`` (create/update) where the log
says it, ``userCommand`` on a typed ``/run``-style command. The input itself is read from the
turn's content, which is already redacted (extra never holds tool input or output, because it is
copied to the document as it is). From these:

- ``toolCalls``: one entry per call (name, callId, input summary), completed by its result
  (``resultTurn``, ``outcome`` ok/error);
- ``commands``: shell commands (Bash, shell, local_shell, exec_command..., a ``/run`` line) with
  exit code and duration where logged;
- ``fileChanges``: Write/Edit/MultiEdit inputs (and their kin in other agents), ``apply_patch``
  envelopes, SEARCH/REPLACE blocks, Aider's whole-file and udiff replies, and SWE-agent's edit
  commands (``str_replace_editor create|str_replace|insert <path>``, ``edit N:M`` on the open file). The build log
  follows each file's text through the session (a file created, written whole or read whole, then
  edited); an edit whose base text is known gets a ``diff_json_v1`` patch (seed 004: checksums
  over the LF text, one op against the original base, ``result_sha256``) that applies to that
  reconstructed base, and ``baseTurn`` names the turn the base came from (a read's result, a
  write, an earlier edit); an edit of a file whose text the log never shows gets a unified-diff
  ``summary`` instead. Every change whose result is known carries ``resultSha256``. Texts are the
  redacted ones the document holds; a ``cat -n`` listing cannot show a missing final newline, so
  one is assumed.
- when the log keeps the edited file's text as the tool found it (Claude Code's
  ``toolUseResult.originalFile``, handed on as ``Turn.base_text``, redacted like the content),
  that text, canonical as seed 004 wants (BOM stripped, line ends LF), is the base of the edit's
  patch whatever the session showed of the file before (``baseFrom: "originalFile"``);
- an editor's edits (a ``file_edit`` interaction: line/column ranges and their new text, as VS
  Code's Copilot Chat records them) apply to the file's known text; an edit group that a tool
  call of the same request already made (``extra.byTool``) is not counted twice.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import regex

from parsers.text import canonicalize

_FENCE_CMD = regex.compile(r"^```(?:bash|sh|shell|console|zsh|powershell|ps1|cmd)[ \t]*\n(?P<body>.*?)^```",
                           regex.MULTILINE | regex.DOTALL)
_DIFF_GIT = regex.compile(r"^diff --git a/(?P<a>\S+) b/(?P<b>\S+)", regex.MULTILINE)
_HEURISTIC = regex.compile(r"(?<![\w-])H-[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]")
_TARGET_PATH = regex.compile(r'"path"\s*:\s*"(?P<p>[^"\n]{1,300})"')
_SEARCH_REPLACE = regex.compile(
    r"^(?:<<<<<<<|-------) SEARCH[ \t]*\n(?P<old>(?:.*\n)*?)^=======[ \t]*\n(?P<new>(?:.*\n)*?)"
    r"^(?:>>>>>>>|\+\+\+\+\+\+\+) REPLACE[ \t]*$", regex.MULTILINE)
_PATCH_FILE = regex.compile(r"^\*\*\* (?P<op>Add|Update|Delete) File: (?P<path>.+?)[ \t]*$", regex.MULTILINE)
_WHOLE_FILE = regex.compile(r"^(?P<path>[\w./-]+\.[\w]+)[ \t]*\n```[\w+-]*[ \t]*\n(?P<body>(?:.*\n)*?)```[ \t]*$",
                             regex.MULTILINE)
_UDIFF = regex.compile(r"^```diff[ \t]*\n(?P<body>(?:.*\n)*?)```[ \t]*$", regex.MULTILINE)
_ANY_FENCE = regex.compile(r"^```[\w-]*[ \t]*\n(.*?)^```", regex.MULTILINE | regex.DOTALL)
SHELL_TOOLS = {"Bash": "command", "bash": "command", "execute_bash": "command", "run": "command",
               "shell": "command", "local_shell": "command", "exec_command": "cmd", "shell_command": "command",
               "run_shell_command": "command", "container.exec": "cmd", "execute_command": "command",
               "run_in_terminal": "command"}
SHELL_COMMANDS = frozenset({"run", "test", "!"})
WRITE_TOOLS = frozenset({"Write", "write_file", "write_to_file", "create_file"})
PATH_KEYS = ("file_path", "path", "absolute_path", "filePath")
READ_TOOLS = {"Read": "numbered", "read_file": "raw"}
"""Whole-file reads whose result is the file's text: Claude Code's ``cat -n`` style, or as it is."""
PARTIAL_READ_KEYS = ("offset", "limit", "start_line", "end_line", "line_range", "startLine", "endLine")
_NUMBERED = regex.compile(r"^ *(?P<n>\d+)(?:\t|\u2192)(?P<line>.*)$")
_BASH_INPUT = regex.compile(r"<bash-input>(?P<cmd>.*?)</bash-input>", regex.DOTALL)
_RESULT_HEADER = regex.compile(r"^\[[\w-]+ for '[^\n]*'\] Result:\n")
SUMMARY_CHARS = 4000
INPUT_CHARS = 200


class Facts:
    """Collects the session record while interactions are assembled."""

    def __init__(self) -> None:
        self.record: dict[str, list[dict]] = {
            "toolCalls": [], "commands": [], "fileChanges": [], "patches": [], "heuristicsNamed": []
        }
        self.clean_checked = 0
        self.clean_ok = 0
        self._calls: dict[str, dict] = {}
        self._commands: dict[str, dict] = {}
        self._files: dict[str, str] = {}
        self._reads: dict[str, tuple[str, str]] = {}
        self._origin: dict[str, int] = {}
        self._original_base: set[str] = set()
        self._open: str | None = None  # the file a SWE-agent ``open``/``create`` command made current

    def observe(self, ordinal: int, role: str, kind: str, speaker: str, content: str,
                extra: dict[str, Any] | None = None, base: str | None = None) -> None:
        """One interaction; ``base`` is the text of the file a tool call edits, before the edit, when
        the log keeps it (``Turn.base_text``, already redacted)."""
        agent = bool(extra) and ("tool" in extra or "callId" in extra) and kind in ("tool_call", "tool_result")
        if agent:
            self._agent_tool(ordinal, kind, speaker, content, extra, base)
        elif kind in ("tool_call", "tool_result") or role == "tool":
            self.record["toolCalls"].append({"turn": ordinal, "kind": kind, "name": speaker})
        if kind == "file_edit" and extra:
            self._range_edits(ordinal, content, extra)
        if extra and extra.get("userCommand") in SHELL_COMMANDS:
            self.record["commands"].append({"turn": ordinal, "command": _typed_command(content)[:INPUT_CHARS]})
        if role == "assistant" and "<<<<<<< SEARCH" in content and not (extra and "tool" in extra):
            self._search_replace(ordinal, content)
        edit_format = extra.get("editFormat") if extra and role == "assistant" else None
        if edit_format == "whole" and "```" in content:
            self._whole_files(ordinal, content)
        elif edit_format in ("udiff", "udiff-simple") and "```diff" in content:
            self._udiffs(ordinal, content)
        if "```" in content and not agent:
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

    # -- coding-agent tool calls ---------------------------------------------------------------

    def _tool_result(self, ordinal: int, speaker: str, content: str, extra: dict[str, Any]) -> None:
        """A result completes its call: outcome, the command's exit code and duration, a read's text."""
        call = extra.get("callId")
        entry = self._calls.get(call) if isinstance(call, str) else None
        if entry is None:
            self.record["toolCalls"].append({"turn": ordinal, "kind": "tool_result", "name": speaker, "callId": call})
            return
        failed = bool(extra.get("isError")) or extra.get("exitCode") not in (None, 0)
        entry.update(resultTurn=ordinal, outcome="error" if failed else "ok")
        read = self._reads.pop(call, None)
        if read is not None and not failed:
            self._read_result(ordinal, read, content)
        command = self._commands.get(call)
        if command is not None:
            for key in ("exitCode", "durationSeconds", "durationMs"):
                if extra.get(key) is not None:
                    command[key] = extra[key]

    def _agent_tool(self, ordinal: int, kind: str, speaker: str, content: str, extra: dict[str, Any],
                    base: str | None = None) -> None:
        if kind == "tool_result":
            self._tool_result(ordinal, speaker, content, extra)
            return
        call = extra.get("callId")
        name = str(extra.get("tool") or speaker)
        entry = {"turn": ordinal, "kind": kind, "name": name, "callId": call,
                 "input": " ".join(content.split())[:INPUT_CHARS]}
        self.record["toolCalls"].append(entry)
        if isinstance(call, str):
            self._calls[call] = entry
        args = _json(content)
        command = _shell_command(name, args) if args is not None else _fenced_command(name, content)
        if command and not command.startswith("apply_patch"):
            self.record["commands"].append({"turn": ordinal, "command": command[:INPUT_CHARS], "callId": call})
            if isinstance(call, str):
                self._commands[call] = self.record["commands"][-1]
            self._editor_command(ordinal, command)
        if base is not None and isinstance(args, dict):
            self._original(args, base)
        self._tool_edits(ordinal, name, args, content, extra)
        if name in READ_TOOLS and isinstance(args, dict) and isinstance(call, str):
            path = next((args[k] for k in PATH_KEYS if isinstance(args.get(k), str)), None)
            if path and not any(args.get(k) not in (None, "", 0) for k in PARTIAL_READ_KEYS):
                self._reads[call] = (path, READ_TOOLS[name])

    def _editor_command(self, ordinal: int, command: str) -> None:
        """SWE-agent's file edits written as commands: ``str_replace_editor create|str_replace|insert
        <path> ...``, and ``edit N:M`` on the file the last ``open``/``create <path>`` made current. Listed
        without a patch (the command holds the edit, not the file's text), the file's text then unknown."""
        first = command.lstrip().split("\n", 1)[0]
        if m := _EDITOR_COMMAND.match(first):
            path, operation = m["path"], {"str_replace": "edit"}.get(m["op"], m["op"])
        elif m := _OPEN_COMMAND.match(first):
            self._open = m["path"]
            if m["verb"] != "create":
                return
            path, operation = m["path"], "create"
        elif _EDIT_COMMAND.match(first) and self._open is not None:
            path, operation = self._open, "edit"
        else:
            return
        self._change(ordinal, "command:" + first.split(None, 1)[0], path, operation, None, None,
                     command[:SUMMARY_CHARS])
        self._known(path, None, ordinal)

    def _read_result(self, ordinal: int, read: tuple[str, str], content: str) -> None:
        """A whole-file read gives the file's text: the base of the edits after it."""
        path, style = read
        text = _numbered_text(content) if style == "numbered" else _raw_text(content)
        if text is not None:
            self._known(path, text, ordinal)

    def _original(self, args: dict[str, Any], base: str) -> None:
        """The edited file's text as the tool found it: the base of this edit's patch (seed 004: the
        canonical text, BOM stripped and line ends LF), whatever the session showed of it before."""
        path = next((args[k] for k in PATH_KEYS if isinstance(args.get(k), str)), None)
        if path is not None:
            self._files[path] = canonicalize(base.removeprefix("\ufeff"))
            self._origin.pop(path, None)
            self._original_base.add(path)

    def _known(self, path: str, text: str | None, ordinal: int) -> None:
        """The file's text after turn ``ordinal`` (None: no longer known)."""
        if text is None:
            self._files.pop(path, None)
            self._origin.pop(path, None)
        else:
            self._files[path] = text
            self._origin[path] = ordinal

    def _tool_edits(self, ordinal: int, name: str, args: Any, content: str, extra: dict[str, Any]) -> None:
        via = f"tool:{name}"
        if "*** Begin Patch" in content:
            text = args.get("input") if isinstance(args, dict) and isinstance(args.get("input"), str) else content
            if isinstance(args, dict) and isinstance(args.get("command"), list):
                text = "\n".join(str(c) for c in args["command"])
            self._apply_patch(ordinal, via, text)
            return
        if isinstance(args, dict) and isinstance(args.get("replacements"), list):
            self._replacements(ordinal, via, args["replacements"])
            return
        path = next((args[k] for k in PATH_KEYS if isinstance(args.get(k), str)), None) if isinstance(
            args, dict) else None
        if path is None:
            return
        if isinstance(args.get("diff"), str) and "SEARCH" in args["diff"]:
            pairs = [(m["old"], m["new"], False) for m in _SEARCH_REPLACE.finditer(args["diff"] + "\n")]
            if pairs:
                self._edit(ordinal, via, path, pairs)
            return
        if isinstance(args.get("content"), str) and name in WRITE_TOOLS:
            created = extra.get("fileOperation") == "create"
            self._whole(ordinal, via, path, args["content"], "create" if created else "write", created)
            return
        if args.get("command") == "create" and isinstance(args.get("file_text"), str):  # str_replace_editor
            self._whole(ordinal, via, path, args["file_text"], "create", True)
            return
        if args.get("command") == "insert" and isinstance(args.get("new_str"), str):  # str_replace_editor insert
            self._change(ordinal, via, path, "insert", None, None, _unified(path, "", args["new_str"]))
            self._known(path, None, ordinal)
            return
        edits = args.get("edits") if isinstance(args.get("edits"), list) else [args]
        pairs = [pair for e in edits if isinstance(e, dict) for pair in [_old_new(e)] if pair]
        if pairs:
            self._edit(ordinal, via, path, pairs)

    def _replacements(self, ordinal: int, via: str, replacements: list[Any]) -> None:
        """Copilot's multi_replace_string_in_file: old/new pairs that each name their file."""
        by_path: dict[str, list[tuple[str, str, bool]]] = {}
        for r in replacements:
            path = next((r[k] for k in PATH_KEYS if isinstance(r.get(k), str)), None) if isinstance(r, dict) else None
            pair = _old_new(r) if path else None
            if pair:
                by_path.setdefault(path, []).append(pair)
        for path, pairs in by_path.items():
            self._edit(ordinal, via, path, pairs)

    def _range_edits(self, ordinal: int, content: str, extra: dict[str, Any]) -> None:
        """An editor's text edits (line/column ranges, 1-based) to one file: applied to its known text."""
        data = _json(content)
        path = extra.get("path")
        if not isinstance(data, dict) or not isinstance(path, str) or extra.get("byTool"):
            return
        edits = [e for e in data.get("edits") or () if isinstance(e, dict) and isinstance(e.get("text"), str)]
        base = self._files.get(path)
        result = _apply_ranges(base, edits) if base is not None else None
        summary = "\n".join(_unified(path, "", e["text"]) for e in edits)
        self._change(ordinal, f"edit:{extra.get('editKind') or 'textEdit'}", path, "edit",
                     base if result is not None else None, result, summary)
        self._known(path, result, ordinal)

    # -- file texts and patches ----------------------------------------------------------------

    def _whole(self, ordinal: int, via: str, path: str, text: str, operation: str, created: bool) -> None:
        base = "" if created else self._files.get(path)
        self._change(ordinal, via, path, operation, base, text, None)
        self._known(path, text, ordinal)
        self._original_base.discard(path)

    def _edit(self, ordinal: int, via: str, path: str, pairs: list[tuple[str, str, bool]]) -> None:
        base = self._files.get(path)
        result = base
        for old, new, every in ((canonicalize(o), canonicalize(n), e) for o, n, e in pairs):
            if result is None or (old and old not in result):
                result = None
                break
            result = (result.replace(old, new) if every else result.replace(old, new, 1)) if old else result + new
        summary = "\n".join(_unified(path, old, new) for old, new, _ in pairs)
        self._change(ordinal, via, path, "edit", base if result is not None else None, result, summary)
        self._known(path, result, ordinal)
        self._original_base.discard(path)

    def _change(self, ordinal: int, via: str, path: str, operation: str, base: str | None, result: str | None,
                summary: str | None) -> None:
        entry: dict[str, Any] = {"turn": ordinal, "path": path, "via": via, "operation": operation}
        if result is not None:
            entry["resultSha256"] = _sha(result)
        if base is not None and result is not None and base != result:
            entry["patch"] = make_patch(base, result, path)
            if path in self._original_base:
                entry["baseFrom"] = "originalFile"
            elif path in self._origin and operation != "create":
                entry["baseTurn"] = self._origin[path]
        else:
            entry["summary"] = (summary if summary is not None else _unified(path, base or "", result or ""))[
                :SUMMARY_CHARS]
        self.record["fileChanges"].append(entry)

    def _search_replace(self, ordinal: int, content: str) -> None:
        path = None
        lines_before = content.split("\n")
        for m in _SEARCH_REPLACE.finditer(content):
            found = _block_path(lines_before, content.count("\n", 0, m.start()))
            path = found or path
            if path is None:
                continue
            old, new = m["old"], m["new"]
            if not old.strip() and path not in self._files:
                self._whole(ordinal, "search-replace", path, new, "create", True)
            else:
                self._edit(ordinal, "search-replace", path, [(old, new, False)])

    def _whole_files(self, ordinal: int, content: str) -> None:
        """Aider's whole format: a file name line, then the file's full text in a fence."""
        for m in _WHOLE_FILE.finditer(content):
            body = m["body"]
            self._whole(ordinal, "whole-file", m["path"], body, "write", False)

    def _udiffs(self, ordinal: int, content: str) -> None:
        """Aider's udiff format: fenced unified diffs, ``--- path`` / ``+++ path`` and ``@@`` hunks."""
        for block in _UDIFF.finditer(content):
            lines = block["body"].split("\n")
            heads = [i for i, ln in enumerate(lines) if ln.startswith("+++ ")]
            for n, h in enumerate(heads):
                end = heads[n + 1] - 1 if n + 1 < len(heads) else len(lines)
                path = lines[h][4:].strip().removeprefix("b/")
                hunks = [ln for ln in lines[h + 1:end] if ln]
                created = h > 0 and lines[h - 1].strip() == "--- /dev/null"
                if created:
                    added = "\n".join(ln[1:] for ln in hunks if ln.startswith("+"))
                    self._whole(ordinal, "udiff", path, added + "\n", "create", True)
                else:
                    self._edit(ordinal, "udiff", path, _hunks(hunks))

    def _apply_patch(self, ordinal: int, via: str, text: str) -> None:
        marks = list(_PATCH_FILE.finditer(text))
        for n, m in enumerate(marks):
            end = marks[n + 1].start() if n + 1 < len(marks) else len(text)
            body = text[m.end():end].split("\n")[1:]
            body = [ln for ln in body if not ln.startswith("*** End Patch") and not ln.startswith("*** Move to")]
            while body and not body[-1]:
                body.pop()
            path, op = m["path"], m["op"]
            if op == "Add":
                added = "\n".join(ln[1:] for ln in body if ln.startswith("+"))
                self._whole(ordinal, via, path, added + "\n" if added else "", "create", True)
            elif op == "Delete":
                self._change(ordinal, via, path, "delete", self._files.get(path), "", f"--- a/{path}\n+++ /dev/null")
                self._known(path, None, ordinal)
            else:
                self._edit(ordinal, via, path, _hunks(body))


def _json(content: str) -> Any:
    if not content.startswith(("{", "[")):
        return None
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return None


_EDITOR_COMMAND = regex.compile(r"^str_replace_editor[ \t]+(?P<op>create|str_replace|insert)[ \t]+(?P<path>[^\s'\"]+)")
_OPEN_COMMAND = regex.compile(r"^(?P<verb>open|create)[ \t]+[\"']?(?P<path>[^\s'\"]+)")
_EDIT_COMMAND = regex.compile(r"^edit[ \t]+\d+(?::\d+)?[ \t]*$")


def _shell_command(name: str, args: Any) -> str | None:
    key = SHELL_TOOLS.get(name)
    if key is None or not isinstance(args, dict):
        return None
    value = args.get(key)
    if isinstance(value, list) and value:
        parts = [str(v) for v in value]
        if len(parts) == 3 and parts[1] in ("-lc", "-c") and parts[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh"):
            return parts[2]
        return " ".join(parts)
    return value if isinstance(value, str) and value else None


def _fenced_command(name: str, content: str) -> str | None:
    """The command of a shell tool call written as text with a fenced block (the last one)."""
    if name not in SHELL_TOOLS or "```" not in content:
        return None
    blocks = _ANY_FENCE.findall(content)
    return blocks[-1].strip() or None if blocks else None


def _old_new(edit: dict[str, Any]) -> tuple[str, str, bool] | None:
    """(old, new, every) of one edit: ``old_string``/``new_string`` or ``old_str``/``new_str``."""
    for old, new in (("old_string", "new_string"), ("old_str", "new_str"), ("oldString", "newString")):
        if isinstance(edit.get(old), str) and isinstance(edit.get(new), str):
            return edit[old], edit[new], bool(edit.get("replace_all"))
    return None


def _apply_ranges(base: str, edits: list[dict[str, Any]]) -> str | None:
    """``base`` with every edit's ``[startLine, startColumn, endLine, endColumn]`` range replaced by
    its text (ranges against the same base, applied from the last); None when a range is not in it."""
    starts = [0]
    for line in base.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    spans = []
    for e in edits:
        rng = e.get("range")
        if not (isinstance(rng, list) and len(rng) == 4 and all(isinstance(v, int) and v >= 1 for v in rng)):
            return None
        sl, sc, el, ec = rng
        if el >= len(starts) or sl > el:
            return None
        a, b = starts[sl - 1] + sc - 1, starts[el - 1] + ec - 1
        if a > b or b > len(base):
            return None
        spans.append((a, b, e["text"]))
    for a, b, text in sorted(spans, reverse=True):
        base = base[:a] + text + base[b:]
    return base


def _typed_command(content: str) -> str:
    """The command of a line the user typed: ``/run cmd``, ``!cmd`` or ``<bash-input>cmd</bash-input>``."""
    m = _BASH_INPUT.search(content)
    if m:
        return m["cmd"].strip()
    if content.startswith("/"):
        return content.split(" ", 1)[1].strip() if " " in content else ""
    return content[1:].strip() if content.startswith("!") else content.strip()


def _numbered_text(content: str) -> str | None:
    """The file text of a ``cat -n`` style read (lines ``     1\\tcode`` or ``     1→code``, numbered
    from 1 without gaps, up to the first line that is not one of them, such as a reminder the tool
    appends). The listing cannot show whether the file ends with a newline: one is assumed."""
    lines = []
    for line in content.split("\n"):
        m = _NUMBERED.match(line)
        if m is None or int(m["n"]) != len(lines) + 1:
            break
        lines.append(m["line"])
    return "\n".join(lines) + "\n" if lines else None


def _raw_text(content: str) -> str | None:
    """The file text of a read that returns it as it is (after a Cline ``[read_file for ...] Result:`` line)."""
    m = _RESULT_HEADER.match(content)
    return content[m.end():] if m else content


def _hunks(body: list[str]) -> list[tuple[str, str, bool]]:
    """(old, new) text of every ``@@`` chunk of an apply_patch Update section."""
    out: list[tuple[str, str, bool]] = []
    old: list[str] = []
    new: list[str] = []
    for line in [*body, "@@"]:
        if line.startswith("@@"):
            if old or new:
                out.append(("\n".join(old) + "\n" if old else "", "\n".join(new) + "\n" if new else "", False))
            old, new = [], []
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        elif line.startswith(" ") or line == "":
            old.append(line[1:])
            new.append(line[1:])
    return out


def _block_path(lines: list[str], at: int) -> str | None:
    """The file name a SEARCH/REPLACE block at line ``at`` names: the nearest non-blank line
    before it that is not a fence (None when that line ends the previous block)."""
    for line in reversed(lines[:at]):
        text = line.strip()
        if not text or text.startswith("```"):
            continue
        if text.startswith(">>>>>>>"):
            return None
        return text.strip("`*:").strip() or None
    return None


def _unified(path: str, old: str, new: str) -> str:
    minus = "".join(f"-{ln}\n" for ln in old.splitlines())
    plus = "".join(f"+{ln}\n" for ln in new.splitlines())
    a, b = (path, path) if path.startswith("/") else (f"a/{path}", f"b/{path}")
    return f"--- {a}\n+++ {b}\n{minus}{plus}".rstrip("\n")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_patch(base: str, result: str, path: str) -> dict[str, Any]:
    """A ``diff_json_v1`` object turning ``base`` into ``result``: one op over the changed middle."""
    start = 0
    limit = min(len(base), len(result))
    while start < limit and base[start] == result[start]:
        start += 1
    end = 0
    while end < limit - start and base[len(base) - 1 - end] == result[len(result) - 1 - end]:
        end += 1
    dele, ins = len(base) - start - end, result[start:len(result) - end]
    if dele == 0:
        op: dict[str, Any] = {"op": "insert", "at": start, "ins": ins}
    elif not ins:
        op = {"op": "delete", "at": start, "del": dele}
    else:
        op = {"op": "replace", "at": start, "del": dele, "ins": ins}
    return {"protocol_id": "diff_json_v1", "target": {"path": path, "base_checksum_sha256": _sha(base)},
            "ops": [op], "result_sha256": _sha(result)}
