"""Secret and PII redaction: find keys and tokens in text, replace them with typed placeholders.

The detectors are data (``secret_table.DETECTORS``): a text is screened for their trigger words, and
only the rows whose words it holds run, as one compiled alternation with a named group per row (cached
by the set of rows), so a turn is scanned once. A JSON value whose key is named like a credential
(``"api_key": ...``) is redacted whatever it holds. Policy (from settings): ``redact`` replaces every
finding with ``[REDACTED:<type>]``, ``report`` only counts and lists them, ``off`` does nothing.
Findings are reported by type and location, never by value. E-mail addresses, card numbers, IBANs and
phone numbers (``pii``) are found only when ``redact_pii`` is set.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

import orjson
import regex

from . import pii as pii_finders
from .secret_table import DETECTORS, EMAIL

_META = set(r"\.^$*+?()[]{}|")


def _literal(word: str) -> str:
    """A trigger word as a pattern Python's and Rust's regex read alike; lower case folded by hand
    (re.IGNORECASE makes the search several times slower)."""
    fold = word == word.lower()
    return "".join(f"[{c}{c.upper()}]" if fold and c.isalpha() and c.upper() != c else
                   ("\\" + c if c in _META else c) for c in word)


def _words() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(words matched in any case, lower-cased; words matched as written), each once, in table order."""
    folded, exact = [], []
    for row in DETECTORS:
        for word in row.triggers:
            target = folded if word == word.lower() else exact
            if word not in target:
                target.append(word)
    return tuple(folded), tuple(exact)


FOLDED_WORDS, EXACT_WORDS = _words()
_TRIGGERS = re.compile("|".join(_literal(w) for w in (*EXACT_WORDS, *FOLDED_WORDS)))
# the same words as two literal alternations, one over the lower-cased text: ten times faster in
# Python's re than the hand-folded classes above (which Rust's regex, in the column search, reads well)
_FOLDED = re.compile("|".join(map(re.escape, FOLDED_WORDS)))
_EXACT = re.compile("|".join(map(re.escape, EXACT_WORDS)))
# three digits, single separators allowed between them (a French "06 12 34" too), or an @
_PII_TRIGGERS = re.compile(r"@|\d[ ().-]?\d[ ().-]?\d")


def triggers() -> str:
    """The trigger words as a pattern both Python's and Rust's regex read alike (column-wise search)."""
    return _TRIGGERS.pattern


def pii_triggers() -> str:
    return _PII_TRIGGERS.pattern


def may_trigger(text: str, pii: bool = False) -> bool:
    """False when the text surely holds no trigger (then no secret and, without ``pii``, nothing)."""
    if pii:
        return _TRIGGERS.search(text) is not None or _PII_TRIGGERS.search(text) is not None
    for word in EXACT_WORDS:  # a plain loop: any() with a generator costs 3x per call
        if word in text:
            return True
    low = text.lower()
    for word in FOLDED_WORDS:  # noqa: SIM110 (as above)
        if word in low:
            return True
    return False


def _has_trigger(text: str) -> bool:
    return _EXACT.search(text) is not None or _FOLDED.search(text.lower()) is not None


def _trigger_starts(text: str) -> set[int]:
    """Where trigger words start in the text (a lower-casing that changes the length, as of "İ",
    is searched with the folded pattern instead)."""
    low = text.lower()
    if len(low) != len(text):
        return {m.start() for m in _TRIGGERS.finditer(text)}
    return {m.start() for m in _FOLDED.finditer(low)} | {m.start() for m in _EXACT.finditer(text)}


def _rows(text: str) -> tuple[int, ...]:
    """The detectors whose trigger words the text holds (only they can match it)."""
    low = text.lower()
    return tuple(i for i, row in enumerate(DETECTORS)
                 if any((w in low) if w == w.lower() else (w in text) for w in row.triggers))


@lru_cache(maxsize=256)
def _pattern(rows: tuple[int, ...], email: bool) -> regex.Pattern:
    parts = [f"(?P<{DETECTORS[i].name}>{DETECTORS[i].pattern})" for i in rows]
    return regex.compile("|".join(parts + ([f"(?P<email>{EMAIL})"] if email else [])))


