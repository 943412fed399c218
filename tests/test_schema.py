"""The shipped JSON Schema is the one the pydantic models generate."""

from __future__ import annotations

import orjson

from models.document import json_schema
from tests.helpers import ROOT

SCHEMA = ROOT / "schemas" / "session_document.schema.json"


def test_schema_file_is_current():
    expected = orjson.dumps(json_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    assert SCHEMA.read_bytes() == expected, "regenerate: reconstruct schema --out schemas/session_document.schema.json"
