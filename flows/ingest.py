"""Find the inputs of a run (files, folders, zip exports) and read their bytes safely.

Every path found ends as an InputRef, including the ones that cannot be read: those carry the
reason and are quarantined by the shard, so nothing found disappears. Folders are walked without
following symlinks (no loops); zips are opened in place with limits on entry count, total size and
compression ratio; unsafe entry names, encrypted and nested zips are refused with a reason.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import regex

from models.errors import IngestError, Reason, TransientIngestError
from models.settings import Settings
from normalizers.ids import safe_path_part
from parsers import registry

SKIP_NAMES = {".DS_Store", "Thumbs.db", "desktop.ini"}


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
    parts: tuple[InputRef, ...] = ()
    """The files of one conversation over several files (a Slack channel's day files), in key order;
    the ref itself then names their folder."""


def _key(parts: list[str]) -> str:
    return "/".join(safe_path_part(p) for p in parts)


def companion_names() -> set[str]:
    return {n for g in registry.all_grammars() for n in g.companion_names}


def _zip_members(path: Path, parts: list[str], settings: Settings, companions: set[str]) -> list[InputRef]:
    name = "/".join(parts)
    try:
        zf = zipfile.ZipFile(path)
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
        out = []
        for info in sorted(infos, key=lambda i: i.filename):
            member = info.filename
            mparts = [p for p in PurePosixPath(member.replace("\\", "/")).parts]
            ref_parts = [*parts, *mparts]
            problem, detail = None, ""
            if member.startswith(("/", "\\")) or ".." in mparts or (mparts and ":" in mparts[0]):
                problem, detail = Reason.ZIP_UNSAFE.value, f"unsafe entry name {member!r} (absolute or ../)"
            elif info.flag_bits & 0x1:
                problem, detail = Reason.ZIP_UNSAFE.value, f"entry {member!r} is encrypted"
            elif member.lower().endswith(".zip"):
                problem, detail = Reason.ZIP_UNSAFE.value, f"nested zip {member!r} is not opened"
            if mparts and mparts[-1] in SKIP_NAMES:
                continue
            out.append(InputRef(_key(ref_parts), "/".join(ref_parts), str(path), member, info.file_size,
                                problem, detail, companion=bool(mparts) and mparts[-1] in companions))
        return out


def discover(paths: list[Path], settings: Settings) -> list[InputRef]:
    """Every input under the given paths, sorted by key (so discovery order never matters)."""
    companions = companion_names()
    refs: list[InputRef] = []
    used_roots: dict[str, int] = {}
    for root in paths:
        base = root.name or root.resolve().name or "root"
        if base in used_roots:
            base = f"{base}-{hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:8]}"
        used_roots[base] = 1
        refs.extend(_walk(root, [base], settings, companions))
    refs = group_conversations(refs)
    refs.sort(key=lambda r: r.key)
    return refs


def group_conversations(refs: list[InputRef]) -> list[InputRef]:
    """The files a grammar reads as one conversation (``Grammar.group_files``: a Slack channel's day
    files) become one ref per folder, with the files as its parts; everything else stays as it is."""
    patterns = [regex.compile(g.group_files) for g in registry.all_grammars() if g.group_files]
    if not patterns:
        return refs
    groups: dict[str, list[InputRef]] = {}
    out: list[InputRef] = []
    for ref in refs:
        parent, _, leaf = ref.key.rpartition("/")
        # a file that cannot be read stays in its group: the conversation then says which day it lacks
        if parent and not ref.companion and any(p.fullmatch(leaf) for p in patterns):
            groups.setdefault(parent, []).append(ref)
        else:
            out.append(ref)
    for key, parts in groups.items():
        parts.sort(key=lambda r: r.key)
        name = parts[0].name.rpartition("/")[0]
        out.append(InputRef(key, name, parts[0].path, size=sum(p.size for p in parts), parts=tuple(parts)))
    return out


def _walk(root: Path, parts: list[str], settings: Settings, companions: set[str]) -> list[InputRef]:
    name = "/".join(parts)
    try:
        st = os.lstat(root)
    except OSError as exc:
        return [InputRef(_key(parts), name, str(root), problem=Reason.UNREADABLE.value, detail=str(exc))]
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
            if entry.name in SKIP_NAMES or entry.name.startswith("."):
                continue
            out.extend(_walk(Path(entry.path), [*parts, entry.name], settings, companions))
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


def read(ref: InputRef) -> bytes:
    """The bytes of one input. Permission and missing-file errors are terminal; others transient."""
    try:
        if ref.member is None:
            with open(ref.path, "rb") as fh:
                return fh.read()
        with zipfile.ZipFile(ref.path) as zf, zf.open(ref.member) as fh:
            data = fh.read(ref.size + 1)
            if len(data) > ref.size:
                raise IngestError(Reason.ZIP_UNSAFE, "entry is larger than its header says", path=ref.name)
            return data
    except (PermissionError, FileNotFoundError, IsADirectoryError) as exc:
        raise IngestError(Reason.UNREADABLE, str(exc), path=ref.name) from None
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError) as exc:
        raise IngestError(Reason.ZIP_UNSAFE, str(exc), path=ref.name) from None
    except OSError as exc:
        raise TransientIngestError(Reason.UNREADABLE, str(exc), path=ref.name) from None


def open_binary(ref: InputRef):
    """A binary file object over one input (a zip member is streamed from the zip)."""
    if ref.member is None:
        return open(ref.path, "rb")
    zf = zipfile.ZipFile(ref.path)
    member = zf.open(ref.member)
    member._reconstruct_zip = zf  # keep the archive open as long as the member
    return member
