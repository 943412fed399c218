"""A shard's written-out sessions keep no envelope until their batch is restored: the key claim reads only
each one's key and source sha256, and the claims, deferrals, snapshots and documents are those of a shard
that held every session whole (docs/memory.md, "10,000 small files")."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from flows.core import shard
from flows.core.ingest import discover
from flows.core.shard import run_shard
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.flows.test_memory_bound import chats
from tests.flows.test_snapshots import chatgpt_exports


@pytest.fixture()
def inputs(tmp_path: Path) -> list[Path]:
    """Five small chats, and a ChatGPT conversation in two exports a month apart (one key, two sources: it is
    deferred to the merge) beside another conversation."""
    return [chats(tmp_path, 5), *chatgpt_exports(tmp_path)]


def _tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted((out / "sessions").rglob("*.json"))}


def _what_it_settled(result: shard.ShardResult) -> tuple:
    return (sorted(result.deferred),
            [(s.session_key, s.source_sha256, s.source_path, s.blob_sha256, s.first_at, s.last_at, s.messages)
             for s in result.snapshots],
            [(r.source_key, r.output_path, r.output_sha256, r.status, r.detail, r.session_key)
             for r in result.sessions],
            [(p.key, p.grammar, p.title, p.prints) for p in result.prints])


def test_a_written_out_session_keeps_no_envelope_and_the_shard_settles_as_one_that_held_it(inputs, tmp_path,
                                                                                            monkeypatch):
    whole = run_shard(discover(inputs, Settings()), tmp_path / "whole", Settings())
    assert whole.deferred  # the chat exported twice: its key is met twice in the shard
    monkeypatch.setattr(shard, "SPILL_DOCUMENTS", 2)
    envelopes: list[list[bool]] = []
    settle = shard._settle

    def spy(trail, result, *args, **kwargs):
        envelopes.append([s.document is not None for _, s in result.pending])
        return settle(trail, result, *args, **kwargs)

    monkeypatch.setattr(shard, "_settle", spy)
    out = tmp_path / "spilled"
    spilled = run_shard(discover(inputs, Settings()), out, Settings())
    # written out two at a time: only a last, unfinished batch still holds its envelope when the keys are claimed
    assert len(envelopes) == 1 and len(envelopes[0]) == 8 and not any(envelopes[0][:-1])
    assert _what_it_settled(spilled) == _what_it_settled(whole)
    assert _tree(out) == _tree(tmp_path / "whole")


def test_a_key_known_from_an_earlier_run_is_deferred_alike_when_its_session_was_written_out(inputs, tmp_path,
                                                                                             monkeypatch):
    small, first, second = inputs
    held = tmp_path / "held"
    for paths in ([small, first], [second]):
        reconstruct(paths, held, Settings(), runner=None)
    monkeypatch.setattr(shard, "SPILL_DOCUMENTS", 1)
    spilled = tmp_path / "spilled"
    for paths in ([small, first], [second]):
        reconstruct(paths, spilled, Settings(), runner=None)
    merged = [orjson.loads(data) for rel, data in _tree(spilled).items() if rel == "sessions/chatgpt/c1/c1.json"]
    # the later export alone in its run: its key's other source is the ledger's, and the merge joined them
    assert [len(doc["artifacts"]["ByggLogg"]["snapshots"]) for doc in merged] == [2]
    assert _tree(spilled) == _tree(held)
