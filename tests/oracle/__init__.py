"""The record route, kept in the tests as the oracle of the product's documents.

One input, decoded, through the stages one turn record at a time: detect, parse (turn records, never
columns), count independently, account the source, assemble, gate, encode. It calls the product's pure
stages (grammars, normalizers, validators) and none of its routes (flows/), so the product may carry
turns however it likes: every input must give these bytes. A session the gate refuses, or whose id
repeats one of its source, is None here (the product quarantines it)."""

from __future__ import annotations

from models.errors import ReconstructError
from models.records import SourceText
from models.settings import Settings
from normalizers.assemble import RunContext
from normalizers.encode import encode_document
from parsers import registry
from parsers.turncols import TurnColumns
from tests.oracle import discord_text, discord_txt, inferred, irc, markdown, transcript, whatsapp
from tests.oracle.records import assemble
from validators import gate
from validators.accounting import Accountant

DETECT_SAMPLE = 65536
LINE_PARSES = {"whatsapp": whatsapp.parse, "irc": irc.parse, "transcript": transcript.parse,
               "discord-text": discord_text.parse, "discord-txt": discord_txt.parse,
               "inferred": inferred.parse, "markdown": markdown.parse}
"""The line grammars' turn-by-turn parses: the product reads these grammars only as tables of lines."""


def parse(grammar, source: SourceText, settings: Settings):
    """The oracle's sessions of one input: a line grammar's turn-by-turn parse, any other grammar's own."""
    own = LINE_PARSES.get(grammar.name)
    return own(grammar, source, settings) if own is not None else grammar.parse(source, settings)


def documents(source: SourceText, settings: Settings) -> list[bytes | None] | None:
    """Each session's document bytes in source order; None when no grammar reads the input."""
    ctx = RunContext.from_settings(settings)
    try:
        detection = registry.detect(source.text[:DETECT_SAMPLE], source.name, threshold=settings.detect_threshold,
                                    forced=settings.format)
    except ReconstructError:
        return None
    grammar = registry.get(detection.grammar)
    accountant = Accountant.of(source, lines=not grammar.structured)
    sessions = list(parse(grammar, source, settings))
    seen: set[str] = set()
    out: list[bytes | None] = []
    for index, parsed in enumerate(sessions):
        if isinstance(parsed.turns, TurnColumns):
            parsed.turns = parsed.turns.records()
        accounting = accountant.account(parsed, index == len(sessions) - 1)
        counted = grammar.count_turns(parsed.raw)
        doc = assemble(parsed, counted, source=source, detection=detection, grammar_version=grammar.version, ctx=ctx,
                       accounting=accounting.as_dict(), unaccounted=accounting.reason())
        sid = doc["sessionId"]
        if parsed.session_id is not None and sid in seen:
            out.append(None)
            continue
        seen.add(sid)
        out.append(_gated(doc, counted, accounting))
    return out


def _gated(doc: dict, counted: int, accounting) -> bytes | None:
    """The document's bytes when the gate passes them (its summary written in first, as the product does)."""
    result = gate.check(doc, None, counted, accounting=accounting)
    doc["artifacts"]["ai_protocol_performance"]["gate"] = result.summary()
    try:
        encoded = encode_document(doc)
    except (TypeError, ValueError):
        return None
    if not result.passed or gate.check(doc, encoded, counted, accounting=accounting).failures:
        return None
    return encoded
