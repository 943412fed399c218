"""Every golden, sample and conformance input gives the oracle's bytes (tests/oracle: the record route,
outside the product) through the product, whichever route the product takes for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.core.process import process_bytes
from models.errors import ReconstructError
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers.base import LineGrammar
from parsers.text import decode
from tests import oracle
from tests.helpers import known_inputs

INPUTS = known_inputs()
# the product's defaults, and settings that change what the batch does to each turn (zone and personal
# data, reported secrets, cut turns, identity)
SETTINGS = {"defaults": Settings(),
            "zone-pii": Settings(source_tz="Europe/Stockholm", redact_pii=True),
            "report-truncate": Settings(secrets_policy="report", max_turn_chars=20),
            "off-identity": Settings(secrets_policy="off", runtime_identity="openai:gpt-4o@2024-08-06")}


@pytest.mark.parametrize("settings", SETTINGS.values(), ids=SETTINGS.keys())
@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.relative_to(p.parents[1]).as_posix())
def test_the_product_gives_the_oracles_bytes(path, settings):
    data = path.read_bytes()
    got = process_bytes(data, path.name, RunContext.from_settings(settings))
    try:
        source = decode(data, path.name)
    except ReconstructError:  # not decodable: no route reads it, the product quarantines it
        assert not got.sessions
        return
    expected = oracle.documents(source, settings)
    if expected is None:
        assert not got.sessions
        return
    assert [s.encoded for s in got.sessions] == expected


def _streamable(path: Path) -> bool:
    from parsers import registry

    try:
        source = decode(path.read_bytes(), path.name)
        grammar = registry.get(registry.detect(source.text[:65536], path.name, threshold=0.5).grammar)
    except ReconstructError:  # not decodable, or no grammar: nothing to stream
        return False
    if isinstance(grammar, LineGrammar):  # a part of a partitioned export is grouped by ingest, read whole
        return grammar.group_of(path.name) is None
    return grammar.conversations is not None


STREAMED = [p for p in INPUTS if _streamable(p)]


@pytest.mark.parametrize("path", STREAMED, ids=lambda p: p.relative_to(p.parents[1]).as_posix())
def test_streamed_inputs_give_the_oracles_bytes(path, tmp_path):
    """Read as a stream (text in chunks of 64 bytes cut at turn starts, a JSON list conversation by
    conversation), an input's documents are the oracle's."""
    import shutil

    from flows.core import ingest
    from flows.core.shard import run_shard

    settings = Settings(stream_text_bytes=1, stream_json_bytes=1, stream_chunk_bytes=64)
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(path, src / path.name)
    expected = oracle.documents(decode(path.read_bytes(), f"in/{path.name}"), settings)  # named as ingest names it
    run_shard(ingest.discover([src], settings), tmp_path / "out", settings)
    written = sorted(p.read_bytes() for p in (tmp_path / "out").rglob("sessions/**/*.json"))
    assert written == sorted(e for e in expected if e is not None)
