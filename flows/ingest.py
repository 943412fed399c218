"""Find the inputs of a run (files, folders, zip exports) and read their bytes safely.

Every path found ends as an InputRef, including the ones that cannot be read: those carry the
reason and are quarantined by the shard, so nothing found disappears. Folders are walked without
following symlinks (no loops); zips are opened in place with limits on entry count, total size and
compression ratio; unsafe entry names, encrypted and nested zips are refused with a reason.

A root may also be a URL (``s3://bucket/archive``, ``gcs://``, ``file://``, ``memory://``): it is listed
and read through fsspec, under the same rules (ignored names, zips and their limits, sizes), keyed as a
local folder of the same name would be, and recorded in the ledger by its URL. So workers on other
machines read an archive from object storage.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import zipfile
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from models.errors import IngestError, Reason, TransientIngestError
from models.settings import Settings
from normalizers.ids import safe_path_part
from normalizers.secrets import scrub_name
from parsers import registry

SKIP_NAMES = {".DS_Store", "Thumbs.db", "desktop.ini"}
HIDDEN_INPUTS = {".aider.chat.history.md"}
"""Hidden names that are chat logs themselves (a coding agent's history in a project folder)."""
MEDIA_SUFFIXES = {
    # attachments exported beside a chat (WhatsApp, Telegram, Slack, Discord exports)
    ".jpg", ".jpeg", ".png", ".gif", ".webp", ".heic", ".bmp", ".tif", ".tiff", ".mp4", ".mov", ".3gp", ".webm",
    ".mkv", ".avi", ".opus", ".ogg", ".oga", ".m4a", ".mp3", ".wav", ".aac", ".amr", ".pdf", ".vcf", ".tgs",
    ".docx", ".xlsx", ".pptx", ".doc", ".xls", ".ppt", ".odt", ".apk",
    # the furniture of an HTML export (Telegram Desktop's css/, js/, images/)
    ".css", ".js", ".ico", ".svg", ".woff", ".woff2", ".ttf", ".eot", ".map",
}
"""Suffixes of media and export assets: never a chat log, so recorded as ignored instead of being
read and quarantined as binary (a chat that references them checks their presence by name)."""
DATABASE_SUFFIXES = {".db", ".sqlite", ".sqlite3"}
DATABASE_COMPANIONS = ("-wal", "-shm", "-journal")
"""SQLite's write-ahead log, shared memory and rollback journal beside a database (``chat.db-wal``)."""


def ignore_rule(name: str) -> str | None:
    """Why a file or folder name is not an input (recorded as ``ignored`` with this rule), or None."""
    if name in SKIP_NAMES:
        return f"system file {name!r} (rule: {', '.join(sorted(SKIP_NAMES))})"
    if name.startswith(".") and name not in HIDDEN_INPUTS:
        return f"hidden name {name!r} (rule: names starting with '.')"
    suffix = os.path.splitext(name)[1].lower()
    for companion in DATABASE_COMPANIONS:
        if suffix.endswith(companion) and suffix[: -len(companion)] in DATABASE_SUFFIXES:
            rule = ", ".join(DATABASE_COMPANIONS)
            return (f"a database's {companion[1:]} file {name!r}, not a chat log (rule: {rule} beside a database; "
                    "the database's documents say when one lies beside it)")
    if suffix in MEDIA_SUFFIXES:
        return f"media or export asset {name!r}, not a chat log (rule: suffix {suffix})"
    return None


def part(name: str) -> str:
    """One path component as it is shown and keyed: valid text, with any secret in it redacted
    (names become output paths and ledger rows)."""
    return scrub_name(shown(name))


def shown(name: str) -> str:
    """A file name as valid text: bytes that are not UTF-8 (kept by the OS as surrogate escapes)
    become ``\\xNN``, so the name can be written to JSON and to the ledger."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


@dataclass(frozen=True, slots=True)
class InputRef:
    """One input: where its bytes are and the stable key that names it in the output and the ledger."""

    key: str  # safe relative key, "/"-separated: root name / relative path (zip members below the zip)
    name: str  # the source path as the user sees it (relative), recorded as provenance
    path: str  # file on disk (the zip itself for members)
    member: str | None = None
    size: int = 0
    problem: str | None = None  # reason code when it cannot be read
    detail: str = ""
    companion: bool = False
    siblings: tuple[str, ...] = ()  # sorted names of the other files in the same folder or zip folder
    ignored: str | None = None  # the rule that makes it no input (hidden, system file, the output root)
    parts: tuple[InputRef, ...] = ()
    """The files of one conversation over several files (a Slack channel's day files), in key order;
    the ref itself then names their folder."""
    url: str | None = None
    """Where an input found under a URL root is (a zip member as fsspec's ``zip://member::url``): the
    ledger records it instead of ``name`` (a conversation over several files records each file)."""

    @property
    def recorded(self) -> str:
        """The source path the ledger records: the URL of a URL input, else the name."""
        return scrub_name(self.url) if self.url else self.name


Root = Path | str
"""A run's root: a local path, or a URL read through fsspec."""
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")


def is_url(root: Root) -> bool:
    """True for ``scheme://...`` (a one-letter scheme would be a Windows drive)."""
    return isinstance(root, str) and _SCHEME.match(root) is not None


def as_root(root: Root) -> Root:
    """A URL as it is given (without a trailing slash), a local path made absolute (not resolved: a
    symlinked root is still seen as one), so a worker with another directory finds it."""
    if is_url(str(root)) and not isinstance(root, Path):
        return str(root).rstrip("/") if not str(root).endswith("://") else str(root)
    return Path(os.path.abspath(root))


def url_parts(url: str) -> list[str]:
    """The path components of a URL root (``s3://bucket/a/b`` -> bucket, a, b)."""
    return [p for p in url.split("://", 1)[1].split("?", 1)[0].split("/") if p]


def _key(parts: list[str]) -> str:
    return "/".join(safe_path_part(p) for p in parts)


def companion_names() -> set[str]:
    return {n for g in registry.all_grammars() for n in g.companion_names}


def _zip_members(path: Root, parts: list[str], settings: Settings, companions: set[str]) -> list[InputRef]:
    name = "/".join(parts)
    try:
        zf = open_zip(str(path))
    except (zipfile.BadZipFile, OSError) as exc:
        return [InputRef(_key(parts), name, str(path), problem=Reason.ZIP_UNSAFE.value,
                         detail=f"not a readable zip: {exc}")]
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > settings.zip_max_entries:
            return [InputRef(_key(parts), name, str(path), problem=Reason.ZIP_UNSAFE.value,
                             detail=f"{len(infos)} entries, more than the limit {settings.zip_max_entries}")]
        total = sum(i.file_size for i in infos)
        packed = max(1, sum(i.compress_size for i in infos))
        if total > settings.zip_max_total_bytes or total / packed > settings.zip_max_ratio:
            return [InputRef(_key(parts), name, str(path), problem=Reason.ZIP_UNSAFE.value,
                             detail=f"zip bomb guard: {total} bytes unpacked from {packed} "
                                    f"(limits {settings.zip_max_total_bytes} bytes, ratio {settings.zip_max_ratio})")]
        return _members(path, parts, infos, companions)


def _members(path: Root, parts: list[str], infos: list[zipfile.ZipInfo], companions: set[str]) -> list[InputRef]:
    """One ref per entry. Entries that map to one key (``a/x.txt`` and ``a\\x.txt``, or a name
    stored twice) are all quarantined ``name_collision``, each under its own key."""
    groups: dict[str, list[tuple[list[str], InputRef]]] = {}
    for info in infos:
        ref_parts, ref = _member(path, parts, info, companions)
        groups.setdefault(ref.key, []).append((ref_parts, ref))
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0][1])
            continue
        names = ", ".join(repr(ref.member) for _, ref in group)
        for n, (ref_parts, ref) in enumerate(group, 1):
            tagged = [*ref_parts[:-1], f"{ref_parts[-1]}~{n}"] if n > 1 else ref_parts
            out.append(InputRef(_key(tagged), "/".join(tagged), ref.path, ref.member, ref.size,
                                Reason.NAME_COLLISION.value,
                                f"entries {names} of one zip map to one name: none of them is read"))
    return sorted(out, key=lambda r: r.key)


def _member(path: Root, parts: list[str], info: zipfile.ZipInfo, companions: set[str]) -> tuple[list[str], InputRef]:
    member = info.filename
    mparts = list(PurePosixPath(member.replace("\\", "/")).parts)
    ref_parts = [*parts, *map(part, mparts)]
    rule = next((r for r in map(ignore_rule, mparts) if r), None)
    problem, detail = None, ""
    if member.startswith(("/", "\\")) or ".." in mparts or (mparts and ":" in mparts[0]):
        problem, detail, rule = Reason.ZIP_UNSAFE.value, f"unsafe entry name {member!r} (absolute or ../)", None
    elif info.flag_bits & 0x1:
        problem, detail = Reason.ZIP_UNSAFE.value, f"entry {member!r} is encrypted"
    elif member.lower().endswith(".zip"):
        problem, detail = Reason.ZIP_UNSAFE.value, f"nested zip {member!r} is not opened"
    return ref_parts, InputRef(_key(ref_parts), "/".join(ref_parts), str(path), member, info.file_size, problem,
                               detail, companion=bool(mparts) and mparts[-1] in companions, ignored=rule,
                               url=f"zip://{member}::{path}" if is_url(str(path)) else None)


def discover(paths: list[Root], settings: Settings, exclude: tuple[Path, ...] = ()) -> list[InputRef]:
    """Every input under the given paths, sorted by key (so discovery order never matters).

    ``exclude`` (the output root) is never read: it is recorded as ``ignored`` where it is met.
    """
    companions = companion_names()
    refs: list[InputRef] = []
    skip = {p.resolve() for p in exclude}
    for root, base in zip(paths, root_names(paths), strict=True):
        if is_url(root):
            refs.extend(_walk_url(root, base, settings, companions))
        else:
            refs.extend(_walk(Path(root), base, settings, companions, skip))
    refs = group_conversations(refs)
    refs.sort(key=lambda r: r.key)
    return _with_siblings(refs)


def _with_siblings(refs: list[InputRef]) -> list[InputRef]:
    """Give every input the sorted names of the other files beside it (a chat's attachments)."""
    folders: dict[str, list[str]] = {}
    for ref in refs:
        folder, _, base = ref.name.rpartition("/")
        folders.setdefault(folder, []).append(base)
    ordered = {folder: tuple(sorted(names)) for folder, names in folders.items()}  # sorted once per folder
    out = []
    for ref in refs:
        folder, _, base = ref.name.rpartition("/")
        names = ordered[folder]
        lo, hi = bisect_left(names, base), bisect_right(names, base)  # every entry of this name left out
        out.append(replace(ref, siblings=names[:lo] + names[hi:]))
    return out


def root_names(paths: list[Root]) -> list[list[str]]:
    """The leading key parts of each root: its name, or as many parent folder names as make it
    distinct from the other roots (``dir1/chat.txt``, ``dir2/chat.txt``), whatever their order. A URL
    root is named as a local folder of the same path would be."""
    full = [[part(p) for p in (url_parts(root) if is_url(root) else Path(os.path.abspath(root)).parts[1:])] or ["root"]
            for root in paths]
    depth = [1] * len(paths)
    while True:
        names = [tuple(f[-d:]) for f, d in zip(full, depth, strict=True)]
        clash = {n for n in names if names.count(n) > 1}
        grow = [i for i, n in enumerate(names) if n in clash and depth[i] < len(full[i])]
        if not grow:
            break
        for i in grow:
            depth[i] += 1
    out = []
    for root, n in zip(paths, names, strict=True):
        parts = list(n)
        if names.count(n) > 1:  # the same folder twice
            parts[-1] += "-" + hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:8]
        out.append(parts)
    return out


