"""Sessions assembled as columns are byte for byte the documents of the turn-record path."""

from __future__ import annotations

import orjson
import polars as pl
import pytest

from audit.datasets import rows
from flows.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from tests.parsers.test_columns import CASES

# columnar_min_bytes=0: the small cases through columns too (a run sends short chats through records)
SETTINGS = [Settings(columnar_min_bytes=0, **values) for values in (
    {}, {"source_tz": "Europe/Stockholm", "redact_pii": True}, {"secrets_policy": "report"}, {"max_turn_chars": 20})]


@pytest.mark.parametrize("settings", SETTINGS, ids=["default", "zone-pii", "report", "truncate"])
@pytest.mark.parametrize(("grammar", "path"), CASES, ids=lambda v: getattr(v, "name", v))
def test_columnar_documents_equal_the_record_path(grammar, path, settings):
    data = path.read_bytes()
    columnar = process_bytes(data, path.name, RunContext.from_settings(settings))
    records = process_bytes(data, path.name, RunContext.from_settings(settings.model_copy(update={"columnar": False})))
    assert [s.encoded for s in columnar.sessions] == [s.encoded for s in records.sessions]
    assert [(s.status, s.reasons, s.detail, s.characters, s.unaccounted) for s in columnar.sessions] == \
        [(s.status, s.reasons, s.detail, s.characters, s.unaccounted) for s in records.sessions]
    for s in columnar.sessions:
        if s.encoded is not None:  # the turn rows are the document's interactions
            _, turns = rows("x", "", orjson.loads(s.encoded))
            expected = pl.DataFrame(turns).drop("output_path", "session_id", "source_pointer", "source_path", "grammar")
            assert s.turns.frame().to_dicts() == expected.select(s.turns.frame().columns).to_dicts()


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


def test_a_run_reads_columns_only_above_columnar_min_bytes():
    """Short chats go through records (a frame's fixed cost outweighs its gain), long ones through
    columns; the bytes are the same either way."""
    text = "".join(f"1/{1 + i // 100}/24, 10:{i % 60:02d} - Ann: message number {i}\n" for i in range(200)).encode()
    routes = {}
    for limit in (len(text), len(text) + 1):
        outcome = process_bytes(text, "chat.txt", RunContext.from_settings(Settings(columnar_min_bytes=limit)))
        routes[limit] = outcome.sessions[0]
    assert routes[len(text)].turns is not None and routes[len(text) + 1].turns is None
    assert routes[len(text)].encoded == routes[len(text) + 1].encoded
