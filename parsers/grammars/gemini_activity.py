"""Gemini Apps Activity from Google Takeout (``My Activity/Gemini Apps/My Activity.json``).

Google exports Gemini chats as "My Activity" (with JSON chosen as the file type): one JSON array of
activity entries, newest first, verified against public descriptions of the file::

    [{"header": "Gemini Apps", "title": "Prompted what is the capital of France?",
      "time": "2025-06-01T10:15:22.806Z", "products": ["Gemini Apps"],
      "activityControls": ["Gemini Apps Activity"],
      "safeHtmlItem": [{"html": "<p>Paris.</p>"}],
      "subtitles": [{"name": "Tutor was used in this chat. Manage your Gems.", "url": "..."}],
      "imageFile": "image_89b1bd-1e98.png"}, ...]

Other entries record actions: ``Created ...`` (a Canvas), ``Used ...``, ``Selected preferred
draft``, ``Gave feedback: Good response``.

Decisions:
- The file holds no conversation ids and no thread structure (which prompts belong to one chat is
  not recorded), so the whole activity list is one session without an id (``999``), oldest first;
  nothing is grouped by guess.
- Every entry is a turn (B1): a ``Prompted ...`` title is the user's prompt (the prefix removed);
  any other title is a System ``action`` turn with the title as its text. The entry's response
  (``safeHtmlItem``, HTML as text) is the assistant's turn after it, at the same time.
- An entry with several responses holds the regenerated drafts. The file does not say which one
  was shown in the end (a ``Selected preferred draft`` entry can come later): the last is taken as
  the reply and the earlier ones are declared ``off_branch`` regions that keep their text, with an
  assumption in the build log.
- The assistant is ``Gemini``, provider ``google``; the file names no model (``Gemini Apps`` is
  the product), so the model name and version are ``unknown`` (A1).
- Gems (``... was used in this chat``), attachments and image files named by ``subtitles``,
  ``attachedFiles`` and ``imageFile`` go to the prompt's ``extra``.
- Source accounting sees the entries as the records of a list (every entry is one, whatever its
  keys), and a prompt entry's ``title`` and each of its responses must be in a turn or a region.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from models.errors import ParseError, Reason
from models.records import ModelRef, ParsedSession, Region, RegionKind, SourceText, Turn
from models.settings import Settings
from parsers.base import Grammar
from parsers.drift import Drift
from parsers.grammars._aiexport import read_sample
from parsers.grammars._chatjson import TimeLog, chronological, compact, iso_time, note_odd, odd_entry
from parsers.grammars.json_chat import html_text
from parsers.jsonload import load_json
from parsers.registry import register

PROMPTED = "Prompted "
ASSISTANT = "Gemini"
MODEL = ModelRef("google", None, None)
GEM = " was used in this chat"
ENTRY_KEYS = frozenset({"header", "title", "titleUrl", "time", "products", "activityControls", "safeHtmlItem",
                        "subtitles", "attachedFiles", "imageFile", "details", "description"})


def _is_activity(entry: Any) -> bool:
    """A Gemini Apps activity entry: a title and a time under a Gemini header or product."""
    if not (isinstance(entry, dict) and isinstance(entry.get("title"), str) and "time" in entry):
        return False
    marks = [entry.get("header"), *(entry.get("products") or []), *(entry.get("activityControls") or [])]
    return "safeHtmlItem" in entry or any(isinstance(m, str) and "Gemini" in m for m in marks)


def _responses(entry: dict[str, Any]) -> list[str]:
    items = entry.get("safeHtmlItem")
    if not isinstance(items, list):
        return []
    return [html_text(i["html"]) if isinstance(i, dict) and isinstance(i.get("html"), str) else "" for i in items]


def _extra(entry: dict[str, Any]) -> dict[str, Any] | None:
    notes = [s.get("name") for s in entry.get("subtitles") or [] if isinstance(s, dict)]
    gems = [n.split(GEM)[0] for n in notes if isinstance(n, str) and GEM in n]
    return compact({"gem": gems[0] if len(gems) == 1 else gems or None,
                    "subtitles": [n for n in notes if isinstance(n, str) and GEM not in n] or None,
                    "attachedFiles": entry.get("attachedFiles"), "imageFile": entry.get("imageFile")})


def _entry_turns(entry: Any, at: str, times: TimeLog, drift: Drift, read: TimeReader = iso_time
                 ) -> tuple[list[Turn], list[Region]]:
    """The turns of one activity entry (its title, then its response) and its earlier drafts; ``read``
    reads its ``time`` (ISO 8601 in the JSON form, Takeout's words in the HTML form)."""
    if not isinstance(entry, dict):
        return [odd_entry(entry, at)], []
    drift.unknown_keys(entry, ENTRY_KEYS, at)
    raw = entry.get("time") if isinstance(entry.get("time"), str) else None
    when = times.read(read(raw) if raw else None, raw, at)
    title = entry.get("title") if isinstance(entry.get("title"), str) else ""
    if title.startswith(PROMPTED):
        first = Turn("User", "user", title[len(PROMPTED):], when, raw, None, "message", pointer=f"{at}/title",
                     extra=_extra(entry))
    else:
        first = Turn("System", "system", title, when, raw, None, "action", pointer=f"{at}/title", extra=_extra(entry))
    notes = [Region(RegionKind.METADATA, "Takeout's notes on the entry (a Gem used, files attached): kept in the "
                    "turn's extra", pointer=f"{at}/subtitles")] if entry.get("subtitles") else []
    responses = _responses(entry)
    if not responses:
        return [first], notes
    reply = Turn(ASSISTANT, "assistant", responses[-1], when, raw, MODEL, "message",
                 pointer=f"{at}/safeHtmlItem/{len(responses) - 1}", model_explicit=False)
    drafts = [Region(RegionKind.OFF_BRANCH, "an earlier draft of the response (regenerated)",
                     pointer=f"{at}/safeHtmlItem/{k}", content=text) for k, text in enumerate(responses[:-1])]
    return [first, reply], notes + drafts


TimeReader = Callable[[str], datetime | None]


def _stamp(when: datetime | None) -> float | None:
    """A time's place in the order; a naive one is taken as UTC (never the machine's zone)."""
    if when is None:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def activity_session(data: list[Any], read: TimeReader) -> ParsedSession:
    """The one session of a list of activity entries in the JSON form (the HTML form is read into it),
    oldest first; ``read`` reads an entry's ``time``."""
    # every entry is a record of the list, as every line of a JSON Lines file is (source accounting)
    session = ParsedSession(None, "none", [], raw={str(i): e for i, e in enumerate(data)}, pointer="")
    stamps = [_stamp(read(e["time"])) if isinstance(e, dict) and isinstance(e.get("time"), str) else None
              for e in data]
    order, _ = chronological(stamps, newest=True)
    if len(data) > 1:
        session.assumptions.append("activity entries emitted oldest first by time (the file lists newest first)")
    times, drift = TimeLog(), Drift()
    for i in order:
        turns, drafts = _entry_turns(data[i], f"/{i}", times, drift, read)
        session.turns.extend(turns)
        session.regions.extend(drafts)
    if any(r.kind is RegionKind.OFF_BRANCH for r in session.regions):
        session.assumptions.append("of several drafts of a response, the last is the reply; the earlier "
                                   "ones are kept as off_branch regions (the file does not say which was shown)")
    note_odd(session, data)
    times.flush(session, "entries")
    if drift:
        session.meta["formatDrift"] = drift.as_meta()
    return session


@register
class GeminiActivity(Grammar):
    name = "gemini-activity"
    detect_needs = ("Gemini",)  # its detector scores 0 without it
    version = "1"
    structured = True
    description = ("Gemini Apps Activity from Google Takeout (My Activity.json): prompts, responses and actions "
                   "as one session, oldest first")
    example = ('[{"header": "Gemini Apps", "title": "Prompted hi", "time": "2025-06-01T10:15:22.806Z", '
               '"products": ["Gemini Apps"], "safeHtmlItem": [{"html": "<p>Hello!</p>"}]}]')

    def detect(self, sample: str, name: str) -> float:
        if '"title"' not in sample or "Gemini" not in sample:
            return 0.0
        value, cut = read_sample(sample)
        entries = value[:-1] if cut and isinstance(value, list) else value
        if not isinstance(entries, list) or not entries:
            return 1.0 if cut and isinstance(value, list) and _is_activity(value[0]) else 0.0
        return sum(1 for e in entries if _is_activity(e)) / len(entries)

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        data = load_json(source.text, source.name, self.name)
        if not isinstance(data, list):
            raise ParseError(Reason.PARSE_ERROR, "expected a JSON array of activity entries", path=source.name,
                             grammar=self.name)
        yield activity_session(data, iso_time)

    def count_turns(self, raw: Any) -> int:
        entries = list(raw.values()) if isinstance(raw, dict) else raw if isinstance(raw, list) else []
        return sum(1 + (isinstance(e, dict) and isinstance(e.get("safeHtmlItem"), list) and bool(e["safeHtmlItem"]))
                   for e in entries)
