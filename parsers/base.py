"""The grammar contract: every input format is one subclass in parsers/grammars/."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import polars as pl
import regex

from models.records import ParsedSession, SourceText
from models.settings import Settings
from parsers.columns import LineTable, each_source, own
from parsers.jsonload import load_json, pointer_part
from parsers.linecount import LineCounts, LinePatterns

_DIGITS = regex.compile(r"\d+")


@lru_cache(maxsize=64)
def _pattern(source: str) -> regex.Pattern:
    return regex.compile(source)


@dataclass(frozen=True, slots=True)
class ConversationList:
    """Where a JSON export keeps its conversations, as data: the top-level list, the list under one of
    ``wrappers`` in a wrapper object (``{"conversations": [...]}``; the object's other keys are not read),
    or one conversation object. ``own_key`` is a key every conversation of the format has: an object
    holding it is one conversation, never a wrapper (None: the format names no such key). ``top_list``
    False: a top-level list is not the format's list (Hangouts keeps its conversations in a wrapper only);
    the whole read then takes it as one value (``""``), which its grammar refuses."""

    own_key: str | None = None
    wrappers: tuple[str, ...] = ("conversations",)
    top_list: bool = True

    def top_level(self, data: Any) -> Iterator[tuple[str, Any]]:
        """(pointer, conversation) of a decoded export: a list (``/i``), a wrapper object (``/<key>/i``,
        the first of ``wrappers`` that holds a list) or one conversation (``""``)."""
        if isinstance(data, list) and self.top_list:
            yield from ((f"/{i}", item) for i, item in enumerate(data))
            return
        if isinstance(data, dict) and self.own_key not in data:
            key = self.wrapper_of(data)
            if key is not None:
                yield from ((f"/{pointer_part(key)}/{i}", item) for i, item in enumerate(data[key]))
                return
        yield "", data

    def wrapper_of(self, data: dict) -> str | None:
        """The key whose list holds the conversations of a wrapper object, or None."""
        return next((key for key in self.wrappers if isinstance(data.get(key), list)), None)


class Grammar(ABC):
    """A format: how to recognise it, split it into sessions and turns, and count its turns.

    ``count_turns`` must count a session's turns from its raw source by a route of its own,
    not by re-running ``parse``: the gate compares the two (coverage check).
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    description: ClassVar[str]
    example: ClassVar[str]
    structured: ClassVar[bool] = False
    """True for JSON exports (detection looks at keys), False for line-oriented text."""
    specificity: ClassVar[int] = 2
    """How specific the format's own markers are: 2 a platform's export (WhatsApp, IRC, ChatGPT...),
    1 a generic transcript convention (``Name: text``, Markdown role headings), 0 the inferred
    fallback. Among candidates whose explained shares are within ``registry.MARGIN`` of the best,
    the most specific wins: WhatsApp beats the generic transcript on WhatsApp headers."""
    turn_shape: ClassVar[str | None] = None
    """A line grammar's header shape as a regular expression matched at the start of every line, with no
    fence, quote or other state (the independent census of validators.accounting): a line it matches
    must be a turn start, lie in a declared region, or be declared text (``ParsedSession.shaped``)."""
    no_turn_shape: ClassVar[str | None] = None
    """Why a line grammar has no ``turn_shape`` (its header is learnt per file, or its records are
    not lines); the census test requires one of the two of every line grammar."""
    detect_needs: ClassVar[tuple[str, ...]] = ()
    """Strings of which a sample must hold at least one for ``detect`` to score above 0 (empty: no
    such condition). Data read off the grammar's own detector (its markers, the keys its records
    need), so the registry need not run a detector that can only say 0: a sample holding none of
    them and no ``\\u`` escape (through which JSON could spell a key another way) scores 0 unasked.
    ``tests/parsers/test_detect_fast.py`` compares both ways on every input the tests know."""
    detect_lines: ClassVar[LinePatterns | None] = None
    """The line patterns a detection rule that is a share of header lines counts; the grammar then scores
    from their counts (``detect_counted``), so ``registry.detect_many`` can count them for many inputs at
    once (``parsers/linecount.py``). None: the detector reads its sample itself."""
    companion_names: ClassVar[tuple[str, ...]] = ()
    """File names (``users.json``) that are not sessions but context for this format's files: ingest
    records them as companions and hands their text, from the source's folder or its parents, in
    ``SourceText.companions``."""

    group_files: ClassVar[str | None] = None
    """A regular expression over file names: the files of one folder whose names match it are the parts
    of conversations over several files. Without a named group ``part``, all of a folder's matching
    files are one conversation keyed by the folder (a Slack channel's day files). With one, ``part``
    is the part number's place in the name: the files whose names are equal without it are one
    conversation keyed by that name (Telegram's ``messages2.html`` is a page of ``messages.html``,
    DiscordChatExporter's ``chat [part 2].json`` a part of ``chat.json``), in the order of the
    number in it (none first). Ingest hands a conversation's files to ``parse`` together as one source
    with ``SourceText.parts``; the ledger still records each file."""

    def group_of(self, file_name: str) -> tuple[str, int] | None:
        """The conversation over several files that a file is part of, as (its key within the folder,
        the part's number): key "" is the folder itself. None when the name is no such part."""
        if not self.group_files:
            return None
        m = _pattern(self.group_files).fullmatch(file_name)
        if m is None:
            return None
        if "part" not in m.re.groupindex:
            return "", 0
        if m.start("part") < 0:  # an optional part that is not in this name
            return file_name, 0
        number = _DIGITS.search(m["part"])
        return file_name[:m.start("part")] + file_name[m.end("part"):], int(number[0]) if number else 0

    conversations: ClassVar[ConversationList | None] = None
    """Where this JSON format keeps its conversations (``ConversationList``), for a grammar whose whole
    read is ``conversations_of`` the decoded input; None for every other grammar. With it set, a large
    input is read in bounded memory (flows/core/jsonstream.py): the list is located in the file, cut into
    its entries' bytes and each entry given to ``parse_conversation`` on any worker, so the whole read
    and the streamed read share the one per-conversation function and cannot differ."""

    def parse_conversation(self, pointer: str, value: Any, source: SourceText, settings: Settings
                           ) -> Iterator[ParsedSession]:
        """The sessions of one conversation of the list ``conversations`` names, at JSON pointer ``pointer``
        (``/<i>``, ``/<key>/<i>`` in a wrapper object, ``""`` for a lone conversation). ``source.text`` may be
        empty (a streamed read); the source's name and companions are set."""
        raise NotImplementedError(f"{self.name} names no conversation list")

    def conversations_of(self, data: Any, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        """The whole read of a decoded input: every conversation ``conversations`` finds in it, each
        through ``parse_conversation``."""
        for pointer, value in self.conversations.top_level(data):
            yield from self.parse_conversation(pointer, value, source, settings)

    def read(self, sources: list[SourceText], settings: Settings) -> list[Iterable[ParsedSession]]:
        """The sessions of each source, in source order: the one way the pipeline reads a grammar's inputs,
        a batch of them at a time. A grammar that reads one source at a time implements ``parse`` and
        keeps this; a line grammar reads the batch as one table of lines (``parsers.columns.LineTable``)
        and gives each session its turns as a frame. A source whose own reading fails gives its failure
        when its sessions are iterated (``columns.each_source``); the others are unaffected."""
        return [self.parse(source, settings) for source in sources]

    @abstractmethod
    def detect(self, sample: str, name: str) -> float:
        """The share in [0, 1] of the sample's records that this grammar explains under its rules.

        Records are the non-blank lines of a text sample (a line is explained when it is one of the
        grammar's headers, or a continuation the grammar accepts after one) and the message-like
        objects of a JSON sample. Shares are comparable across grammars; ``registry.detect`` decides
        with a margin and the grammars' ``specificity``."""

    def detect_counted(self, sample: str, name: str, counts: LineCounts) -> float:
        """``detect``'s share from the counts of ``detect_lines`` in the sample (a grammar that declares them)."""
        raise NotImplementedError(f"{self.name} declares no detection line patterns")

    def parse(self, source: SourceText, settings: Settings) -> Iterator[ParsedSession]:
        """Yield the sessions of one input, in source order, each with ``raw`` set: how a grammar that
        reads one input at a time implements ``read`` (a grammar overriding ``read`` has none). A grammar
        that names its ``conversations`` has this one: the decoded input through ``conversations_of``."""
        if self.conversations is None:
            raise NotImplementedError(f"{self.name} reads its inputs a batch at a time (read)")
        yield from self.conversations_of(load_json(source.text, source.name, self.name), source, settings)

    @abstractmethod
    def count_turns(self, raw: Any) -> int:
        """Count the turns of one session's raw source independently of ``parse``."""


class Survey(ABC):
    """What a line grammar learns of one input from a piece of it: the whole input, or one block of
    whole lines of a streamed input (``LineGrammar.survey``). The surveys of an input's blocks, added
    up in order (``then``), are the survey of the whole input: what only the whole input decides
    (WhatsApp's day/month order, IRC's dialect, a transcript's accepted labels), the independent turn
    count, the line count. What spans the chunks of a streamed read (IRC's day in force, the turns
    read so far) is carried on the input's survey by ``LineGrammar.frames``, the chunks coming in order."""

    lines: int
    """The number of the piece's last line (of the input's last line, once added up)."""
    counted: int
    """The independent turn count (``Grammar.count_turns``'s rule) of the piece."""
    turns: int
    """The piece's turn starts (the lines ``LineGrammar.starts`` flags): a stream is cut at them."""

    @abstractmethod
    def then(self, more: Survey) -> Survey:
        """The survey of this piece followed by ``more``, the next piece of the same input."""

    def census(self) -> Survey:
        """This survey with its piece's independent turn count taken now, on the caller's thread (a
        grammar may take it only when ``counted`` is first asked: a whole read does not ask)."""
        return self

    @property
    def whole_only(self) -> str | None:
        """Why this input can only be read whole (a line that ``starts`` flags but that would start no
        turn, a decision that needs the whole text at once): the reason its ledger row gives. None
        when it can be read in chunks cut at turn starts."""
        return None

    @property
    def apart(self) -> bool:
        """Whether the chunks of this input can be read apart from each other (ranges read side by
        side), with nothing carried from one chunk to the next but the survey itself."""
        return False


class LineGrammar(Grammar):
    """A line-oriented text format, read as tables of lines through one contract, whole or streamed.

    A table (``parsers.columns.LineTable``) holds one or more texts; each text is a piece of an input,
    starting at line ``first_lines[i]`` of it: in a whole read, the batch's inputs, each whole, in ONE
    table (one polars call per step for the whole batch); in a streamed read (flows/core/spool.py,
    flows/core/ranges.py), blocks of whole lines of one input for the pre-pass, then chunks cut at turn
    starts, one table each, in order (a surveyed table is made of its texts, ``LineTable.of``; the texts
    of one framed table start at the same line: a batch's at 1, a chunk is alone in its table). The
    grammar does not know which it serves:

    1. ``survey(sources, table, first_lines)``: each text's ``Survey``; an input's surveys are added
       up in order (``Survey.then``); an input whose survey gives ``whole_only`` is read whole;
    2. ``sessions(source, survey)``: the sessions of the input, before their turns;
    3. ``frames(sources, table, surveys, sessions, first_lines)``: each text's chunks, one per session
       of the text (``frame`` in ``parsers.columns.TURN_SCHEMA``, ``bad``, ``extras``); the text's
       declared regions and preamble go into its sessions before it returns;
    4. ``conclude(sessions, source, survey, chunks)``: the envelope facts (assumptions, warnings,
       attachments, the session id) once every chunk is read (``chunks``: each session's, added up).

    ``starts(lines)`` flags the lines a turn may start at: where a stream is cut. An input whose own
    decisions fail raises from ``sessions``: in a whole read that input alone fails (``columns.own``),
    in a streamed read the input is quarantined with the failure.
    """

    @abstractmethod
    def starts(self, lines: pl.Series) -> pl.Series:
        """Whether each line may start a turn (a header shape, tested without captures)."""

    @abstractmethod
    def survey(self, sources: list[SourceText], table: LineTable, first_lines: list[int]) -> list[Survey]:
        """Each text's survey (``sources[i]``: the input text ``i`` is a piece of)."""

    @abstractmethod
    def sessions(self, source: SourceText, survey: Survey) -> list[ParsedSession]:
        """The input's sessions before their turns (``source.text`` is empty in a streamed read)."""

    @abstractmethod
    def frames(self, sources: list[SourceText], table: LineTable, surveys: list, sessions: list[list[ParsedSession]],
               first_lines: list[int]) -> list[list[Any]]:
        """Each text's chunks, one per session (an input whose ``sessions`` failed: none)."""

    @abstractmethod
    def conclude(self, sessions: list[ParsedSession], source: SourceText, survey: Survey, chunks: list) -> None:
        """What the whole input decided, into its sessions, once every chunk is read."""

    def read(self, sources: list[SourceText], settings: Settings) -> list[Iterable[ParsedSession]]:
        """The whole read: the batch as one table of lines, surveyed, framed and concluded."""
        if not sources:
            return []
        table = LineTable.of([s.text for s in sources])
        ones = [1] * len(sources)
        surveys = self.survey(sources, table, ones)
        sessions = [own(self.sessions, source, survey) for source, survey in zip(sources, surveys, strict=True)]
        read = [s if isinstance(s, list) else [] for s in sessions]  # a failed input has no session to frame
        chunks = self.frames(sources, table, surveys, read, ones)

        def finish(i: int) -> list[ParsedSession]:
            if not isinstance(sessions[i], list):
                return sessions[i]  # the input's own failure, raised where its sessions are taken
            for session, chunk in zip(sessions[i], chunks[i], strict=True):
                session.frame = chunk.frame
            self.conclude(sessions[i], sources[i], surveys[i], chunks[i])
            return sessions[i]

        return each_source(list(range(len(sources))), finish)
