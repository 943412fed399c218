"""Session ids from the input made safe as file names, by a documented and stable mapping.

An id made only of ``A-Z a-z 0-9 . _ -`` (not starting with ``.`` or ``-``, at most 100 characters,
not a reserved device name such as CON or NUL) is used as it is. Any other id becomes a slug of its
safe characters (NFKC-folded, others replaced by ``_``, at most 60 characters) followed by ``-`` and
the first 12 hex digits of the sha256 of the raw id, so two different raw ids never share a file
name and the same raw id always maps to the same one. The raw id is kept in ByggLogg.sessionIdRaw.
An input with no derivable id gets ``999`` (rule C1).
"""

from __future__ import annotations

import hashlib
import unicodedata

import regex

NO_ID = "999"
_SAFE = regex.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")
_UNSAFE_CHAR = regex.compile(r"[^A-Za-z0-9._-]+")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def is_reserved(name: str) -> bool:
    return name.split(".")[0].lower() in _RESERVED


def safe_id(raw: str | None) -> str:
    """The file-safe session id for a raw id from the input ("999" when there is none)."""
    if raw is None or not raw.strip():
        return NO_ID
    if _SAFE.fullmatch(raw) and not is_reserved(raw):
        return raw
    folded = unicodedata.normalize("NFKC", raw)
    slug = _UNSAFE_CHAR.sub("_", folded).strip("._-")[:60] or "id"
    return f"{slug}-{hashlib.sha256(raw.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


def safe_path_part(part: str) -> str:
    """One component of a source path as a folder name under the output root (same rule as ids)."""
    if part in ("", ".", ".."):
        return "_" + hashlib.sha256(part.encode()).hexdigest()[:12]
    return safe_id(part)
