"""Which legacy encoding (Windows-1252, Latin-1, ...) an input that is not UTF-8 is written in.

Old phones and IRC clients wrote their logs in the system's code page. Detection is charset-normalizer's
(a maintained detector that scores every candidate code page by the mess its decoding makes and by
how well the result fits a language), used only on bytes that are not UTF-8 and hold no UTF-8 text
of their own; what it chose and how sure it was travels on the source as an assumption.
"""

from __future__ import annotations

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

    def note(self) -> str:
        """The assumption as the build log and the ledger record it."""
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
