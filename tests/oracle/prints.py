"""The index prints of a column of messages as the product made them before they were a polars column
computation (``normalizers.keys.column_index_prints``): kept as the oracle it must agree with, byte for
byte (the prints are stored in the ledger and compared with earlier runs')."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Sequence

from normalizers.keys import _TYPOGRAPHY, MEDIA, _epoch, identity_content, identity_print, is_system
from normalizers.keys import _h16 as h16

_JOIN = "\x00"
_UNSPLIT = ("\x1c", "\x1d", "\x1e", "\x1f")


def identity_contents(contents: Sequence[str], kinds: Sequence[str]) -> list[str]:
    """``identity_content`` of each (content, kind), the text normalised once over the column joined."""
    texts = [MEDIA if kind == "media" else content for content, kind in zip(contents, kinds, strict=True)]
    joined = _JOIN.join(texts)
    if not texts:
        return []
    if joined.count(_JOIN) != len(texts) - 1 or any(c in joined for c in _UNSPLIT):
        return [identity_content(c, k) for c, k in zip(contents, kinds, strict=True)]
    joined = unicodedata.normalize("NFC", joined.replace("\r\n", "\n").replace("\r", "\n"))
    return [piece.strip() for piece in " ".join(joined.translate(_TYPOGRAPHY).split()).split(_JOIN)]


def content_hashes(contents: Sequence[str], kinds: Sequence[str]) -> list[str]:
    """``content_hash`` of each (content, kind) of two columns."""
    return [hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            for text in identity_contents(contents, kinds)]


def column_index_prints(authors: Sequence[str], dates: Sequence[str | None], contents: Sequence[str],
                        kinds: Sequence[str]) -> list[str]:
    """``index_print`` of each non-system message of four columns, in order."""
    keep = [n for n, kind in enumerate(kinds) if not is_system(kind)]
    digests = content_hashes([contents[n] for n in keep], [kinds[n] for n in keep])
    author_prints = {author: h16(author)[:8] for author in {authors[n] for n in keep}}
    epochs = {date: _epoch(date) for date in {dates[n] for n in keep}}
    return [f"{identity_print(authors[n], digest)}:{author_prints[authors[n]]}:{epochs[dates[n]]}"
            for n, digest in zip(keep, digests, strict=True)]