def group_conversations(refs: list[InputRef]) -> list[InputRef]:
    """The files a grammar reads as one conversation (``Grammar.group_of``: a Slack channel's day files,
    a Telegram chat's pages) become one ref per conversation, with the files as its parts in part order;
    everything else stays as it is. A lone file that is the whole conversation (a Telegram chat's only
    ``messages.html``) stays an ordinary input; an ordinary input under a conversation's own key (a
    DiscordChatExporter channel exported whole beside its parts) joins it as its first part."""
    groups: dict[str, list[tuple[int, InputRef]]] = {}
    names: dict[str, str] = {}
    plain: list[InputRef] = []
    for ref in refs:
        claim = _conversation(ref)
        if claim is None:
            plain.append(ref)
            continue
        key, name, number = claim
        groups.setdefault(key, []).append((number, ref))
        names[key] = name
    out = []
    for ref in plain:
        if ref.key in groups and not (ref.companion or ref.ignored):
            groups[ref.key].append((0, ref))
        else:
            out.append(ref)
    for key, members in groups.items():
        members.sort(key=lambda m: (m[0], m[1].key))
        parts = tuple(ref for _, ref in members)
        if len(parts) == 1 and parts[0].key == key:
            out.append(parts[0])
            continue
        out.append(InputRef(key, names[key], parts[0].path, size=sum(p.size for p in parts), parts=parts))
    return out


