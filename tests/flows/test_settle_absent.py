"""A shard writing new session keys does not look for their documents one by one: a key folder not there
holds no earlier document and no other file of the key; a rerun looks, and finds its documents unchanged."""

from __future__ import annotations

from flows.core import ingest, shard, snapshots
from models.settings import Settings
from tests.helpers import ROOT


def _looked(monkeypatch) -> list[str]:
    looked: list[str] = []
    read, others = shard._read, snapshots.others_in_folder
    monkeypatch.setattr(shard, "_read", lambda path: looked.append(str(path)) or read(path))
    monkeypatch.setattr(snapshots, "others_in_folder", lambda root, rel: looked.append(rel) or others(root, rel))
    return looked


def test_new_keys_are_not_looked_for_and_a_rerun_finds_them_unchanged(monkeypatch, tmp_path):
    settings = Settings(workers=1)
    refs = ingest.discover([ROOT / "sample_logs" / "whatsapp"], settings)
    looked = _looked(monkeypatch)
    first = shard.run_shard(refs, tmp_path / "out", settings)
    assert first.written > 0 and looked == []
    again = shard.run_shard(ingest.discover([ROOT / "sample_logs" / "whatsapp"], settings), tmp_path / "out", settings)
    assert again.written == 0 and again.unchanged == first.written
    assert len(looked) == 2 * first.written
