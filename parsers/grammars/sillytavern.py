"""SillyTavern chat files (``<character> - <date>.jsonl``): a metadata line, then one message per line.

Shape: line 1 ``{"user_name", "character_name", "create_date", "chat_metadata"}``; each further line
``{"name", "is_user", "is_system", "send_date", "mes", "extra": {"api", "model", "reasoning"...},
"swipe_id", "swipes": [...], "swipe_info": [...]}``. One file is one session (no id: ``999``),
titled by its character.

Decisions:
- Every message line is one turn (B1): ``is_user`` the user, ``is_system`` a system (narrator)
  message, any other the character, role ``assistant`` (an AI speaks it); speaker = ``name``.
- ``extra.reasoning`` is the model's ``thinking`` turn before its message (B2).
- Swipes are alternative generations of the same message: the one shown (``swipe_id``) is the text
  in ``mes``; the others are kept beside it in ``extra.otherSwipes``, in their order.
- The model is ``extra.model`` when the line has it (explicit); its provider from a ``provider/``
  prefix or the model's family. ``extra.api`` and token counts go to ``extra``.
- ``send_date``: epoch milliseconds, ISO text, or SillyTavern's readable forms (``May 1, 2024
  10:00am``, ``2024-5-1 @10h 00m 00s 000ms``), naive; anything else keeps its raw text, no time.
- Line 1 is a ``session_header`` region; a line that is not JSON is a System notice (kept verbatim).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import regex

from models.records import ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.grammars._agentlog import bad_line_turn, family_model, masked, read_lines, sample_share
from parsers.grammars._aiexport import TimeNotes, compact, read_time
from parsers.registry import register
from parsers.timeparse import from_parts

_READABLE = regex.compile(r"(?P<mon>[A-Z][a-z]+) (?P<d>\d{1,2}), (?P<y>\d{4}) (?P<h>\d{1,2}):(?P<mi>\d{2})\s?"
                          r"(?P<ap>[AaPp][Mm])")
_HUMAN = regex.compile(r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2}) ?@(?P<h>\d{1,2})h ?(?P<mi>\d{1,2})m ?"
                       r"(?P<s>\d{1,2})s")
_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), 1)}


def send_time(value: Any) -> tuple[datetime | None, str | None]:
    """A message's ``send_date`` (see the module docstring)."""
    if isinstance(value, str) and (m := _READABLE.fullmatch(value.strip())):
        month = _MONTHS.get(m["mon"].lower())
        hour = int(m["h"]) % 12 + (12 if m["ap"].lower() == "pm" else 0)
        when = from_parts(int(m["y"]), month, int(m["d"]), hour, int(m["mi"])) if month and int(m["h"]) <= 12 else None
        return when, value
    if isinstance(value, str) and (m := _HUMAN.match(value.strip())):
        return from_parts(int(m["y"]), int(m["m"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"])), value
    return read_time(value)


def _is_message(obj: dict[str, Any]) -> bool:
    return "mes" in obj and ("is_user" in obj or "send_date" in obj)


def _is_header(obj: dict[str, Any]) -> bool:
    return "character_name" in obj or ("user_name" in obj and "chat_metadata" in obj)


class _Reader:
    """The turns and regions of one chat file's lines."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.regions: list[Region] = []
        self.times = TimeNotes()

    def line(self, obj: Any, i: int) -> None:
        if not isinstance(obj, dict):
            self.turns.append(bad_line_turn(str(obj), i))
            return
        if not _is_message(obj):
            kind = RegionKind.SESSION_HEADER if _is_header(obj) else RegionKind.METADATA
            self.regions.append(Region(kind, "the chat file's own record (user and character names, metadata)"
                                       if kind is RegionKind.SESSION_HEADER else "a line that is not a message",
                                       pointer=f"/{i}"))
            return
        role = "system" if obj.get("is_system") else "user" if obj.get("is_user") else "assistant"
        extra = obj.get("extra") if isinstance(obj.get("extra"), dict) else {}
        model = family_model(extra.get("model")) if role == "assistant" else None
        when, raw = send_time(obj.get("send_date"))
        self.times.note(when, raw, f"/{i}")
        speaker = obj.get("name") if isinstance(obj.get("name"), str) and obj["name"] else role
        reasoning = extra.get("reasoning")
        if role == "assistant" and isinstance(reasoning, str) and reasoning.strip():
            self.turns.append(Turn(speaker, "assistant", reasoning, when, raw, model, "thinking",
                                   pointer=f"/{i}/extra/reasoning"))
        text = obj.get("mes") if isinstance(obj.get("mes"), str) else ""
        self.turns.append(Turn(speaker, role, text, when, raw, model, "message", pointer=f"/{i}",
                               extra=compact({"api": extra.get("api"), "tokenCount": extra.get("token_count"),
                                              "otherSwipes": self._other_swipes(obj)})))

    @staticmethod
    def _other_swipes(obj: dict[str, Any]) -> list[str] | None:
        """The texts of the swipes not shown (alternative generations), kept beside the message."""
        swipes = obj.get("swipes") if isinstance(obj.get("swipes"), list) else []
        shown = obj.get("swipe_id") if isinstance(obj.get("swipe_id"), int) else 0
        others = [text for k, text in enumerate(swipes) if k != shown and isinstance(text, str)]
        return others or None


@register
class SillyTavern(Grammar):
    name = "sillytavern"
    detect_needs = ('"mes"',)  # a message's text key
    version = "1"
    structured = True
    description = "SillyTavern chat file (.jsonl: a metadata line, then name/is_user/send_date/mes messages)"
    example = ('{"user_name": "You", "character_name": "Seraphina", "create_date": "2024-05-01@10h00m00s"}\n'
               '{"name": "Seraphina", "is_user": false, "send_date": "May 1, 2024 10:00am", "mes": "Welcome."}')

    def detect(self, sample: str, name: str) -> float:
        good, total = sample_share(sample, lambda o: _is_message(o) or _is_header(o))
        messages, _ = sample_share(sample, _is_message)
        return good / total if total and messages else 0.0

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        doc = read_lines(source.text)
        lines = [i for i, obj in enumerate(doc) if obj is not None]
        reader = _Reader()
        for i in lines:
            reader.line(doc[i], i)
        session = ParsedSession(None, "none", reader.turns, raw=masked(doc, lines), pointer="",
                                regions=reader.regions)
        head = doc[lines[0]] if lines and isinstance(doc[lines[0]], dict) and _is_header(doc[lines[0]]) else {}
        title = head.get("character_name")
        session.title = title if isinstance(title, str) and title else None
        if isinstance(head.get("user_name"), str):
            session.meta["userName"] = head["user_name"]
        bad = sum(1 for t in reader.turns if t.extra and "malformedLine" in t.extra)
        if bad:
            session.warnings.append(f"{bad} lines are not JSON: kept verbatim as System notices")
        reader.times.flush(session)
        yield session

    def count_turns(self, raw: Any) -> int:
        """Message lines, their reasoning, and lines that are not JSON, counted from the raw lines."""
        count = 0
        for obj in raw.values() if isinstance(raw, dict) else ():
            if not isinstance(obj, dict):
                count += 1
            elif _is_message(obj):
                extra = obj.get("extra") if isinstance(obj.get("extra"), dict) else {}
                thinks = isinstance(extra.get("reasoning"), str) and extra["reasoning"].strip()
                count += 1 + bool(thinks and not obj.get("is_user") and not obj.get("is_system"))
        return count
