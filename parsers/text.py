"""Bytes to canonical text (seed 004): UTF-8, BOM stripped, CRLF/CR to LF, and its sha256.

Damaged text is read, not refused: a few invalid byte sequences (at most ``MAX_REPLACED_SHARE`` of
the bytes) are each replaced by U+FFFD, and their count and first byte offsets travel on the
``SourceText`` (``replaced_count``, ``replaced``) so the build log can show them. Input with more
invalid bytes than that is not text in this encoding: without a BOM it is read in the legacy code
page it fits (Windows-1252, Latin-1...: parsers/charset.py), the guess recorded on the source
(``encoding_guess``); otherwise it is refused (``undecodable``), as is input full of control bytes
(``binary``). In JSON text, a lone UTF-16 surrogate escape (``\\ud800`` without its pair, a bad code
unit no JSON parser accepts) is replaced by the escape of U+FFFD, counted and noted the same way
(``surrogates_count``, ``surrogates``).
"""

from __future__ import annotations

import codecs
import hashlib
import threading

from models.errors import IngestError, Reason
from models.records import SourceText
from parsers import charset, sqlite
from parsers.jsonload import replace_lone_surrogates

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Control characters other than tab, LF, CR and form feed: a text export has almost none.
_CONTROL = bytes(c for c in range(32) if c not in (9, 10, 12, 13))
_BINARY_SHARE = 0.01
MAX_REPLACED_SHARE = 0.01
"""Invalid byte sequences above this share of the bytes make the input undecodable."""
MAX_REPLACED_LISTED = 20
_NOTES = threading.local()


def _note_invalid(exc: UnicodeDecodeError) -> tuple[str, int]:
    """Codec error handler: replace one invalid sequence with U+FFFD and note where it was."""
    notes = _NOTES.offsets
    notes.append(exc.start)
    return "\ufffd", exc.end


codecs.register_error("reconstruct-note", _note_invalid)


def canonicalize(text: str) -> str:
    """CRLF and lone CR become LF (seed 004 §1); nothing else changes."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _guess_utf16(data: bytes) -> str | None:
    """UTF-16 without a BOM shows as NUL in every other byte of mostly-ASCII text."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    even_nul = sample[0::2].count(0) / (len(sample) / 2)
    odd_nul = sample[1::2].count(0) / (len(sample) / 2)
    if odd_nul > 0.4 and even_nul < 0.05:
        return "utf-16-le"
    if even_nul > 0.4 and odd_nul < 0.05:
        return "utf-16-be"
    return None


def decode(data: bytes, name: str) -> SourceText:
    """Decode one input to canonical text, or raise IngestError with a specific reason."""
    if not data.strip():
        raise IngestError(Reason.EMPTY, "the file is empty or holds only white space", path=name)
    if sqlite.is_sqlite(data):
        return _database(data, name)
    encoding = "utf-8"
    body = data
    for bom, enc in _BOMS:
        if data.startswith(bom):
            encoding, body = f"{enc}-bom" if enc == "utf-8" else enc, data[len(bom):]
            break
    else:
        guessed = _guess_utf16(data)
        if guessed:
            encoding = guessed
    codec = encoding.removesuffix("-bom")
    text, replaced, guessed = _text_of(body, codec, name)
    if guessed is not None:
        encoding = guessed.encoding
    elif codec == "utf-8" and _is_binary(body):
        controls = len(body) - len(body.translate(None, _CONTROL))
        raise IngestError(Reason.BINARY, f"{controls} control bytes in {len(body)}: not a text export", path=name)
    if not text.strip():
        raise IngestError(Reason.EMPTY, "the text is empty after decoding", path=name)
    text = canonicalize(text)
    surrogates: list[int] = []
    if text[:4096].lstrip()[:1] in ("[", "{"):  # JSON or JSON Lines: a lone surrogate escape is a bad code unit
        text, surrogates = replace_lone_surrogates(text)
    skip = len(data) - len(body)  # offsets count from the file's first byte, BOM included
    return SourceText(text=text, name=name, sha256=sha256_text(text), size=len(data), encoding=encoding,
                      replaced=tuple(skip + o for o in replaced[:MAX_REPLACED_LISTED]), replaced_count=len(replaced),
                      encoding_guess=guessed.note() if guessed else None,
                      surrogates=tuple(surrogates[:MAX_REPLACED_LISTED]), surrogates_count=len(surrogates))


