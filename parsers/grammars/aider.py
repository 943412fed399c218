"""Aider chat history: ``.aider.chat.history.md`` (Markdown, appended to on every run).

Every ``# aider chat started at YYYY-MM-DD HH:MM:SS`` heading opens a session (a declared session
header; the id is ``aider-YYYY-MM-DD-HHMMSS`` from the heading, its time the session's time, read
in the configured source zone). Inside a session, lines are read as aider writes them:

- ``#### `` lines are the user's input; a run of them without a blank line between is one user
  turn (a multi-line prompt); ``/run cmd``, ``/test cmd`` and ``!cmd`` are shell commands
  (``extra.userCommand``), other ``/`` commands are kept with their name;
- ``> `` lines are aider's own output (settings, token counts, "Applied edit to ...", command
  output); a run of them without a blank line between is one tool turn (speaker ``aider``, kind
  tool_output);
- everything else is the model's reply (speaker ``Assistant``), blank lines included, up to the
  next user or tool line; inside a fenced code block a ``> `` line stays in the reply. Edits stay
  in the reply's text and the build log reads them as file changes: SEARCH/REPLACE blocks, and,
  by the edit format aider names (``extra.editFormat``), whole files (``whole``) and unified
  diffs (``udiff``).

The model comes from aider's own ``Main model:`` / ``Model:`` / ``Models:`` line (``with`` or the older
``using ... edit format``), from the ``aider --model <name>`` command line it logs, and from a ``/model
<name>`` switch typed mid-session, and holds for the replies after it (a session-level statement, so
not explicit per turn); ``provider/`` prefixes
(LiteLLM style) name the provider, else the model family does where it is unambiguous.
Text before the first heading is a declared preamble of the first session.

``/ask <question>`` followed by an input line that repeats the question is one user turn: aider logs the
question again after the command. The ``/ask`` line is kept (it says how the question was asked: no edit
is wanted) and the repetition is a declared ``duplicate`` region, listed with its reason in ByggLogg.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import regex

from models.records import ModelRef, ParsedSession, Region, RegionKind, ShapedLine, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._agentlog import family_model
from parsers.registry import register

HEADING = regex.compile(r"^# aider chat started at (?P<when>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})[ \t]*$")
_MODEL = regex.compile(r"^(?:Main model|Model|Models): (?P<model>\S+?)"
                       r"(?: (?:with|using) (?P<format>[\w-]+) edit format|,| |$)")
_LAUNCH = regex.compile(r"^(?:\S*/)?aider\b.*?(?:--model[ =]|(?<=\s)-m[ =]?)(?P<model>[^\s'\"]+)")
"""aider's command line as it logs it (``> aider --model ollama/qwen:4b``): the model of the replies after it,
until aider's own ``Model:`` line says otherwise."""
_SWITCH = regex.compile(r"^/model[ \t]+(?P<model>\S+)")
"""A ``/model <name>`` switch typed mid-session: the model of the replies after it."""
_ASK = regex.compile(r"^/ask[ \t]+(?P<question>\S.*)$", regex.DOTALL)
ECHO = ("aider logs the question of a /ask command again as the next input line: one user turn, the /ask "
        "line kept (it says how the question was asked), its repetition declared")
_VERSION = regex.compile(r"^Aider v(?P<v>\d[\w.+-]*)")
_COMMAND = regex.compile(r"^(?:/(?P<cmd>[a-z][\w-]*)\b|(?P<bang>!))")
SHELL_COMMANDS = frozenset({"run", "test", "!"})
USER, TOOL, REPLY, BLANK = "user", "tool", "reply", "blank"
ROLES = {USER: ("User", "user", "message"), TOOL: ("aider", "tool", "tool_output"),
         REPLY: ("Assistant", "assistant", "message")}


def _kind(line: str, fenced: bool) -> str:
    if line.startswith("#### ") or line.rstrip() == "####":
        return USER
    if not fenced and (line.startswith("> ") or line.rstrip() == ">"):
        return TOOL
    return REPLY if line.strip() else BLANK


def classify(lines: list[str]) -> list[str]:
    """The kind of every line of a session body (module docstring); fences tracked in replies."""
    kinds, fenced = [], False
    for line in lines:
        kind = _kind(line, fenced)
        if kind == REPLY and line.lstrip().startswith("```"):
            fenced = not fenced
        elif kind in (USER, TOOL):
            fenced = False
        kinds.append(kind)
    return kinds


def blocks(kinds: list[str]) -> list[tuple[str, int, int]]:
    """(kind, first, last) runs of turns over body indices: user and tool runs end at a blank line,
    a reply runs across blank lines up to the next user or tool line."""
    out: list[tuple[str, int, int]] = []
    for i, kind in enumerate(kinds):
        if kind == BLANK:
            continue
        prev = out[-1] if out else None
        joins = prev is not None and prev[0] == kind and (kind == REPLY or prev[2] == i - 1)
        if joins:
            out[-1] = (kind, prev[1], i)
        else:
            out.append((kind, i, i))
    return out


def _strip(line: str, kind: str) -> str:
    if kind == USER:
        return line[5:].rstrip() if line.startswith("#### ") else ""
    if kind == TOOL:
        return line[2:].rstrip() if line.startswith("> ") else ""
    return line