# a JSON key named like a credential: its value is the secret, whatever it looks like
_KEYS = regex.compile("|".join(f"(?P<{r.name}>{r.keys})" for r in DETECTORS if r.keys), regex.IGNORECASE)

Span = tuple[int, int, str]


class Redactor:
    """Built once per run from the settings; ``scrub`` is called per text field."""

    def __init__(self, policy: str, pii: bool) -> None:
        self.policy = policy
        self.pii = pii

    def candidates(self, texts: list[str]) -> set[int]:
        """Indices of the texts that may hold a finding, from one search over them all joined:
        a session of a million turns is screened in one pass and only the hits are scrubbed."""
        if self.policy == "off" or not texts:
            return set()
        joined = "\x00".join(texts)
        if not may_trigger(joined, self.pii):
            return set()  # most sessions hold no trigger at all
        starts, pos = [], 0
        for t in texts:
            starts.append(pos)
            pos += len(t) + 1
        hits = _trigger_starts(joined)
        if self.pii:
            hits.update(m.start() for m in _PII_TRIGGERS.finditer(joined))
        return {bisect_right(starts, h) - 1 for h in hits}

    def spans(self, text: str) -> list[Span]:
        """Every finding in the text as (start, end, type), in order, none overlapping."""
        pii = self.pii and _PII_TRIGGERS.search(text) is not None
        rows = _rows(text) if _has_trigger(text) else ()
        found: list[Span] = []
        if rows or (pii and "@" in text):
            found = [(m.start(), m.end(), m.lastgroup or "secret")
                     for m in _pattern(rows, pii and "@" in text).finditer(text)]
        if pii:
            found = _merge(found, [s for finder in pii_finders.FINDERS for s in finder(text)])
        return found

    def scrub(self, text: str) -> tuple[str, list[str]]:
        """The text to write and the types found in it, in order."""
        if self.policy == "off" or not text:
            return text, []
        if not _has_trigger(text) and not (self.pii and _PII_TRIGGERS.search(text)):
            return text, []
        found = self.spans(text)
        if self.policy != "redact" or not found:
            return text, [kind for _, _, kind in found]
        out, at = [], 0
        for start, end, kind in found:
            out.append(text[at:start])
            out.append(f"[REDACTED:{kind}]")
            at = end
        out.append(text[at:])
        return "".join(out), [kind for _, _, kind in found]

    def scrub_fields(self, value, found: list[str]):
        """``scrub_tree`` after a quick look: a value whose JSON text holds no trigger word is returned
        as it is (no JSON escape can hide one: trigger words hold no quote, backslash or control)."""
        if self.policy == "off":
            return value
        try:
            text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            return self.scrub_tree(value, found)
        return self.scrub_tree(value, found) if may_trigger(text, self.pii) else value

    def scrub_tree(self, value, found: list[str]):
        """A JSON-like value with every string (keys included) scrubbed; types found go to ``found``.
        The value of a key named like a credential (``"password"``, ``"api_key"``) is redacted whole."""
        if isinstance(value, str):
            out, kinds = self.scrub(value)
            found.extend(kinds)
            return out
        if isinstance(value, dict):
            return {self.scrub_tree(k, found) if isinstance(k, str) else k: self._field(k, v, found)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub_tree(v, found) for v in value]
        return value

    def _field(self, key, value, found: list[str]):
        """One dict value: whole when its key names a credential, else scrubbed as any value."""
        secret = value not in ("", None) and not isinstance(value, bool) and isinstance(value, str | int | float)
        m = _KEYS.fullmatch(key) if secret and isinstance(key, str) and self.policy != "off" else None
        if m is None:
            return self.scrub_tree(value, found)
        found.append(m.lastgroup or "secret")
        return f"[REDACTED:{m.lastgroup}]" if self.policy == "redact" else value


def _merge(secrets: list[Span], personal: list[Span]) -> list[Span]:
    """Secret spans, and the personal-data spans that overlap none of them or each other, in order."""
    out = list(secrets)
    for span in sorted(personal):
        if all(span[1] <= s or span[0] >= e for s, e, _ in out):
            out.append(span)
    return sorted(out)


NAMES = Redactor("redact", False)


def scrub_name(name: str) -> str:
    """A file name or id with any secret in it replaced (names become paths and ledger rows, which
    no policy may let a secret reach)."""
    return NAMES.scrub(name)[0]
