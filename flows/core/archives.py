"""Archives read in place: zip, tar (plain, gzip, bzip2, xz) and single-file gzip.

Their entries are listed under the zip limits (entry count, total size, compression ratio), and one
entry's bytes are read with every decompression failure (a damaged deflate stream, a bad CRC, an
unknown compression method, a truncated gzip) turned into an IngestError with its own reason: one
damaged entry is quarantined, never the run. Which entries are refused by name (absolute, ``../``,
nested archives) is decided by the caller (flows/core/ingest.py) for every kind alike.
"""

from __future__ import annotations

import gzip
import io
import lzma
import os
import re
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from models.errors import IngestError, Reason
from models.settings import Settings


class ArchiveKind(StrEnum):
    ZIP = "zip"
    TAR = "tar"
    GZIP = "gzip"


TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
NESTED_SUFFIXES = (".zip", *TAR_SUFFIXES, ".gz")
"""Names of entries that are archives themselves: never opened (one level of archive only)."""

CORRUPT = (zlib.error, EOFError, zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile, lzma.LZMAError)
"""What a damaged compressed stream raises (bz2 raises a bare OSError: see ``_is_corrupt``)."""


def kind_of(name: str) -> ArchiveKind | None:
    """The archive kind a file name says, or None for a file that is not an archive."""
    lower = name.lower()
    if lower.endswith(".zip"):
        return ArchiveKind.ZIP
    if lower.endswith(TAR_SUFFIXES):
        return ArchiveKind.TAR
    if lower.endswith(".gz"):
        return ArchiveKind.GZIP
    return None


def unsafe_reason(kind: ArchiveKind) -> Reason:
    """The reason code of a refused archive or entry (zips keep theirs)."""
    return Reason.ZIP_UNSAFE if kind is ArchiveKind.ZIP else Reason.ARCHIVE_UNSAFE


@dataclass(frozen=True, slots=True)
class Entry:
    """One file stored in an archive."""

    name: str  # the member name as stored
    size: int  # its size unpacked, as the archive declares it
    refusal: str | None = None  # why this entry is not read whatever its name (encrypted, a link, a device)


@dataclass(frozen=True, slots=True)
class Listing:
    """An archive's entries, and why the listing stopped early when the archive breaks part way."""

    entries: list[Entry]
    broken: str | None = None


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")


def is_url(path: str | Path) -> bool:
    """A root or archive given by URL (``s3://...``), read through fsspec, not a local path (a
    one-letter scheme would be a Windows drive)."""
    return isinstance(path, str) and _SCHEME.match(path) is not None


def open_source(path: str | Path):
    """The archive's own bytes as a binary file object, on disk or at a URL (fsspec)."""
    if is_url(path):
        import fsspec

        return fsspec.open(path, "rb").open()
    return open(path, "rb")


def _size(path: str | Path) -> int:
    if is_url(path):
        import fsspec

        fs, inner = fsspec.core.url_to_fs(path)
        return int(fs.size(inner) or 0)
    return os.stat(path).st_size


def _leaf(path: str | Path) -> str:
    return str(path).rstrip("/").rpartition("/")[2]


def entries(path: str | Path, kind: ArchiveKind, settings: Settings) -> Listing:
    """The archive's file entries, or IngestError when the archive as a whole is refused."""
    packed = max(1, _size(path))
    lister = {ArchiveKind.ZIP: _zip_entries, ArchiveKind.TAR: _tar_entries, ArchiveKind.GZIP: _gzip_entries}[kind]
    return lister(path, packed, settings)


def _limits(kind: ArchiveKind, count: int, total: int, packed: int, settings: Settings) -> None:
    """Refuse an archive past the entry count, total size or compression ratio limits."""
    if count > settings.zip_max_entries:
        raise IngestError(unsafe_reason(kind), f"{count} entries, more than the limit {settings.zip_max_entries}")
    if total > settings.zip_max_total_bytes or total / packed > settings.zip_max_ratio:
        raise IngestError(unsafe_reason(kind), f"zip bomb guard: {total} bytes unpacked from {packed} "
                                               f"(limits {settings.zip_max_total_bytes} bytes, "
                                               f"ratio {settings.zip_max_ratio})")