def select(refs: list[InputRef], keys: list[str]) -> tuple[list[InputRef], list[str]]:
    """The refs a rerun of these keys takes, and the keys no longer found. A key of one file of a
    conversation over several files (a Slack day file, a Telegram page) takes the whole conversation:
    its files are read together or not at all."""
    wanted = set(keys)
    found = [r for r in refs if r.key in wanted or any(p.key in wanted for p in r.parts)]
    seen = {r.key for r in found} | {p.key for r in found for p in r.parts}
    return found, sorted(wanted - seen)


def _conversation(ref: InputRef) -> tuple[str, str, int] | None:
    """(key, name, part number) of the conversation over several files a file is part of, or None."""
    parent, _, _ = ref.key.rpartition("/")
    folder, _, leaf = ref.name.rpartition("/")
    # a file that cannot be read stays in its group: the conversation then says which part it lacks
    if not parent or ref.companion or ref.ignored:
        return None
    claim = registry.conversation_of(leaf)
    if claim is None:
        return None
    _, within, number = claim
    if not within:
        return parent, folder, number
    return f"{parent}/{safe_path_part(within)}", f"{folder}/{within}", number


def _walk(root: Path, parts: list[str], settings: Settings, companions: set[str],
          skip: set[Path] = frozenset()) -> list[InputRef]:
    name = "/".join(parts)
    try:
        st = os.lstat(root)
    except OSError as exc:
        st = exc
    # only a folder (or a link to one) can be the output root: a plain file is not resolved
    if skip and not (isinstance(st, os.stat_result) and stat.S_ISREG(st.st_mode)) and root.resolve() in skip:
        return [InputRef(_key(parts), name, str(root), ignored="the output root of this run is not read as input")]
    if isinstance(st, OSError):
        return [InputRef(_key(parts), name, str(root), problem=Reason.UNREADABLE.value, detail=str(st))]
    if stat.S_ISLNK(st.st_mode):
        try:
            target = root.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            return [InputRef(_key(parts), name, str(root), problem=Reason.UNREADABLE.value,
                             detail=f"broken or looping symlink: {exc}")]
        if target.is_dir():
            return [InputRef(_key(parts), name, str(root), problem=Reason.UNREADABLE.value,
                             detail="symlink to a folder is not followed (loops)")]
        st = os.stat(target)
    if stat.S_ISDIR(st.st_mode):
        out: list[InputRef] = []
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError as exc:
            return [InputRef(_key(parts), name, str(root), problem=Reason.UNREADABLE.value, detail=str(exc))]
        for entry in entries:
            here = [*parts, part(entry.name)]
            if rule := ignore_rule(entry.name):
                out.append(InputRef(_key(here), "/".join(here), entry.path, ignored=rule))
                continue
            out.extend(_walk(Path(entry.path), here, settings, companions, skip))
        return out
    if not stat.S_ISREG(st.st_mode):
        return [InputRef(_key(parts), name, str(root), problem=Reason.UNREADABLE.value,
                         detail="not a regular file")]
    if root.suffix.lower() == ".zip":
        return _zip_members(root, parts, settings, companions)
    if st.st_size > settings.max_file_bytes:
        return [InputRef(_key(parts), name, str(root), size=st.st_size, problem=Reason.TOO_LARGE.value,
                         detail=f"{st.st_size} bytes, more than max_file_bytes {settings.max_file_bytes}")]
    return [InputRef(_key(parts), name, str(root), size=st.st_size, companion=parts[-1] in companions)]


