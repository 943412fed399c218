"""Find the inputs of a run (files, folders, archives) and read their bytes safely.

Every path found ends as an InputRef, including the ones that cannot be read: those carry the
reason and are quarantined by the shard, so nothing found disappears. Folders are walked without
following symlinked folders (no loops); a symlinked file is followed only inside the input root
(``follow_outside_links``); archives (zip, tar, tar.gz, gz: flows/core/archives.py) are opened in place
with limits on entry count, total size and compression ratio; unsafe entry names, encrypted entries,
links and devices inside tars, and nested archives are refused one by one with a reason.

A root may also be a URL (``s3://bucket/archive``, ``gcs://``, ``file://``, ``memory://``): it is listed
and read through fsspec, under the same rules (ignored names, zips and their limits, sizes), keyed as a
local folder of the same name would be, and recorded in the ledger by its URL. So workers on other
machines read an archive from object storage.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from models.errors import IngestError, Reason, TransientIngestError
from models.settings import Settings
from normalizers.ids import safe_path_part
from normalizers.secrets import scrub_name
from parsers import registry

from . import archives

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
    folder: tuple[str, ...] = ()
    """The sorted names of the files in its folder or zip folder, its own too: one tuple shared by the
    folder's inputs (a tuple of the others' names each would grow with the square of the folder)."""
    ignored: str | None = None  # the rule that makes it no input (hidden, system file, the output root)
    parts: tuple[InputRef, ...] = ()
    """The files of one conversation over several files (a Slack channel's day files), in key order;
    the ref itself then names their folder."""
    url: str | None = None
    """Where an input found under a URL root is (a zip member as fsspec's ``zip://member::url``): the
    ledger records it instead of ``name`` (a conversation over several files records each file)."""

    @property
    def siblings(self) -> tuple[str, ...]:
        """The sorted names of the other files beside it (a chat's attachments): every entry of its own
        name left out."""
        base = self.name.rpartition("/")[2]
        lo, hi = bisect_left(self.folder, base), bisect_right(self.folder, base)
        return self.folder[:lo] + self.folder[hi:]

    @property
    def recorded(self) -> str:
        """The source path the ledger records: the URL of a URL input, else the name."""
        return scrub_name(self.url) if self.url else self.name


Root = Path | str
"""A run's root: a local path, or a URL read through fsspec."""
is_url = archives.is_url


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


def _archive_members(path: Root, parts: list[str], settings: Settings, companions: set[str],
                     kind: archives.ArchiveKind) -> list[InputRef]:
    """One ref per entry of an archive, or one refused ref for the archive when it is refused whole.
    A tar whose stream breaks part way keeps the entries before the break, and the archive's own ref
    says where it broke."""
    name = "/".join(parts)
    try:
        listing = archives.entries(path, kind, settings)
    except IngestError as exc:
        return [InputRef(_key(parts), name, str(path), problem=exc.reason.value, detail=exc.detail)]
    except OSError as exc:
        return [InputRef(_key(parts), name, str(path), problem=Reason.UNREADABLE.value, detail=str(exc))]
    refs = _members(path, parts, listing.entries, companions, kind)
    if listing.broken:
        refs.append(InputRef(_key(parts), name, str(path), problem=Reason.ARCHIVE_CORRUPT.value,
                             detail=listing.broken))
    return refs


def _members(path: Root, parts: list[str], entries: list[archives.Entry], companions: set[str],
             kind: archives.ArchiveKind) -> list[InputRef]:
    """One ref per entry. Entries that map to one key (``a/x.txt`` and ``a\\x.txt``, or a name
    stored twice) are all quarantined ``name_collision``, each under its own key."""
    groups: dict[str, list[tuple[list[str], InputRef]]] = {}
    for entry in entries:
        ref_parts, ref = _member(path, parts, entry, companions, kind)
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
                                f"entries {names} of one {kind.value} map to one name: none of them is read"))
    return sorted(out, key=lambda r: r.key)


def _member(path: Root, parts: list[str], entry: archives.Entry, companions: set[str],
            kind: archives.ArchiveKind) -> tuple[list[str], InputRef]:
    member = entry.name
    mparts = list(PurePosixPath(member.replace("\\", "/")).parts)
    ref_parts = [*parts, *map(part, mparts)]
    rule = next((r for r in map(ignore_rule, mparts) if r), None)
    problem, detail = None, ""
    unsafe = archives.unsafe_reason(kind).value
    if member.startswith(("/", "\\")) or ".." in mparts or (mparts and ":" in mparts[0]):
        problem, detail, rule = unsafe, f"unsafe entry name {member!r} (absolute or ../)", None
    elif entry.refusal:
        problem, detail = unsafe, entry.refusal
    elif member.lower().endswith(archives.NESTED_SUFFIXES):
        problem, detail = unsafe, f"nested archive {member!r} is not opened"
    return ref_parts, InputRef(_key(ref_parts), "/".join(ref_parts), str(path), member, entry.size, problem,
                               detail, companion=bool(mparts) and mparts[-1] in companions, ignored=rule,
                               url=f"{kind.value}://{member}::{path}" if is_url(str(path)) else None)


def discover(paths: list[Root], settings: Settings, exclude: tuple[Path, ...] = ()) -> list[InputRef]:
    """Every input under the given paths, sorted by key (so discovery order never matters).

    ``exclude`` (the output root) is never read: it is recorded as ``ignored`` where it is met.
    """
    companions = companion_names()
    refs: list[InputRef] = []
    skip = {_resolved(p) for p in exclude} - {None}
    for root, base in zip(paths, root_names(paths), strict=True):
        if is_url(root):
            refs.extend(_walk_url(root, base, settings, companions))
        else:
            refs.extend(_walk(Path(root), base, settings, companions, skip))
    refs = group_conversations(refs)
    refs.sort(key=lambda r: r.key)
    return _with_siblings(refs)


def _with_siblings(refs: list[InputRef]) -> list[InputRef]:
    """Give every input its folder's sorted names (``InputRef.siblings``: a chat's attachments)."""
    folders: dict[str, list[str]] = {}
    for ref in refs:
        folder, _, base = ref.name.rpartition("/")
        folders.setdefault(folder, []).append(base)
    ordered = {folder: tuple(sorted(names)) for folder, names in folders.items()}  # sorted once per folder
    return [replace(ref, folder=ordered[ref.name.rpartition("/")[0]]) for ref in refs]


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
          skip: set[Path] = frozenset(), top: Path | None = None) -> list[InputRef]:
    """The inputs at ``root``: itself, or what a folder holds. ``top`` is the resolved input root
    the walk started from (None for the root itself): a link found below it may not leave it."""
    name = "/".join(parts)
    try:
        st = os.lstat(root)
    except OSError as exc:
        return [InputRef(_key(parts), name, str(root), problem=Reason.UNREADABLE.value, detail=str(exc))]
    # only a folder (or a link to one) can be the output root: a plain file is not resolved
    if skip and not stat.S_ISREG(st.st_mode) and _resolved(root) in skip:
        return [InputRef(_key(parts), name, str(root), ignored="the output root of this run is not read as input")]
    if stat.S_ISLNK(st.st_mode):
        followed = _follow(root, top, settings)
        if not isinstance(followed, os.stat_result):  # (a stat result is a tuple too)
            reason, detail = followed
            return [InputRef(_key(parts), name, str(root), problem=reason.value, detail=detail)]
        st = followed
    if stat.S_ISDIR(st.st_mode):
        return _folder(root, parts, settings, companions, skip, top)
    if not stat.S_ISREG(st.st_mode):
        return [InputRef(_key(parts), name, str(root), problem=Reason.UNREADABLE.value,
                         detail="not a regular file")]
    kind = archives.kind_of(root.name)
    if kind is not None:
        return _archive_members(root, parts, settings, companions, kind)
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
    kind = archives.kind_of(url)
    if kind is not None:
        return _archive_members(url, parts, settings, companions, kind)
    size = int(info.get("size") or 0)
    if size > settings.max_file_bytes:
        return [InputRef(_key(parts), name, url, size=size, problem=Reason.TOO_LARGE.value,
                         detail=f"{size} bytes, more than max_file_bytes {settings.max_file_bytes}", url=url)]
    return [InputRef(_key(parts), name, url, size=size, companion=parts[-1] in companions, url=url)]


