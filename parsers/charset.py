"""Which legacy encoding (Windows-1252, Latin-1, ...) an input that is not UTF-8 is written in.

Old phones and IRC clients wrote their logs in the system's code page. Detection is charset-normalizer's
(a maintained detector that scores every candidate code page by the mess its decoding makes and by
how well the result fits a language), used only on bytes that are not UTF-8 and hold no UTF-8 text
of their own; what it chose and how sure it was travels on the source as an assumption.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from charset_normalizer import from_bytes

PREFERRED = ("cp1252", "latin_1", "iso8859_15")
"""Among candidates the detector cannot tell apart (the same mess and language fit: short text, or
accents both code pages share), the commonest Western code pages win, in this order."""


@dataclass(frozen=True, slots=True)
class Guess:
    """A detected encoding: the Python codec, the detector's confidence (1 - its mess ratio), its
    language coherence, and the candidates it could not tell apart from the one chosen."""

    encoding: str
    confidence: float
    coherence: float
    tied: tuple[str, ...] = ()
    declared: str | None = None
    """The document's own charset declaration that named the encoding (then nothing was detected)."""

    def note(self) -> str:
        """The assumption as the build log and the ledger record it."""
        if self.declared:
            return f"encoding {self.encoding} as the document declares it ({self.declared}), the bytes not being UTF-8"
        more = f" and {len(self.tied) - 3} more" if len(self.tied) > 3 else ""
        tied = (f"; as likely: {', '.join(self.tied[:3])}{more}, {self.encoding} preferred as the commoner"
                if self.tied else "")
        return (f"encoding {self.encoding} detected by charset-normalizer, the bytes not being UTF-8 (confidence "
                f"{self.confidence:.2f}, language coherence {self.coherence:.2f}{tied})")


def has_utf8_text(body: bytes, invalid: int) -> bool:
    """True when the bytes hold at least as many valid UTF-8 multi-byte characters as invalid
    sequences: UTF-8 with damage, not a legacy code page (whose accents are almost never valid UTF-8)."""
    text = body.decode("utf-8", errors="replace")
    non_ascii = len(text) - len(text.encode("ascii", errors="ignore"))
    return non_ascii - text.count("\ufffd") >= invalid


def guess(body: bytes) -> Guess | None:
    """The legacy encoding the bytes decode in with the least mess, or None when none fits (or when
    the decoded text shows no language and none of the equal candidates is a common code page)."""
    matches = [m for m in from_bytes(body) if not m.encoding.startswith("utf")]
    if not matches:
        return None
    best = min(matches, key=lambda m: (m.chaos, -m.coherence))
    # a match stands for every code page that decodes the bytes to the same text (could_be_from_charset)
    tied = list(dict.fromkeys(e for m in matches if m.chaos == best.chaos and m.coherence == best.coherence
                              for e in (m.encoding, *m.could_be_from_charset)))
    chosen = min(tied, key=lambda e: PREFERRED.index(e) if e in PREFERRED else len(PREFERRED))
    if best.coherence == 0 and chosen not in PREFERRED:
        return None  # no language recognised and no common code page among the equals: a guess would be noise
    return Guess(chosen, round(1 - best.chaos, 3), round(best.coherence, 3),
                 tuple(e for e in tied if e != chosen))


_META = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?(?P<name>[A-Za-z0-9_.:-]{2,40})""", re.IGNORECASE)
"""An HTML document's charset declaration (``<meta charset="...">``, or the http-equiv form)."""


def declared(body: bytes) -> Guess | None:
    """The encoding an HTML document declares in its first 2 KiB, when Python knows it, it is no UTF
    form and the whole body decodes in it (VK's archive pages: ``charset=windows-1251``); else None."""
    m = _META.search(body[:2048])
    if m is None:
        return None
    name = m["name"].decode("ascii")
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    if codec.startswith("utf"):
        return None
    try:
        body.decode(codec)
    except UnicodeDecodeError:
        return None
    return Guess(codec, 1.0, 1.0, declared=f'<meta charset="{name}">')