def _walk_url(url: str, parts: list[str], settings: Settings, companions: set[str]) -> list[InputRef]:
    """A URL root walked through fsspec, under the rules ``_walk`` applies to a local one."""
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(url)
        info = fs.info(path)
    except Exception as exc:  # no such protocol, its package missing, no access: the root is recorded unreadable
        return [InputRef(_key(parts), "/".join(parts), url, problem=Reason.UNREADABLE.value,
                         detail=f"{type(exc).__name__}: {exc}", url=url)]
    return _walk_entry(fs, info, url, parts, settings, companions)


def _walk_entry(fs, info: dict, url: str, parts: list[str], settings: Settings, companions: set[str]
                ) -> list[InputRef]:
    """One entry under a URL root (``url``: the root's URL as given, joined with the entry's names)."""
    name = "/".join(parts)
    if info.get("islink") and info["type"] == "directory":  # file:// on a local disk
        return [InputRef(_key(parts), name, url, problem=Reason.UNREADABLE.value,
                         detail="symlink to a folder is not followed (loops)", url=url)]
    if info["type"] == "directory":
        try:
            entries = sorted(fs.ls(info["name"], detail=True), key=lambda e: e["name"])
        except Exception as exc:  # listing refused or failed: the folder is recorded unreadable
            return [InputRef(_key(parts), name, url, problem=Reason.UNREADABLE.value,
                             detail=f"{type(exc).__name__}: {exc}", url=url)]
        out: list[InputRef] = []
        for entry in entries:
            leaf = entry["name"].rstrip("/").rpartition("/")[2]
            here, there = [*parts, part(leaf)], f"{url}/{leaf}"
            if rule := ignore_rule(leaf):
                out.append(InputRef(_key(here), "/".join(here), there, ignored=rule, url=there))
                continue
            out.extend(_walk_entry(fs, entry, there, here, settings, companions))
        return out
    if info["type"] != "file":
        return [InputRef(_key(parts), name, url, problem=Reason.UNREADABLE.value, detail="not a regular file",
                         url=url)]
    if url.lower().endswith(".zip"):
        return _zip_members(url, parts, settings, companions)
    size = int(info.get("size") or 0)
    if size > settings.max_file_bytes:
        return [InputRef(_key(parts), name, url, size=size, problem=Reason.TOO_LARGE.value,
                         detail=f"{size} bytes, more than max_file_bytes {settings.max_file_bytes}", url=url)]
    return [InputRef(_key(parts), name, url, size=size, companion=parts[-1] in companions, url=url)]