def _folder(root: Path, parts: list[str], settings: Settings, companions: set[str], skip: set[Path],
            top: Path | None) -> list[InputRef]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        return [InputRef(_key(parts), "/".join(parts), str(root), problem=Reason.UNREADABLE.value, detail=str(exc))]
    if top is None:
        top = _resolved(root)
    out: list[InputRef] = []
    for entry in entries:
        here = [*parts, part(entry.name)]
        if rule := ignore_rule(entry.name):
            out.append(InputRef(_key(here), "/".join(here), entry.path, ignored=rule))
            continue
        out.extend(_walk(Path(entry.path), here, settings, companions, skip, top))
    return out


def _resolved(path: Path) -> Path | None:
    """The path with every link resolved, or None when that fails (a loop, a path too long):
    the caller then meets the link itself and records why."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None


def _follow(link: Path, top: Path | None, settings: Settings) -> os.stat_result | tuple[Reason, str]:
    """The stat of the file a symbolic link points to, or (reason, detail) when it is not followed:
    broken, a loop, a folder (never followed: loops), or a file outside the input root ``top``."""
    try:
        target = link.resolve(strict=True)
        st = os.stat(target)
    except RuntimeError as exc:  # pathlib's own loop check (Python < 3.13)
        return Reason.SYMLINK_LOOP, f"symbolic link loop, not followed: {exc}"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Reason.SYMLINK_LOOP, f"symbolic link loop, not followed: {exc}"
        return Reason.UNREADABLE, f"broken symlink: {exc}"
    if stat.S_ISDIR(st.st_mode):
        return Reason.UNREADABLE, "symlink to a folder is not followed (loops)"
    if top is not None and not settings.follow_outside_links and not target.is_relative_to(top):
        return Reason.OUTSIDE_ROOT, (f"symbolic link to a file outside the input root ({shown(str(target))}): "
                                     "not followed (setting follow_outside_links)")
    return st


def read(ref: InputRef, archive_cache: archives.ArchiveCache | None = None) -> bytes:
    """The bytes of one input. Permission and missing-file errors are terminal, and so are an archive
    entry's decompression failures (its reason says which); other I/O errors are transient."""
    try:
        if ref.member is None:
            with archives.open_source(ref.path) as fh:
                return fh.read()
        return archives.read_member(ref.path, _kind(ref), ref.member, ref.size, archive_cache)
    except IngestError as exc:
        raise IngestError(exc.reason, exc.detail, path=ref.name) from None
    except (PermissionError, FileNotFoundError, IsADirectoryError) as exc:
        raise IngestError(Reason.UNREADABLE, str(exc), path=ref.name) from None
    except OSError as exc:
        raise TransientIngestError(Reason.UNREADABLE, str(exc), path=ref.name) from None
    except Exception as exc:
        if not ref.url:
            raise
        raise TransientIngestError(Reason.UNREADABLE, f"{type(exc).__name__}: {exc}", path=ref.name) from None


def _kind(ref: InputRef) -> archives.ArchiveKind:
    kind = archives.kind_of(ref.path)
    if kind is None:  # a member's path is always its archive's
        raise IngestError(Reason.INTERNAL, f"{ref.path!r} is not an archive", path=ref.name)
    return kind


def open_binary(ref: InputRef, archive_cache: archives.ArchiveCache | None = None):
    """A binary file object over one input (an archive entry is streamed from its archive)."""
    if ref.member is None:
        return archives.open_source(ref.path)
    try:
        return archives.open_member(ref.path, _kind(ref), ref.member, ref.size, archive_cache)
    except IngestError as exc:
        raise IngestError(exc.reason, exc.detail, path=ref.name) from None
