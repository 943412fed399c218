"""Secret and PII redaction: find keys and tokens in text, replace them with typed placeholders.

One compiled alternation with a named group per type, so a turn is scanned once. Policy (from
settings): ``redact`` replaces every finding with ``[REDACTED:<type>]``, ``report`` only counts and
lists them, ``off`` does nothing. Findings are reported by type and location, never by value.
E-mail addresses and phone numbers are found only when ``redact_pii`` is set.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

import orjson
import regex

SECRET_PATTERNS: dict[str, str] = {
    # PEM and PGP private key blocks; a block with no END line is redacted to the end of the text
    "private_key": r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                   r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    "anthropic_api_key": r"\bsk-ant-[A-Za-z0-9_-]{20,}",
    "openai_api_key": r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
    "aws_access_key_id": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    "aws_secret_access_key": r"(?i:aws_?secret_?access_?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}\b",
    "github_token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    "slack_token": r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    "slack_webhook": r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]+",
    "google_api_key": r"\bAIza[0-9A-Za-z_-]{35}\b",
    "jwt": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    # the password runs to the last @ before the host (a password may hold @)
    "url_password": r"(?<=\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)[^\s/]+(?=@[^\s@/]+)",
    # DB_PASSWORD=..., password: ..., "password": "..." (a JSON key), pwd='...'
    "password_assignment": r"(?<=(?<![A-Za-z])(?i:password|passwd|pwd)[\"']?\s*[:=]\s*[\"']?)[^\s\"']{6,}",
}
PII_PATTERNS: dict[str, str] = {
    "email": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
    "phone": r"(?<![\w+])\+?\d(?:[ ().-]?\d){7,14}(?!\w)",
}


# Literal fragments one of which every secret pattern contains: a cheap stdlib search on these
# decides whether the full pattern needs to run at all (most turns hold no secret).
# (case folded by hand: re.IGNORECASE makes the search several times slower.)
_TRIGGERS = re.compile(
    r"sk-|AKIA|ASIA|[Aa][Ww][Ss]_?[Ss][Ee][Cc][Rr][Ee][Tt]|gh[pousr]_|github_pat_|xox[abposr]-|hooks\.slack"
    r"|AIza|eyJ|PRIVATE KEY|://|[Pp][Aa][Ss][Ss][Ww]|[Pp][Ww][Dd]"
)
_PII_TRIGGERS = re.compile(r"@|\d{3}")


def triggers() -> str:
    """The trigger words as a pattern both Python's and Rust's regex read alike (column-wise search)."""
    return _TRIGGERS.pattern


def pii_triggers() -> str:
    return _PII_TRIGGERS.pattern


# Lower-case words one of which is in the lower-cased text of every trigger match (tested): a few
# substring tests are several times faster than the trigger pattern's scan of a text with none.
_TRIGGER_WORDS = ("sk-", "akia", "asia", "secret", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox",
                  "hooks.slack", "aiza", "eyj", "private key", "://", "passw", "pwd")


def may_trigger(text: str, pii: bool = False) -> bool:
    """False when the text surely holds no trigger (then no secret and, without ``pii``, nothing)."""
    if pii:
        return _TRIGGERS.search(text) is not None or _PII_TRIGGERS.search(text) is not None
    low = text.lower()
    for word in _TRIGGER_WORDS:  # noqa: SIM110 (a plain loop: any() with a generator costs 3x per call)
        if word in low:
            return True
    return False


def _compile(patterns: dict[str, str]) -> regex.Pattern:
    return regex.compile("|".join(f"(?P<{k}>{v})" for k, v in patterns.items()))


_SECRETS = _compile(SECRET_PATTERNS)
_WITH_PII = _compile(SECRET_PATTERNS | PII_PATTERNS)


@dataclass(frozen=True, slots=True)
class Finding:
    type: str
    start: int
    end: int


class Redactor:
    """Built once per run from the settings; ``scrub`` is called per text field."""

    def __init__(self, policy: str, pii: bool) -> None:
        self.policy = policy
        self.pii = pii
        self._pattern = _WITH_PII if pii else _SECRETS

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
        hits = {m.start() for m in _TRIGGERS.finditer(joined)}
        if self.pii:
            hits.update(m.start() for m in _PII_TRIGGERS.finditer(joined))
        return {bisect_right(starts, h) - 1 for h in hits}

    def scrub(self, text: str) -> tuple[str, list[str]]:
        """The text to write and the types found in it, in order."""
        if self.policy == "off" or not text:
            return text, []
        if not _TRIGGERS.search(text) and not (self.pii and _PII_TRIGGERS.search(text)):
            return text, []
        found: list[str] = []

        def replace(m: regex.Match) -> str:
            kind = m.lastgroup or "secret"
            found.append(kind)
            return f"[REDACTED:{kind}]" if self.policy == "redact" else m.group(0)

        out = self._pattern.sub(replace, text)
        return (out if self.policy == "redact" else text), found

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
        """A JSON-like value with every string (keys included) scrubbed; types found go to ``found``."""
        if isinstance(value, str):
            out, kinds = self.scrub(value)
            found.extend(kinds)
            return out
        if isinstance(value, dict):
            return {self.scrub_tree(k, found) if isinstance(k, str) else k: self.scrub_tree(v, found)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub_tree(v, found) for v in value]
        return value


NAMES = Redactor("redact", False)


def scrub_name(name: str) -> str:
    """A file name or id with any secret in it replaced (names become paths and ledger rows, which
    no policy may let a secret reach)."""
    return NAMES.scrub(name)[0]
