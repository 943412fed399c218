"""A line input read as a frame of lines gives byte for byte the documents of its turn-by-turn parse."""

from __future__ import annotations

import orjson
import polars as pl
import pytest

from audit.datasets import rows
from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from tests.parsers.test_columns import CASES

# columnar_min_bytes=0: the small cases read as frames too (a run parses short chats turn by turn)
SETTINGS = [Settings(columnar_min_bytes=0, **values) for values in (
    {}, {"source_tz": "Europe/Stockholm", "redact_pii": True}, {"secrets_policy": "report"}, {"max_turn_chars": 20})]


@pytest.mark.parametrize("settings", SETTINGS, ids=["default", "zone-pii", "report", "truncate"])
@pytest.mark.parametrize(("grammar", "path"), CASES, ids=lambda v: getattr(v, "name", v))
def test_frame_documents_equal_the_turn_by_turn_parse(grammar, path, settings):
    data = path.read_bytes()
    columnar = process_bytes(data, path.name, RunContext.from_settings(settings))
    records = process_bytes(data, path.name, RunContext.from_settings(settings.model_copy(update={"columnar": False})))
    assert [s.encoded for s in columnar.sessions] == [s.encoded for s in records.sessions]
    assert [(s.status, s.reasons, s.detail, s.characters, s.unaccounted) for s in columnar.sessions] == \
        [(s.status, s.reasons, s.detail, s.characters, s.unaccounted) for s in records.sessions]
    for s in columnar.sessions:
        if s.encoded is not None:  # the turn rows are the document's interactions
            _, expected = rows("x", "0", orjson.loads(s.encoded))
            got = s.rows.keyed("x", "0")[1]
            assert got.to_dicts() == pl.DataFrame(expected, schema=got.schema).to_dicts()


def test_a_secret_a_dst_gap_and_a_fact_in_one_chat():
    text = ("3/26/23, 2:30 - Ann: key sk-abcdefghijklmnopqrstuvwxyz012345 and H-17\n"
            "3/26/23, 3:10 - Bob: ```bash\nls -la\n```\n10/29/23, 2:30 - Ann: twice\n")
    settings = Settings(source_tz="Europe/Stockholm", columnar_min_bytes=0)
    columnar = process_bytes(text.encode(), "chat.txt", RunContext.from_settings(settings))
    records = process_bytes(text.encode(), "chat.txt",
                            RunContext.from_settings(settings.model_copy(update={"columnar": False})))
    assert columnar.sessions[0].encoded == records.sessions[0].encoded
    assert b"[REDACTED:openai_api_key]" in columnar.sessions[0].encoded
    assert b'"heuristicsNamed": [' in columnar.sessions[0].encoded


def test_a_chat_of_any_size_is_read_in_a_table_of_lines(monkeypatch):
    """WhatsApp reads a short chat as it reads a long one, in a table of lines (``columnar_min_bytes`` no
    longer sends it turn by turn); with ``columnar`` off it is parsed turn by turn; the bytes are the same."""
    text = "".join(f"1/{1 + i // 100}/24, 10:{i % 60:02d} - Ann: message number {i}\n" for i in range(200)).encode()
    grammar = registry.get("whatsapp")
    framed, real = [], type(grammar).parse_columns
    monkeypatch.setattr(type(grammar), "parse_columns", lambda self, *a: framed.append(1) or real(self, *a))
    encoded = {}
    for limit in (len(text), len(text) + 1):
        outcome = process_bytes(text, "chat.txt", RunContext.from_settings(Settings(columnar_min_bytes=limit)))
        encoded[limit] = outcome.sessions[0].encoded
    off = process_bytes(text, "chat.txt", RunContext.from_settings(Settings(columnar=False)))
    assert framed == [1, 1] and encoded[len(text)] == encoded[len(text) + 1] == off.sessions[0].encoded is not None


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
        assert "the table of 2 whatsapp inputs failed" in outcome.detail and "RuntimeError: table bug" in outcome.detail


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
