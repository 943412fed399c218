"""The write path of a shard: batched durable writes, revisions kept by hard link (or a copy)."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from audit import files, revisions
from audit.files import Batch
from audit.ledger import Ledger
from audit.trail import ShardTrail
from flows.cli.app import app
from flows.core import emit
from flows.pipeline import reconstruct
from models.settings import Settings as RunSettings

SID = "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"  # a global session id (a UUID): every rerun of the file is the same key
DOC = f"sessions/transcript/{SID}/{SID}.json"
TWO = f"Session: {SID}\nUser: hi\nAssistant: hello\n"
FOUR = TWO + "User: how are you\nAssistant: fine thanks\n"


def _run(tmp_path: Path, text: str, name: str = "chat.txt") -> Path:
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    (src / name).write_text(text)
    reconstruct([src], tmp_path / "out", RunSettings(workers=1))
    return tmp_path / "out"


def _blobs(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in revisions.blobs(out).iterdir() if not p.name.startswith(".")}


def _latest(out: Path, rel: str) -> str:
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        return ledger.revisions.latest()[rel]
    finally:
        ledger.close()


def test_a_revision_is_a_hard_link_to_the_document_written(tmp_path):
    out = _run(tmp_path, TWO)
    doc = out / DOC
    blob = revisions.blob_path(out, _latest(out, DOC))
    assert os.path.samefile(doc, blob) and doc.stat().st_nlink == 2
    assert hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name
    # read-only: the document is its latest revision, so it is replaced, never edited in place
    assert stat.S_IMODE(doc.stat().st_mode) == 0o444


def test_where_links_are_not_possible_the_revision_is_a_copy(tmp_path, monkeypatch):
    def no_links(src, dst, *a, **k):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(revisions.os, "link", no_links)
    out = _run(tmp_path, TWO)
    _run(tmp_path, FOUR)
    blob = revisions.blob_path(out, _latest(out, DOC))
    assert not os.path.samefile(out / DOC, blob)
    assert blob.read_bytes() == (out / DOC).read_bytes()
    # v0, the later export's snapshot (a blob until merged) and the merged document
    assert len(_blobs(out)) == 3 and not list(revisions.blobs(out).glob(".*"))
    assert CliRunner().invoke(app, ["verify", "--out", str(out)]).exit_code == 0


def test_a_rerun_a_revert_and_an_apply_diff_never_alter_a_stored_revision(tmp_path):
    out = _run(tmp_path, TWO)
    _run(tmp_path, FOUR)
    before = _blobs(out)
    runner = CliRunner()
    confirm = f"CONFIRM REVERT {DOC} v0"
    revert = runner.invoke(app, ["revert", DOC, "--to", "v0", "--out", str(out), "--confirm", confirm])
    assert revert.exit_code == 0, revert.output
    _run(tmp_path, FOUR + "User: and now?\nAssistant: still fine\n")
    after = _blobs(out)
    assert {k: after[k] for k in before} == before
    assert all(hashlib.sha256(v).hexdigest() == k for k, v in after.items())
    assert runner.invoke(app, ["verify", "--out", str(out)]).exit_code == 0


def test_an_unchanged_rewrite_keeps_the_file_and_restores_a_lost_blob(tmp_path):
    out = _run(tmp_path, TWO)
    inode = (out / DOC).stat().st_ino
    blob = revisions.blob_path(out, _latest(out, DOC))
    blob.unlink()
    reconstruct([tmp_path / "in"], out, RunSettings(workers=1), force=True)
    assert (out / DOC).stat().st_ino == inode
    assert os.path.samefile(out / DOC, blob)


def _fsyncs(monkeypatch) -> list[str]:
    """Record every fsync of the write primitives as 'dir' or 'file'."""
    calls: list[str] = []
    real = os.fsync

    def recording(fd):
        calls.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        return real(fd)

    monkeypatch.setattr(files.os, "fsync", recording)
    return calls


def test_a_batch_fsyncs_every_file_and_each_folder_once(tmp_path, monkeypatch):
    calls = _fsyncs(monkeypatch)
    batch = Batch()
    for i in range(5):
        batch.stage(tmp_path / "a" / f"{i}.json", b"x" * i)
    batch.stage(tmp_path / "b" / "0.json", b"y")
    batch.stage(tmp_path / "b" / "1.json", b"z")
    batch.commit()
    assert calls.count("file") == 7 and calls.count("dir") == 2
    assert (tmp_path / "a" / "4.json").read_bytes() == b"xxxx"



def _large_batch(root: Path) -> Batch:
    batch = Batch()
    for i in range(files.SYNCFS_FILES):
        batch.stage(root / f"f{i % 3}" / f"{i}.json", b"x" * i)
    return batch


def test_a_large_batch_flushes_its_file_system_once_before_and_once_after_the_renames(tmp_path, monkeypatch):
    if files._syncfs() is None:
        pytest.skip("no syncfs here: every batch fsyncs file by file")
    calls = _fsyncs(monkeypatch)
    flushed: list[bool] = []  # whether the renames had happened at each flush
    real = files.syncfs

    def recording(paths):
        flushed.append((tmp_path / "f0" / "0.json").exists())
        return real(paths)

    monkeypatch.setattr(files, "syncfs", recording)
    _large_batch(tmp_path).commit()
    assert calls == [] and flushed == [False, True]
    assert (tmp_path / "f1" / "4.json").read_bytes() == b"xxxx"


def test_without_syncfs_a_large_batch_fsyncs_every_file_and_folder(tmp_path, monkeypatch):
    calls = _fsyncs(monkeypatch)
    monkeypatch.setattr(files, "_syncfs", lambda: None)
    _large_batch(tmp_path).commit()
    assert calls.count("file") == files.SYNCFS_FILES and calls.count("dir") == 3


def test_a_failed_flush_is_an_os_error_with_its_errno(tmp_path, monkeypatch):
    import ctypes

    monkeypatch.setattr(files, "_syncfs", lambda: lambda fd: (ctypes.set_errno(errno.ENOSPC), -1)[1])
    batch = _large_batch(tmp_path)
    with pytest.raises(OSError) as raised:
        batch.sync()
    assert raised.value.errno == errno.ENOSPC
    batch.abandon()
    assert not list(tmp_path.rglob("*.json")) and not list(tmp_path.rglob(".*.tmp"))

def test_a_crash_before_the_renames_leaves_only_temporaries(tmp_path):
    (tmp_path / "sessions" / "k").mkdir(parents=True)
    old = tmp_path / "sessions" / "k" / "old.json"
    old.write_bytes(b"old")
    batch = Batch()
    batch.stage(old, b"new")
    batch.stage(tmp_path / "sessions" / "k" / "new.json", b"new")
    batch.sync()  # killed here: synced, never renamed
    assert old.read_bytes() == b"old" and not (tmp_path / "sessions" / "k" / "new.json").exists()
    assert emit.clean_temporaries(tmp_path) == 2
    assert sorted(p.name for p in (tmp_path / "sessions" / "k").iterdir()) == ["old.json"]


def test_a_file_given_as_a_finished_temporary_is_renamed_into_place(tmp_path):
    target = tmp_path / "d" / "doc.json"
    target.parent.mkdir()
    spooled = files.temporary_for(target)
    spooled.write_bytes(b"spooled")
    batch = Batch()
    assert batch.stage(target, spooled, mode=0o444) == spooled
    batch.commit()
    assert target.read_bytes() == b"spooled" and not spooled.exists()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a/x", "a/y", "b/x", "c/d/z"]), st.binary(max_size=40)), max_size=12))
def test_a_committed_batch_holds_the_last_bytes_staged_for_each_file_and_nothing_else(writes):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        batch = Batch()
        for name, data in writes:
            batch.stage(root / name, data)
        batch.commit()
        expected = {name: data for name, data in writes}
        on_disk = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
        assert on_disk == expected


def test_the_index_is_rewritten_only_when_it_lacks_a_revision(tmp_path, monkeypatch):
    out = _run(tmp_path, TWO)
    real, exports = revisions.write_index, []
    monkeypatch.setattr(revisions, "write_index", lambda *a: exports.append(1) or real(*a))

    def rerun() -> int:
        exports.clear()
        reconstruct([tmp_path / "in"], out, RunSettings(workers=1))
        return len(exports)

    assert rerun() == 0  # unchanged: the index holds every revision already
    ledger = Ledger(out / "ledger.sqlite")
    try:
        ledger.meta.set(revisions.INDEXED, "0")  # as if a run was killed before exporting it
    finally:
        ledger.close()
    assert rerun() == 1
    revisions.index_path(out).unlink()
    assert rerun() == 1 and DOC in revisions.index_path(out).read_text()


def test_temporaries_are_searched_for_only_after_a_run_that_did_not_complete(tmp_path, monkeypatch):
    out = _run(tmp_path, TWO)
    real, walks = emit.clean_temporaries, []
    monkeypatch.setattr(emit, "clean_temporaries", lambda root: walks.append(root) or real(root))
    reconstruct([tmp_path / "in"], out, RunSettings(workers=1))
    assert walks == []  # the last run completed: no temporaries, the output is not walked
    ledger = Ledger(out / "ledger.sqlite")
    try:
        ledger.db.execute("UPDATE runs SET status='interrupted'")
        ledger.db.commit()
    finally:
        ledger.close()
    leftover = files.temporary_for(out / DOC)
    leftover.write_bytes(b"half")
    summary = reconstruct([tmp_path / "in"], out, RunSettings(workers=1))
    assert walks == [out] and summary.temporaries_removed == 1 and not leftover.exists()


@pytest.fixture(scope="module")
def linked(tmp_path_factory) -> Path:
    """An output root with links in it: to a folder inside, to one outside, and names that are links."""
    root = tmp_path_factory.mktemp("trail-resolve")
    (root / "out" / "sessions" / "a").mkdir(parents=True)
    (root / "outside").mkdir()
    (root / "out" / "sessions" / "in").symlink_to(root / "out" / "sessions" / "a")
    (root / "out" / "sessions" / "away").symlink_to(root / "outside")
    (root / "out" / "sessions" / "a" / "away.json").symlink_to(root / "outside" / "x.json")
    (root / "out" / "sessions" / "a" / "in.json").symlink_to(root / "out" / "sessions" / "a" / "b.json")
    return root / "out"


def _resolved(resolve, rel):
    try:
        return str(resolve(rel))
    except files.PathEscape:
        return "escapes"


@settings(max_examples=300, deadline=None)
@given(paths=st.lists(st.lists(st.sampled_from(["sessions", "a", "in", "away", "..", ".", "x.json", "away.json",
                                                "in.json", "b.json"]), min_size=1, max_size=5), min_size=1, max_size=4))
def test_a_trail_resolves_each_path_as_resolve_inside_does(linked, paths):
    """Folders resolved once per shard give the paths (and the refusals) of resolving each in full."""
    trail = ShardTrail(linked)
    for parts in paths:
        rel = "/".join(parts)
        assert _resolved(trail.resolve, rel) == _resolved(lambda r: files.resolve_inside(linked, r), rel)


def _shard(tmp_path: Path, chats: int) -> tuple[list, Path]:
    from flows.core import ingest

    src = tmp_path / "in"
    src.mkdir()
    for n in range(chats):
        sid = f"9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c{n:02d}"
        (src / f"chat{n}.txt").write_text(f"Session: {sid}\nUser: hi {n}\nAssistant: hello\n")
    return ingest.discover([src], RunSettings()), tmp_path / "out"


def test_a_shard_resolves_its_output_root_once_not_once_per_document(tmp_path, monkeypatch):
    from flows.core.shard import run_shard

    refs, out = _shard(tmp_path, 8)
    real, calls = os.path.realpath, []
    monkeypatch.setattr(os.path, "realpath", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    result = run_shard(refs, out, RunSettings())
    assert result.written == 8 and len(calls) == 1


def test_a_shard_refuses_a_link_out_of_the_root_met_on_a_documents_way(tmp_path):
    """Documents are checked lexically under the root, but a link on the way is still resolved in full:
    a platform folder that points outside stops the shard with a path escape, and nothing lands outside."""
    from flows.core.shard import run_shard

    refs, out = _shard(tmp_path, 3)
    outside = tmp_path / "outside"
    outside.mkdir()
    (out / "sessions").mkdir(parents=True)
    (out / "sessions" / "transcript").symlink_to(outside)
    with pytest.raises(files.PathEscape):
        run_shard(refs, out, RunSettings())
    assert list(outside.iterdir()) == []


def test_a_trail_checks_a_folder_once_and_a_leaf_each_time(tmp_path):
    """A folder looked at once per shard; a leaf that became a link since is still refused."""
    (tmp_path / "out" / "sessions" / "a").mkdir(parents=True)
    (tmp_path / "outside.json").write_text("{}")
    trail = ShardTrail(tmp_path / "out")
    assert trail.resolve("sessions/a/x.json") == (tmp_path / "out" / "sessions" / "a" / "x.json").resolve()
    (tmp_path / "out" / "sessions" / "a" / "x.json").symlink_to(tmp_path / "outside.json")
    with pytest.raises(files.PathEscape):
        trail.resolve("sessions/a/x.json")
    with pytest.raises(files.PathEscape):
        trail.resolve("sessions/a/../../../outside.json")


def test_a_batch_removes_a_leftover_temporary_only_where_one_can_be(tmp_path, monkeypatch):
    """A folder the batch made itself is empty: no leftover temporary is looked for there. In a folder
    that was there before, a read-only temporary a killed process of the same pid left is replaced."""
    old = tmp_path / "old"
    old.mkdir()
    leftover = files.temporary_for(old / "a.json")
    leftover.write_bytes(b"half")
    leftover.chmod(0o444)
    real, unlinked = Path.unlink, []
    monkeypatch.setattr(Path, "unlink", lambda self, *a, **k: unlinked.append(self) or real(self, *a, **k))
    batch = Batch()
    batch.stage(old / "a.json", b"new")
    for n in range(5):
        batch.stage(tmp_path / "new" / f"k{n}" / "doc.json", b"{}")
    batch.commit()
    assert unlinked == [leftover]
    assert (old / "a.json").read_bytes() == b"new" and (tmp_path / "new" / "k4" / "doc.json").read_bytes() == b"{}"