def _zip_entries(path: Path, packed: int, settings: Settings) -> Listing:
    try:
        zf = _open_archive(path, ArchiveKind.ZIP)
    except (zipfile.BadZipFile, OSError, *CORRUPT) as exc:
        raise IngestError(Reason.ZIP_UNSAFE, f"not a readable zip: {exc}") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
    _limits(ArchiveKind.ZIP, len(infos), sum(i.file_size for i in infos),
            max(1, sum(i.compress_size for i in infos)), settings)
    return Listing([Entry(i.filename, i.file_size, f"entry {i.filename!r} is encrypted" if i.flag_bits & 0x1
                          else None) for i in infos])


def _tar_entries(path: Path, packed: int, settings: Settings) -> Listing:
    """A tar's entries, header by header: the limits are checked as the headers come, so a bomb is
    refused before it is unpacked; a stream that breaks part way keeps the entries before the break."""
    found: list[Entry] = []
    total = 0
    try:
        with _open_archive(path, ArchiveKind.TAR) as tf:
            while (info := tf.next()) is not None:
                if info.isdir():
                    continue
                total += info.size if info.isfile() else 0
                found.append(Entry(info.name, info.size if info.isfile() else 0, _tar_refusal(info)))
                _limits(ArchiveKind.TAR, len(found), total, packed, settings)
    except IngestError:
        raise
    except (*CORRUPT, OSError) as exc:
        if not found:
            raise IngestError(Reason.ARCHIVE_CORRUPT, f"not a readable tar: {type(exc).__name__}: {exc}") from None
        return Listing(found, f"the archive breaks after {len(found)} entries ({type(exc).__name__}: {exc}): "
                              "the entries after the break cannot be reached")
    return Listing(found)


def _tar_refusal(info: tarfile.TarInfo) -> str | None:
    if info.issym() or info.islnk():
        return f"entry {info.name!r} is a link (to {info.linkname!r}): links inside an archive are not followed"
    if not info.isfile():
        return f"entry {info.name!r} is a device, FIFO or other special file, not a regular file"
    return None


def _gzip_entries(path: Path, packed: int, settings: Settings) -> Listing:
    """The one file a ``.gz`` holds, named as the archive without ``.gz``; its size is the gzip
    trailer's (the read refuses more bytes than that, so a lying trailer cannot pass the limits)."""
    try:
        with open_source(path) as fh:
            magic = fh.read(2)
            fh.seek(-4, os.SEEK_END)
            size = struct.unpack("<I", fh.read(4))[0]
    except OSError as exc:
        raise IngestError(Reason.ARCHIVE_CORRUPT, f"not a readable gzip file: {exc}") from None
    if magic != b"\x1f\x8b":
        raise IngestError(Reason.ARCHIVE_CORRUPT, "not a gzip file (no gzip magic bytes)")
    _limits(ArchiveKind.GZIP, 1, size, packed, settings)
    return Listing([Entry(_leaf(path)[: -len(".gz")] or "unnamed", size)])


class ArchiveCache:
    """Zips and tars opened once and kept open for a shard's reads (closed with ``close``)."""

    def __init__(self) -> None:
        self._open: dict[str, zipfile.ZipFile | tarfile.TarFile] = {}

    def get(self, path: str, kind: ArchiveKind) -> zipfile.ZipFile | tarfile.TarFile | None:
        """The open archive (None for a single-file gzip, which has nothing to keep open)."""
        if kind is ArchiveKind.GZIP:
            return None
        handle = self._open.get(path)
        if handle is None:
            handle = self._open[path] = _open_archive(path, kind)
        return handle

    def close(self) -> None:
        for handle in self._open.values():
            handle.close()
        self._open.clear()


def _open_archive(path: str | Path, kind: ArchiveKind) -> zipfile.ZipFile | tarfile.TarFile:
    """An archive opened for the caller to keep (the cache, or the entry stream that owns it, closes it);
    its source file (a URL's file object too) is closed with it."""
    source = open_source(path)
    try:
        handle = zipfile.ZipFile(source) if kind is ArchiveKind.ZIP else tarfile.open(fileobj=source, mode="r:*")  # noqa: SIM115 (kept open by the caller)
    except BaseException:
        source.close()
        raise
    close = handle.close

    def close_both() -> None:
        try:
            close()
        finally:
            source.close()

    handle.close = close_both
    return handle


