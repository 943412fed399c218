"""Inputs by URL (fsspec): an archive under ``memory://`` gives the documents and ledger records a local
copy of it gives, under the same rules (ignored names, zips, sizes, sha256), with the URL recorded."""

from __future__ import annotations

import gzip
import io
import sqlite3
import zipfile

import pytest

from flows.core import ingest
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import ROOT

fsspec = pytest.importorskip("fsspec")

CHATS = {
    "a/chat-1.txt": b"Session: s1\nUser: question 1\nAssistant: answer 1\n",
    "a/chat-2.txt": b"Session: s2\nUser: question 2\nAssistant: answer 2\n",
    "b/deep/chat-3.txt": b"Session: s3\nUser: question 3\nAssistant: answer 3\n",
    "a/.DS_Store": b"\x00junk",
    "a/photo.jpg": b"\xff\xd8\xff",
    "broken.txt": b"\x00\x01\x02\x03" * 200,
    "huge.txt": b"User: hi\nAssistant: " + b"x" * 5000 + b"\n",
}


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("export/chat-4.txt", "Session: s4\nUser: question 4\nAssistant: answer 4\n")
        zf.writestr("../evil.txt", "User: x\nAssistant: y\n")
    return buf.getvalue()


def _tgz() -> bytes:
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"Session: s5\nUser: question 5\nAssistant: answer 5\n"
        info = tarfile.TarInfo("takeout/chat-5.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def archive(tmp_path):
    """The same archive on a local disk and in fsspec's in-memory file system."""
    local = tmp_path / "archive"
    fs = fsspec.filesystem("memory")
    slack = ROOT / "sample_logs" / "slack-export"  # a conversation over several files, with companions
    files = {**CHATS, "export.zip": _zip(), "takeout.tgz": _tgz(),
             "chat-6.txt.gz": gzip.compress(b"Session: s6\nUser: question 6\nAssistant: answer 6\n", mtime=0),
             **{f"slack/{p.relative_to(slack)}": p.read_bytes() for p in slack.rglob("*") if p.is_file()}}
    for rel, data in files.items():
        (local / rel).parent.mkdir(parents=True, exist_ok=True)
        (local / rel).write_bytes(data)
        fs.pipe(f"/bucket/archive/{rel}", data)
    yield local, "memory://bucket/archive"
    fs.rm("/bucket", recursive=True)


def _docs(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "sessions").rglob("*.json"))}


def _files(out):
    with sqlite3.connect(out / "ledger.sqlite") as db:
        return {key: rest for key, *rest in db.execute(
            "SELECT source_key, source_path, sha256, size, status, reasons FROM files ORDER BY source_key")}


def test_a_memory_url_archive_gives_the_local_documents_and_records(archive, tmp_path):
    local, url = archive
    settings = Settings(max_file_bytes=4096, shard_files=2)
    by_url = reconstruct([url], tmp_path / "url-out", settings)
    by_path = reconstruct([local], tmp_path / "local-out", settings)
    assert by_url.counts == by_path.counts
    assert by_url.counts.sessions_ok >= 5
    assert _docs(tmp_path / "url-out") == _docs(tmp_path / "local-out")
    url_rows, local_rows = _files(tmp_path / "url-out"), _files(tmp_path / "local-out")
    assert url_rows.keys() == local_rows.keys()
    for key, (_path, sha, size, status, reasons) in url_rows.items():
        assert (sha, size, status, reasons) == tuple(local_rows[key][1:]), key  # same rules, same bytes
    by_source = {path: (status, reasons) for path, _, _, status, reasons in url_rows.values()}
    assert all(path.startswith(("memory://bucket/archive/", "zip://", "tar://", "gzip://")) for path in by_source)
    assert by_source["memory://bucket/archive/slack/general/2024-04-01.json"][0] == "ok"
    base = "memory://bucket/archive"
    assert by_source[f"{base}/a/chat-1.txt"] == ("ok", "")
    assert by_source[f"{base}/a/.DS_Store"][0] == by_source[f"{base}/a/photo.jpg"][0] == "ignored"
    assert by_source[f"{base}/huge.txt"] == ("quarantined", "too_large")
    assert by_source[f"zip://export/chat-4.txt::{base}/export.zip"] == ("ok", "")
    assert by_source[f"zip://../evil.txt::{base}/export.zip"] == ("quarantined", "zip_unsafe")
    assert by_source[f"tar://takeout/chat-5.txt::{base}/takeout.tgz"] == ("ok", "")  # a tar at a URL
    assert by_source[f"gzip://chat-6.txt::{base}/chat-6.txt.gz"] == ("ok", "")


def test_a_missing_url_root_is_recorded_unreadable(tmp_path):
    summary = reconstruct(["memory://nowhere/at-all"], tmp_path / "out", Settings())
    assert summary.counts.files_quarantined == 1
    [(path, _, _, status, reasons)] = _files(tmp_path / "out").values()
    assert path == "memory://nowhere/at-all" and status == "quarantined" and "unreadable" in reasons


def test_a_url_root_is_named_as_a_local_folder_of_the_same_path_would_be(tmp_path):
    assert ingest.root_names(["s3://bucket/x/sample_logs", tmp_path / "sample_logs"]) == [
        ["x", "sample_logs"], [tmp_path.name, "sample_logs"]]
    assert ingest.root_names(["gcs://bucket/sample_logs"]) == [["sample_logs"]]
    assert ingest.as_root("s3://bucket/a/") == "s3://bucket/a"
    assert ingest.as_root("rel/dir") == ingest.Path.cwd() / "rel/dir"