class _UrlZip(zipfile.ZipFile):
    """A zip read from a URL's file object, closed with it."""

    def __init__(self, url: str) -> None:
        import fsspec

        self._source = fsspec.open(url, "rb").open()
        try:
            super().__init__(self._source)
        except BaseException:
            self._source.close()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._source.close()


def open_zip(path: str) -> zipfile.ZipFile:
    """A zip on disk or at a URL."""
    return _UrlZip(path) if is_url(path) else zipfile.ZipFile(path)


def _open_file(path: str):
    if is_url(path):
        import fsspec

        return fsspec.open(path, "rb").open()
    return open(path, "rb")


class ZipCache:
    """Zips opened once and kept open for a shard's reads (closed with ``close``)."""

    def __init__(self) -> None:
        self._open: dict[str, zipfile.ZipFile] = {}

    def get(self, path: str) -> zipfile.ZipFile:
        zf = self._open.get(path)
        if zf is None:
            zf = self._open[path] = open_zip(path)
        return zf

    def close(self) -> None:
        for zf in self._open.values():
            zf.close()
        self._open.clear()


def read(ref: InputRef, zips: ZipCache | None = None) -> bytes:
    """The bytes of one input. Permission and missing-file errors are terminal; others transient
    (for a URL, any other error of its file system: a dropped connection, a throttled request)."""
    try:
        if ref.member is None:
            with _open_file(ref.path) as fh:
                return fh.read()
        if zips is None:
            with open_zip(ref.path) as zf:
                return _member_bytes(zf, ref)
        return _member_bytes(zips.get(ref.path), ref)
    except (PermissionError, FileNotFoundError, IsADirectoryError) as exc:
        raise IngestError(Reason.UNREADABLE, str(exc), path=ref.name) from None
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError) as exc:
        raise IngestError(Reason.ZIP_UNSAFE, str(exc), path=ref.name) from None
    except OSError as exc:
        raise TransientIngestError(Reason.UNREADABLE, str(exc), path=ref.name) from None
    except Exception as exc:
        if not ref.url:
            raise
        raise TransientIngestError(Reason.UNREADABLE, f"{type(exc).__name__}: {exc}", path=ref.name) from None


def _member_bytes(zf: zipfile.ZipFile, ref: InputRef) -> bytes:
    with zf.open(ref.member) as fh:
        data = fh.read(ref.size + 1)
    if len(data) > ref.size:
        raise IngestError(Reason.ZIP_UNSAFE, "entry is larger than its header says", path=ref.name)
    return data


def open_binary(ref: InputRef, zips: ZipCache | None = None):
    """A binary file object over one input (a zip member is streamed from the zip)."""
    if ref.member is None:
        return _open_file(ref.path)
    if zips is not None:
        return zips.get(ref.path).open(ref.member)
    zf = open_zip(ref.path)
    member = zf.open(ref.member)
    member._reconstruct_zip = zf  # keep the archive open as long as the member
    return member