def _text_of(body: bytes, codec: str, name: str) -> tuple[str, list[int], charset.Guess | None]:
    """(text, offsets of the invalid sequences replaced, the legacy code page detected or None).

    Bytes with more invalid sequences than ``MAX_REPLACED_SHARE`` are not text in ``codec``: when
    that codec is UTF-8 (no BOM said otherwise), they are read in the legacy code page they fit
    (parsers/charset.py), else refused."""
    text, offsets, first = _decode_noting(body, codec)
    if len(offsets) <= len(body) * MAX_REPLACED_SHARE:
        return text, offsets, None
    detail = (f"not valid {codec}: {len(offsets)} invalid byte sequences in {len(body)} bytes, the first 0x"
              f"{body[first.start]:02x} at offset {first.start} ({first.reason})")
    if codec != "utf-8" or _is_binary(body):
        raise IngestError(Reason.UNDECODABLE, detail, path=name)
    if charset.has_utf8_text(body, len(offsets)):
        detail += "; it holds UTF-8 text, so no other encoding is assumed"
    elif (guessed := charset.declared(body) or charset.guess(body)) is not None:
        return body.decode(guessed.encoding), [], guessed
    else:
        detail += "; no legacy code page fits either (charset-normalizer)"
    raise IngestError(Reason.UNDECODABLE, detail, path=name)


def _is_binary(body: bytes) -> bool:
    """Full of control bytes: not a text export in any encoding."""
    stripped = body.translate(None, _CONTROL)
    return stripped != body and len(body) - len(stripped) > max(1, len(body) * _BINARY_SHARE)


def _database(data: bytes, name: str) -> SourceText:
    """A SQLite database's canonical text: its tables as JSON (parsers.sqlite)."""
    try:
        text = sqlite.render(data)
    except sqlite.DatabaseError as exc:
        raise IngestError(Reason.UNDECODABLE, f"a SQLite database that cannot be read: {exc}", path=name) from exc
    return SourceText(text=text, name=name, sha256=sha256_text(text), size=len(data), encoding=sqlite.ENCODING)


def _decode_noting(body: bytes, codec: str) -> tuple[str, list[int], UnicodeDecodeError | None]:
    """Decode, replacing invalid sequences: (text, their offsets, the first one's error)."""
    try:
        return body.decode(codec), [], None
    except UnicodeDecodeError as exc:
        first = exc
    _NOTES.offsets = []
    try:
        text = body.decode(codec, errors="reconstruct-note")
        offsets = _NOTES.offsets
    finally:
        _NOTES.offsets = []
    return text, offsets, first


def detection_sample(head: bytes) -> str:
    """The first bytes of a streamed input as text for detection: UTF-8, a cut sequence dropped,
    lone surrogate escapes of JSON read as U+FFFD (as ``decode`` reads them)."""
    sample = head.decode("utf-8-sig", errors="ignore")
    if sample.lstrip()[:1] in ("[", "{"):
        sample = replace_lone_surrogates(sample)[0]
    return sample


def input_sha256(data: bytes) -> str:
    """The one hash of an input's bytes that the ledger keys skips on: the sha256 of its canonical
    text (what ``decode`` records, whatever the encoding), or of the raw bytes when it does not decode."""
    try:
        return decode(data, "").sha256
    except IngestError:
        return hashlib.sha256(data).hexdigest()


def sha256_stream(chunks) -> tuple[str, int, str]:
    """sha256 of the canonical text of a UTF-8 input given as byte chunks, without holding it:
    BOM stripped, CRLF/CR to LF across chunk boundaries. Returns (sha256, size, encoding)."""
    digest = hashlib.sha256()
    size = 0
    first = True
    chunks = _first_at_least(chunks, len(codecs.BOM_UTF8))
    pending_cr = False
    encoding = "utf-8"
    for chunk in chunks:
        size += len(chunk)  # counted before the BOM is stripped: the file's size
        if first:
            first = False
            if chunk.startswith(codecs.BOM_UTF8):
                chunk, encoding = chunk[len(codecs.BOM_UTF8):], "utf-8-bom"
        if pending_cr:
            chunk = b"\r" + chunk
            pending_cr = False
        if chunk.endswith(b"\r"):
            chunk, pending_cr = chunk[:-1], True
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        digest.update(chunk)
    if pending_cr:
        digest.update(b"\n")
    return digest.hexdigest(), size, encoding


def _first_at_least(chunks, n: int):
    """Re-chunk so the first chunk holds at least n bytes (a BOM is never split)."""
    head = b""
    it = iter(chunks)
    for chunk in it:
        head += chunk
        if len(head) >= n:
            break
    yield head
    yield from it
