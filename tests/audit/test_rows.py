"""Dataset rows are taken from the assembled document, never from its bytes: they agree with its bytes."""

from __future__ import annotations

import hashlib
import importlib

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings

from audit import datasets
from audit.datasets import PART_COLUMNS, DocumentRows, Rows
from audit.ledger import Ledger
from flows.core.process import process_bytes
from flows.pipeline import reconstruct
from models.settings import Settings
from normalizers.assemble import RunContext
from tests.helpers import GOLDEN, ROOT

SAMPLES = ROOT / "sample_logs"
INPUTS = sorted(p for p in [*GOLDEN.rglob("*"), *SAMPLES.rglob("*")]
                if p.is_file() and not p.name.endswith(".expected.json"))
# the defaults, and personal data redacted in a zone
ROUTES = {"defaults": Settings(), "pii": Settings(redact_pii=True, source_tz="Europe/Stockholm")}


def _part(rows: Rows) -> dict[str, list[dict]]:
    return {t: f.to_dicts() for t, f in rows.frames().items()}


def _both_routes(outcome) -> tuple[Rows, Rows]:
    """(the rows handed over by assembly, the rows of the encoded bytes read back)."""
    handed, read = Rows(), Rows()
    for s in outcome.sessions:
        if s.encoded is None:
            continue
        rel, sha = f"sessions/{s.ordinal}.json", hashlib.sha256(s.encoded).hexdigest()
        handed.add(rel, sha, s.rows)
        read.add(rel, sha, DocumentRows.of(orjson.loads(s.encoded)))
    return handed, read


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("path", INPUTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_rows_from_assembly_equal_the_rows_of_the_document(path, route):
    outcome = process_bytes(path.read_bytes(), path.name, RunContext.from_settings(ROUTES[route]))
    handed, read = _both_routes(outcome)
    assert _part(handed) == _part(read)


def test_every_session_hands_over_a_table():
    """No session is assembled as dicts: whether its grammar reads a table of lines or turn records, its rows are
    a table."""
    kinds = set()
    for path in INPUTS:
        for s in process_bytes(path.read_bytes(), path.name, RunContext.from_settings(ROUTES["defaults"])).sessions:
            if s.rows is not None:
                kinds.add(type(s.rows.turns).__name__)
    assert kinds == {"DataFrame"}


def test_rows_of_generated_chats():
    whatsapp = importlib.import_module("tests.renderers.whatsapp")

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(whatsapp.STRATEGY)
    def check(session):
        name, data = whatsapp.render(session)
        for route in ROUTES:
            handed, read = _both_routes(process_bytes(data, name, RunContext.from_settings(ROUTES[route])))
            assert _part(handed) == _part(read)
            part = _part(handed)
            assert [s["interactions"] for s in part["sessions"]] == [len(part["turns"])]

    check()


def test_a_part_frame_has_the_part_columns_whatever_the_mix():
    rows = Rows()
    for path in (SAMPLES / "whatsapp").iterdir():
        for s in process_bytes(path.read_bytes(), path.name, RunContext.from_settings(ROUTES["defaults"])).sessions:
            if s.rows is not None:
                rows.add(path.name, "0" * 64, s.rows)
    frames = rows.frames()
    assert {t: dict(f.schema) for t, f in frames.items()} == \
        {t: dict(cols) for t, cols in PART_COLUMNS.items()}


def test_a_run_writes_the_rows_of_the_documents_it_wrote(tmp_path):
    """End to end: every current document's part rows are its bytes' rows, and every one has them."""
    out = tmp_path / "out"
    reconstruct([SAMPLES], out, Settings(workers=1), runner=None)
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        latest = ledger.revisions.latest()
    finally:
        ledger.close()
    parts = {t: pl.concat([pl.read_parquet(f) for f in sorted((out / datasets.PARTS / t).rglob("*.parquet"))])
             for t in datasets.TABLES}
    read = Rows()
    for rel, sha in sorted(latest.items()):
        read.add(rel, sha, DocumentRows.of(orjson.loads((out / rel).read_bytes())))
    expected = read.frames()
    for table, key in (("sessions", ["output_path"]), ("turns", ["output_path", "ordinal"])):
        assert parts[table].sort(key).to_dicts() == expected[table].sort(key).to_dicts()
    assert len(latest) > 20 and parts["turns"].height > 100

