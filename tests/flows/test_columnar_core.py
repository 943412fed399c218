"""A line input read in a table of lines gives byte for byte the documents of its turn-by-turn parse (the
oracle's, tests/oracle)."""

from __future__ import annotations

import orjson
import polars as pl
import pytest

from audit.datasets import rows
from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.text import decode
from tests import oracle
from tests.parsers.test_columns import CASES

SETTINGS = [Settings(**values) for values in (
    {}, {"source_tz": "Europe/Stockholm", "redact_pii": True}, {"secrets_policy": "report"}, {"max_turn_chars": 20})]


@pytest.mark.parametrize("settings", SETTINGS, ids=["default", "zone-pii", "report", "truncate"])
@pytest.mark.parametrize(("grammar", "path"), CASES, ids=lambda v: getattr(v, "name", v))
def test_frame_documents_equal_the_turn_by_turn_parse(grammar, path, settings):
    data = path.read_bytes()
    columnar = process_bytes(data, path.name, RunContext.from_settings(settings))
    assert [s.encoded for s in columnar.sessions] == oracle.documents(decode(data, path.name), settings)
    for s in columnar.sessions:
        if s.encoded is not None:  # the turn rows are the document's interactions
            _, expected = rows("x", "0", orjson.loads(s.encoded))
            got = s.rows.keyed("x", "0")[1]
            assert got.to_dicts() == pl.DataFrame(expected, schema=got.schema).to_dicts()


def test_a_secret_a_dst_gap_and_a_fact_in_one_chat():
    text = ("3/26/23, 2:30 - Ann: key sk-abcdefghijklmnopqrstuvwxyz012345 and H-17\n"
            "3/26/23, 3:10 - Bob: ```bash\nls -la\n```\n10/29/23, 2:30 - Ann: twice\n")
    settings = Settings(source_tz="Europe/Stockholm")
    columnar = process_bytes(text.encode(), "chat.txt", RunContext.from_settings(settings))
    assert [columnar.sessions[0].encoded] == oracle.documents(decode(text.encode(), "chat.txt"), settings)
    assert b"[REDACTED:openai_api_key]" in columnar.sessions[0].encoded
    assert b'"heuristicsNamed": [' in columnar.sessions[0].encoded


_SHORT = {"whatsapp": "1/1/24, 10:00 - Ann: hi\n1/1/24, 10:01 - Bob: yo\n",
          "transcript": "User: hi\nAssistant: yo\n",
          "inferred": "<<2024/03/01 10:00>> alice | a\n<<2024/03/01 10:01>> bob | b\n<<2024/03/01 10:02>> alice | c\n"}


@pytest.mark.parametrize("grammar", sorted(_SHORT))
def test_a_run_reads_every_input_of_a_table_grammar_as_a_frame(grammar, monkeypatch):
    """A grammar whose batch is one table of lines reads even the shortest input in it; the bytes are
    the turn-by-turn parse's."""
    text = _SHORT[grammar].encode()
    g = registry.get(grammar)
    framed, real = [], type(g).read
    monkeypatch.setattr(type(g), "read", lambda self, *a: framed.append(1) or real(self, *a))
    outcome = process_bytes(text, "chat.txt", RunContext.from_settings(Settings()))
    assert outcome.grammar == grammar
    encoded = [s.encoded for s in outcome.sessions]
    assert framed == [1] and encoded == oracle.documents(decode(text, "chat.txt"), Settings())
    assert encoded and None not in encoded


def _batch_of(texts: dict[str, str], settings: Settings | None = None):
    """The outcomes of several chats read in one batch (one table of lines per grammar)."""
    from flows.core.process import Batch, settled

    ctx = RunContext.from_settings(settings or Settings())
    batch = Batch(ctx)
    opened = [process_bytes(text.encode(), name, ctx, batch=batch) for name, text in texts.items()]
    return [settled(batch, o) for o in opened]


_CHATS = {"WhatsApp Chat with Ann.txt": "1/2/24, 10:00 - Ann: hi\n1/2/24, 10:01 - Bob: yo\n",
          "WhatsApp Chat with Bob.txt": "24/12/2019, 23:59 - Bob: hej\n25/12/2019, 00:01 - Ann: god jul\n"}


def test_chats_read_in_one_table_give_the_bytes_of_each_read_alone():
    together = _batch_of(_CHATS)
    alone = [process_bytes(text.encode(), name, RunContext.from_settings(Settings())) for name, text in _CHATS.items()]
    assert [s.encoded for o in together for s in o.sessions] == [s.encoded for o in alone for s in o.sessions]
    assert all(o.status.value == "ok" for o in together)


def test_a_failed_table_quarantines_each_of_its_inputs_with_the_failure(monkeypatch):
    from parsers.grammars import _whatsapp_columns

    def broken(*args, **kwargs):
        raise RuntimeError("table bug")

    monkeypatch.setattr(_whatsapp_columns, "turn_frames", broken)
    for outcome in _batch_of(_CHATS):
        assert outcome.status.value == "quarantined" and not outcome.sessions
        assert "reading 2 whatsapp inputs together failed" in outcome.detail
        assert "RuntimeError: table bug" in outcome.detail


def test_a_text_whose_own_reading_fails_is_quarantined_alone(monkeypatch):
    """What one chat decides for itself failing costs that chat only, not its table's others."""
    from parsers.grammars import whatsapp

    real = whatsapp._conclude

    def conclude(session, runs, *args):
        if runs and runs[0][0] == "24/12/2019":
            raise RuntimeError("this chat only")
        return real(session, runs, *args)

    monkeypatch.setattr(whatsapp, "_conclude", conclude)
    ann, bob = _batch_of(_CHATS)
    assert ann.status.value == "ok" and len(ann.sessions) == 1
    assert bob.status.value == "quarantined" and "RuntimeError: this chat only" in bob.detail
