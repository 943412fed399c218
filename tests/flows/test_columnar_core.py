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

SETTINGS = [Settings(), Settings(source_tz="Europe/Stockholm", redact_pii=True), Settings(secrets_policy="report"),
            Settings(max_turn_chars=20)]


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
    settings = Settings(source_tz="Europe/Stockholm")
    columnar = process_bytes(text.encode(), "chat.txt", RunContext.from_settings(settings))
    records = process_bytes(text.encode(), "chat.txt",
                            RunContext.from_settings(settings.model_copy(update={"columnar": False})))
    assert columnar.sessions[0].encoded == records.sessions[0].encoded
    assert b"[REDACTED:openai_api_key]" in columnar.sessions[0].encoded
    assert b'"heuristicsNamed": [' in columnar.sessions[0].encoded
