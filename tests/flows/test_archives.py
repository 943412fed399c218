"""Archives read in place: every decompression failure of one entry is that entry's reason, never
an exception that escapes (flows/core/archives.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from flows.core import archives, ingest
from models.errors import IngestError, Reason
from models.settings import Settings
from tests.hardening.inputs import entry_offset, patch

TEXT = b"Session: s-1\nUser: hello there, how are you today?\nAssistant: fine, thank you\n" * 20


def _zip(path: Path, method: int) -> Path:
    with zipfile.ZipFile(path, "w", method) as zf:
        zf.writestr("damaged.txt", TEXT)
        zf.writestr("fine.txt", TEXT)
    return path


def _deflate_block(path):  # a reserved block type: zlib.error
    patch(path, entry_offset(path, "damaged.txt"), b"\x07")


def _middle(path):  # bytes in the middle of the compressed stream flipped: bz2's OSError, lzma's LZMAError
    at = entry_offset(path, "damaged.txt") + 12
    patch(path, at, bytes(b ^ 0xFF for b in path.read_bytes()[at:at + 8]))


def _stored(path):  # a stored entry whose bytes changed: a bad CRC (BadZipFile)
    patch(path, entry_offset(path, "damaged.txt") + 3, b"X")


def _unknown_method(path):  # compression method 99 in both headers: NotImplementedError
    with zipfile.ZipFile(path) as zf:
        header = zf.getinfo("damaged.txt").header_offset
    raw = path.read_bytes()
    patch(path, header + 8, (99).to_bytes(2, "little"))
    central = raw.find(b"PK\x01\x02")
    patch(path, central + 10, (99).to_bytes(2, "little"))


CASES = {
    "deflate": (zipfile.ZIP_DEFLATED, _deflate_block, Reason.ARCHIVE_CORRUPT),
    "bzip2": (zipfile.ZIP_BZIP2, _middle, Reason.ARCHIVE_CORRUPT),
    "lzma": (zipfile.ZIP_LZMA, _middle, Reason.ARCHIVE_CORRUPT),
    "crc": (zipfile.ZIP_STORED, _stored, Reason.ARCHIVE_CORRUPT),
    "method": (zipfile.ZIP_DEFLATED, _unknown_method, Reason.ARCHIVE_UNSUPPORTED),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_damaged_entry_is_its_own_reason_and_the_next_entry_reads(case, tmp_path):
    method, damage, reason = CASES[case]
    path = _zip(tmp_path / f"{case}.zip", method)
    damage(path)
    refs = {Path(r.key).name: r for r in ingest.discover([path], Settings())}
    cache = archives.ArchiveCache()
    try:
        with pytest.raises(IngestError) as caught:
            ingest.read(refs["damaged.txt"], cache)
        assert caught.value.reason is reason and not caught.value.transient
        assert "damaged.txt" in caught.value.detail
        assert ingest.read(refs["fine.txt"], cache) == TEXT
        with pytest.raises(IngestError) as streamed, ingest.open_binary(refs["damaged.txt"], cache) as fh:
            fh.read()
        assert streamed.value.reason is reason
    finally:
        cache.close()


@pytest.mark.parametrize("exc", [EOFError("Compressed file ended before the end-of-stream marker was reached"),
                                 OSError("Invalid data stream")])
def test_truncated_streams_and_bare_decompressor_errors_are_corrupt_data(exc):
    assert archives.translate(exc, "a.txt").reason is Reason.ARCHIVE_CORRUPT


def test_a_disk_error_is_not_mistaken_for_corrupt_data():
    exc = OSError(5, "Input/output error")
    assert archives.translate(exc, "a.txt") is exc