@register
class Aider(Grammar):
    name = "aider"
    detect_needs = ("# aider chat started at ",)  # its session heading
    version = "1"
    description = "Aider chat history (.aider.chat.history.md)"
    turn_shape = r"^#### "  # a user input line
    example = "# aider chat started at 2025-05-04 17:02:36\n\n#### fix the failing test  \n"

    def detect(self, sample: str, name: str) -> float:
        lines = sample.split("\n")
        if len(sample) >= 65536 and len(lines) > 1:
            lines = lines[:-1]
        if not any(HEADING.match(ln) for ln in lines[:400]):
            return 0.0
        # Every line is explained under the grammar's rules once a heading opens the session:
        # headings, user and tool lines, and reply text in between.
        return 1.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        lines = source.text.split("\n")
        if source.text.endswith("\n"):
            lines.pop()
        starts = [i for i, ln in enumerate(lines) if HEADING.match(ln)] or [0]
        for n, start in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(lines)
            yield self._session(lines, 0 if n == 0 else start, start, end)

    def _session(self, lines: list[str], first: int, start: int, end: int) -> ParsedSession:
        heading = HEADING.match(lines[start]) if start < len(lines) else None
        regions: list[Region] = []
        if first < start and any(ln.strip() for ln in lines[first:start]):
            regions.append(Region(RegionKind.PREAMBLE, "text before the first 'aider chat started at' heading",
                                  lines=(first + 1, start)))
        body = start + 1 if heading else start
        if heading:
            regions.append(Region(RegionKind.SESSION_HEADER, "aider chat started at", lines=(start + 1, start + 1)))
        sid = created = None
        if heading:
            created = datetime.fromisoformat(heading["when"])
            sid = "aider-" + heading["when"].replace(" ", "-").replace(":", "")
        session = ParsedSession(sid, "source:aider heading" if sid else "none", [], raw=lines[body:end],
                                created=created, created_raw=heading["when"] if heading else None,
                                lines=(first + 1, max(end, first + 1)), regions=regions)
        self._turns(session, lines[body:end], body)
        session.meta = {"agent": "aider", **session.meta}
        return session

    def _turns(self, session: ParsedSession, body: list[str], offset: int) -> None:
        model: ModelRef | None = None
        edit_format: str | None = None
        asked: str | None = None  # the question of a /ask just before
        for kind, a, b in blocks(classify(body)):
            text = "\n".join(_strip(ln, kind) for ln in body[a:b + 1]).rstrip()
            speaker, role, turn_kind = ROLES[kind]
            extra: dict[str, Any] | None = None
            if kind == USER and asked is not None and text == asked:
                session.regions.append(Region(RegionKind.DUPLICATE, ECHO, lines=(offset + a + 1, offset + b + 1)))
                asked = None
                continue
            asked = m["question"].strip() if kind == USER and (m := _ASK.match(text)) else None
            if kind == TOOL:
                found = self._settings(session, body[a:b + 1])
                if found:
                    model, edit_format = found
            elif kind == USER:
                if switch := _SWITCH.match(text):
                    model = family_model(switch["model"])
                    session.meta.setdefault("model", switch["model"])
                session.shaped += [ShapedLine(offset + i + 1, "a line of a multi-line prompt (a run of '#### ' lines)")
                                   for i in range(a + 1, b + 1)]
                m = _COMMAND.match(text)
                if m:
                    extra = {"userCommand": "!" if m["bang"] else m["cmd"]}
                    turn_kind = "command"
            elif edit_format:
                extra = {"editFormat": edit_format}
            turn = Turn(speaker, role, text, None, None, model if kind == REPLY else None, turn_kind,
                        lines=(offset + a + 1, offset + b + 1), extra=extra, model_explicit=False)
            session.turns.append(turn)

    @staticmethod
    def _settings(session: ParsedSession, block: list[str]) -> tuple[ModelRef | None, str | None] | None:
        """The model and edit format aider's own lines name (None when they name none)."""
        found = None
        for line in block:
            text = _strip(line, TOOL)
            launch = _LAUNCH.match(text)
            if launch and found is None:
                found = (family_model(launch["model"]), None)
            m = _MODEL.match(text)
            if m:
                name = m["model"]
                found = (family_model(name), m["format"])
                session.meta.setdefault("model", name)
                if m["format"]:
                    session.meta.setdefault("editFormat", m["format"])
            v = _VERSION.match(text)
            if v:
                session.meta.setdefault("agentVersion", v["v"])
        return found

    def count_turns(self, raw: Any) -> int:
        """Runs of user lines and of tool lines (each ended by a blank line or another kind) and
        replies (ended only by a user or tool line), over the session's body; a one-line input that
        repeats the question of the ``/ask`` line before it is that input's echo, not a turn."""
        count, prev, fenced = 0, BLANK, False
        last = BLANK
        asked = None
        for line in raw:
            kind = _kind(line, fenced)
            if kind == BLANK:
                prev = BLANK
                continue
            if kind == REPLY and line.lstrip().startswith("```"):
                fenced = not fenced
            elif kind != REPLY:
                fenced = False
            starts = kind != last if kind == REPLY else (kind != prev)
            if starts and kind == USER:
                said = line[5:].strip() if line.startswith("#### ") else ""
                echo = asked is not None and said == asked
                asked = said[5:].strip() if said.startswith("/ask ") and not echo else None
                starts = not echo
            elif starts:
                asked = None
            count += starts
            prev = last = kind
        return count