def read_member(path: str, kind: ArchiveKind, member: str, size: int, cache: ArchiveCache | None = None) -> bytes:
    """The bytes of one entry; IngestError with its reason when the entry cannot be decompressed or
    holds more bytes than its header says."""
    with open_member(path, kind, member, size, cache) as fh:
        return fh.read()


def open_member(path: str, kind: ArchiveKind, member: str, size: int, cache: ArchiveCache | None = None):
    """A binary file object over one entry: decompression failures raise IngestError, and more
    bytes than ``size`` (the header's) are refused."""
    own = None
    try:
        handle = cache.get(path, kind) if cache is not None else None
        if handle is None and kind is not ArchiveKind.GZIP:
            handle = own = _open_archive(path, kind)
        inner = _open_inner(handle, path, kind, member)
    except BaseException as exc:
        if own is not None:
            own.close()
        raise translate(exc, member) from None
    buffer = max(io.DEFAULT_BUFFER_SIZE, min(1 << 20, size + 1))  # small entries get small buffers
    return io.BufferedReader(_Guarded(inner, member, size, unsafe_reason(kind), own), buffer_size=buffer)


def _open_inner(handle, path: str, kind: ArchiveKind, member: str):
    if kind is ArchiveKind.ZIP:
        return handle.open(member)
    if kind is ArchiveKind.TAR:
        fh = handle.extractfile(handle.getmember(member))
        if fh is None:
            raise IngestError(Reason.ARCHIVE_UNSAFE, f"entry {member!r} is not a regular file")
        return fh
    gz = gzip.GzipFile(fileobj=open_source(path), mode="rb")
    gz.myfileobj = gz.fileobj  # closed with the GzipFile, as when gzip opens the file itself
    return gz


def _is_corrupt(exc: BaseException) -> bool:
    # bz2 (and gzip's header checks) raise OSError without an errno: the data, not the disk
    return isinstance(exc, CORRUPT) or (isinstance(exc, OSError) and exc.errno is None)


def translate(exc: BaseException, member: str) -> BaseException:
    """The IngestError an archive read failure stands for; other errors (the disk's) unchanged."""
    if isinstance(exc, IngestError):
        return exc
    if isinstance(exc, NotImplementedError):
        return IngestError(Reason.ARCHIVE_UNSUPPORTED, f"entry {member!r}: {exc}")
    if isinstance(exc, RuntimeError):  # zipfile: an encrypted entry that needs a password
        return IngestError(Reason.ZIP_UNSAFE, f"entry {member!r}: {exc}")
    if isinstance(exc, KeyError):
        return IngestError(Reason.ARCHIVE_CORRUPT, f"entry {member!r} is no longer in the archive")
    if _is_corrupt(exc):
        return IngestError(Reason.ARCHIVE_CORRUPT,
                           f"entry {member!r} cannot be decompressed: {type(exc).__name__}: {exc}")
    return exc


class _Guarded(io.RawIOBase):
    """An entry's stream that turns decompression failures into IngestError and refuses more
    bytes than the entry's header declares (a lying header is a bomb's trick)."""

    def __init__(self, inner, member: str, size: int, unsafe: Reason, owner=None) -> None:
        self._inner, self._member, self._size, self._unsafe, self._owner = inner, member, size, unsafe, owner
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._call(self._inner.seekable)

    def readinto(self, buffer) -> int:
        data = self._call(self._inner.read, len(buffer))
        n = len(data)
        if self._pos + n > self._size:
            raise IngestError(self._unsafe, f"entry {self._member!r} is larger than its header says "
                                            f"({self._size} bytes)")
        buffer[:n] = data
        self._pos += n
        return n

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = self._call(self._inner.seek, offset, whence)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
            finally:
                if self._owner is not None:
                    self._owner.close()
        super().close()

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except BaseException as exc:
            raise translate(exc, self._member) from None
