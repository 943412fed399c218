"""An unchanged rerun: the inputs the ledger proves unchanged get their rows and no shard work; a
changed configuration, pipeline version or input still gets the work it needs."""

from __future__ import annotations

import shutil

import pytest

import flows.pipeline as pipeline
import models.settings as settings_module
from audit.ledger import Ledger
from flows.core import ingest, unchanged
from flows.pipeline import reconstruct, run_archive
from models.settings import Settings
from tests.helpers import ROOT

TRANSCRIPT = "User: hi\nAssistant: hello {}\n"


@pytest.fixture
def archive(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for i in range(4):
        (src / f"t{i}.txt").write_text(TRANSCRIPT.format(i))
    return src


class Shards:
    """A runner that records the shards it is given and runs them here, as the core does."""

    def __init__(self, out, settings) -> None:
        self.out, self.settings, self.given = out, settings, []

    def __call__(self, shards, companions, ledger_path):
        from pathlib import Path

        from flows.core.shard import run_shard

        self.given.append([ref.key for shard in shards for ref in shard])
        for shard in shards:
            yield run_shard(shard, self.out, self.settings, companions=companions, ledger_path=Path(ledger_path))


def _run(src, out, settings=None, **kw):
    settings = settings or Settings()
    runner = Shards(out, settings)
    summary = reconstruct([src], out, settings, runner=runner, **kw)
    return summary, (runner.given[0] if runner.given else [])


def _files(out, run_id):
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        return {f.source_key: (str(f.status), f.sha256) for f in ledger.inputs.of_run(run_id)}
    finally:
        ledger.close()


def test_an_unchanged_rerun_plans_no_shard_and_records_every_input(archive, tmp_path):
    out = tmp_path / "out"
    first, given = _run(archive, out)
    assert len(given) == 4
    again, given = _run(archive, out)
    assert given == [] and again.shards == 0
    rows = _files(out, again.run_id)
    assert {k: s for k, (s, _) in rows.items()} == dict.fromkeys(_files(out, first.run_id), "skipped")
    assert {k: sha for k, (_, sha) in rows.items()} == {k: sha for k, (_, sha) in _files(out, first.run_id).items()}


def test_only_the_changed_input_goes_to_a_shard(archive, tmp_path):
    out = tmp_path / "out"
    _run(archive, out)
    (archive / "t2.txt").write_text(TRANSCRIPT.format("changed"))
    (archive / "t3.txt").write_text(TRANSCRIPT.format(3).replace("hello", "hallo"))  # the same size
    again, given = _run(archive, out)
    assert given == ["in/t2.txt", "in/t3.txt"]
    assert again.counts.files_skipped == 2 and again.counts.sessions_ok == 2


def test_a_changed_configuration_or_pipeline_version_reprocesses_everything(archive, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _run(archive, out)
    changed, given = _run(archive, out, Settings(source_tz="Europe/Stockholm"))
    assert len(given) == 4 and changed.counts.files_skipped == 0
    monkeypatch.setattr(settings_module, "PIPELINE_VERSION", "99.0.0")
    bumped, given = _run(archive, out, Settings(source_tz="Europe/Stockholm"))
    assert len(given) == 4 and bumped.counts.files_skipped == 0


def test_a_document_removed_by_hand_stays_removed(archive, tmp_path):
    """As before: a document removed from the output is no longer current (docs/auditing.md), its
    unchanged input skipped, not processed again."""
    out = tmp_path / "out"
    _run(archive, out)
    docs = sorted((out / "sessions").rglob("*.json"))
    docs[1].unlink()
    again, given = _run(archive, out)
    assert given == [] and again.counts.files_skipped == 4 and not docs[1].exists()


def test_first_run_reads_nothing_to_prove(archive, tmp_path, monkeypatch):
    read = []
    monkeypatch.setattr(unchanged, "input_sha256", lambda data: read.append(data) or "x")
    out = tmp_path / "out"
    summary, given = _run(archive, out)
    assert read == [] and len(given) == 4 and summary.counts.sessions_ok == 4


def test_a_conversation_of_several_files_is_skipped_whole(tmp_path):
    src = tmp_path / "in"
    shutil.copytree(ROOT / "sample_logs" / "slack-export", src / "acme-export")
    out = tmp_path / "out"
    first, given = _run(src, out)
    assert given
    assert any(ref.parts for ref in ingest.discover([src], Settings()))
    again, given = _run(src, out)
    assert given == [] and again.counts.files_skipped + again.counts.files_companion == first.counts.files


def test_an_unchanged_rerun_of_the_flow_starts_no_shard_task(prefect_harness, archive, tmp_path, monkeypatch):
    out = tmp_path / "out"
    run_archive([archive], out, Settings())
    dispatched = []
    real = pipeline.pool.dispatch
    monkeypatch.setattr(pipeline.pool, "dispatch",
                        lambda refs, *a, **kw: dispatched.append(refs) or real(refs, *a, **kw))
    again = run_archive([archive], out, Settings())
    assert dispatched == [] and again.shards == 0 and again.counts.files_skipped == 4
    changed = run_archive([archive], out, Settings(source_tz="Europe/Stockholm"))
    shard_refs = [r for refs in dispatched for r in refs if isinstance(r, ingest.InputRef)]  # not merge keys
    assert len(shard_refs) == 4 and changed.counts.sessions_ok == 4


def test_preload_loads_the_registry_and_prefects_parameter_encoder_in_a_fresh_process():
    import subprocess
    import sys

    code = ("import sys; from parsers import registry; from flows.pipeline import preload; "
            "before = (registry._LOADED, 'fastapi.encoders' in sys.modules); preload(); "
            "print(before, (registry._LOADED, 'fastapi.encoders' in sys.modules))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert shown.stdout.split() == ["(False,", "False)", "(True,", "True)"]


def test_known_inputs_are_each_keys_latest_row(archive, tmp_path):
    from models.status import FileStatus

    out = tmp_path / "out"
    _run(archive, out)
    (archive / "t1.txt").unlink()
    _run(archive, out)
    _run(archive, out)
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        known = ledger.inputs.known()
    finally:
        ledger.close()
    assert {k: s for k, (s, _) in known.items()} == {
        "in/t0.txt": FileStatus.SKIPPED, "in/t1.txt": FileStatus.MISSING,
        "in/t2.txt": FileStatus.SKIPPED, "in/t3.txt": FileStatus.SKIPPED}


def test_a_companion_above_many_folders_is_read_once(tmp_path, monkeypatch):
    from flows.core import shard

    src = tmp_path / "export"
    for name in ("a", "b", "c"):
        (src / name).mkdir(parents=True)
        (src / name / "messages.json").write_text("[]")
    (src / "users.json").write_text('[{"id": "U1", "name": "ann"}]')
    refs = ingest.discover([src], Settings())
    companions = {r.key: r for r in refs if r.companion}
    assert len(companions) == 1
    reads = []
    real = ingest.read
    monkeypatch.setattr(shard.ingest, "read", lambda ref, *a: reads.append(ref.key) or real(ref, *a))
    inputs = shard.ShardInputs(companions)
    found = [inputs.context(r) for r in refs if not r.companion]
    assert len(found) == 3 and all(texts == {"users.json": '[{"id": "U1", "name": "ann"}]'} for texts, _ in found)
    assert reads == list(companions)


def _never(*args, **kwargs):
    raise AssertionError("an unchanged input was decoded to prove it unchanged")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_unchanged_rerun_decodes_no_input(tmp_path, monkeypatch, stream):
    """Size and raw sha256 as the latest row recorded them prove an input, a zip member and every file
    of a conversation unchanged without decoding or canonicalizing one (streamed: from the stream size on)."""
    import zipfile

    from flows.core import shard

    src = tmp_path / "in"
    shutil.copytree(ROOT / "sample_logs" / "slack-export", src / "acme-export")
    for i in range(3):
        (src / f"t{i}.txt").write_text(TRANSCRIPT.format(i) * 40)
    with zipfile.ZipFile(src / "chats.zip", "w") as zf:
        zf.writestr("z.txt", TRANSCRIPT.format("zipped") * 40)
    settings = Settings(stream_text_bytes=512) if stream else Settings()
    out = tmp_path / "out"
    streamed = []
    real = shard.sha256_stream
    monkeypatch.setattr(shard, "sha256_stream", lambda chunks: streamed.append(1) or real(chunks))
    first, given = _run(src, out, settings)
    assert any(key.startswith("in/chats.zip") for key in given) and len(streamed) == (4 if stream else 0)
    monkeypatch.setattr(unchanged, "input_sha256", _never)
    monkeypatch.setattr(shard, "sha256_stream", _never)
    again, given = _run(src, out, settings)
    assert given == [] and again.counts.files_skipped + again.counts.files_companion == first.counts.files
    rows = _files(out, again.run_id)
    assert {k: sha for k, (_, sha) in rows.items()} == {k: sha for k, (_, sha) in _files(out, first.run_id).items()}


def test_a_changed_input_of_the_same_size_is_still_found(archive, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _run(archive, out)
    (archive / "t3.txt").write_text(TRANSCRIPT.format(3).replace("hello", "hallo"))  # the same size
    decoded = []
    real = unchanged.input_sha256
    monkeypatch.setattr(unchanged, "input_sha256", lambda data: decoded.append(data) or real(data))
    _, given = _run(archive, out)
    assert given == ["in/t3.txt"] and len(decoded) == 1  # its raw bytes differ: decoded, the old way


def _to_schema_6(ledger_path) -> None:
    """The ledger as schema 6 had it: no raw hashes."""
    import sqlite3

    db = sqlite3.connect(ledger_path)
    try:
        db.executescript("ALTER TABLE files DROP COLUMN raw_sha256;\n"
                         "UPDATE meta SET value = '6' WHERE key = 'schema_version';")
    finally:
        db.close()


def test_a_ledger_of_schema_6_is_upgraded_and_proves_by_decoding(archive, tmp_path, monkeypatch):
    """Rows without a raw hash are proven as before, by decoding; their skipped rows then hold it, and
    the next rerun decodes nothing."""
    out = tmp_path / "out"
    _run(archive, out)
    _to_schema_6(out / "ledger.sqlite")
    decoded = []
    real = unchanged.input_sha256
    monkeypatch.setattr(unchanged, "input_sha256", lambda data: decoded.append(data) or real(data))
    again, given = _run(archive, out)
    assert given == [] and again.counts.files_skipped == 4 and len(decoded) == 4
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        assert ledger.meta.get("schema_version") == "7"
        assert all(f.raw_sha256 for f in ledger.inputs.of_run(again.run_id))
    finally:
        ledger.close()
    decoded.clear()
    third, given = _run(archive, out)
    assert given == [] and third.counts.files_skipped == 4 and decoded == []
