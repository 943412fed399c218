"""Personal data that a pattern alone cannot tell from a date or an order number: cards, IBANs, phones.

Each finder returns the spans of what it proves: a card number by the Luhn check (python-stdnum), an
IBAN by its country format and mod-97 checksum (python-stdnum), a phone number by Google's numbering
plan (``phonenumbers``, strict grouping: ``2024-01-15``, ``10.0.0.1`` and ``12:30:45`` are never
numbers). A pattern only proposes candidates.
"""

from __future__ import annotations

import phonenumbers
import regex
from stdnum import iban, luhn

# National numbers (without +country) are read as numbers of this region; international ones of any.
PHONE_REGION = "US"
_NATIONAL_DIGITS = min(phonenumbers.PhoneMetadata.metadata_for_region(PHONE_REGION).general_desc.possible_length)

# 13 to 19 digits in groups split by single spaces or dashes; the first digit names a card network
# (2-6), so an epoch in milliseconds (1...) is never taken for a card.
_CARD = regex.compile(r"(?<![\w.,-])[0-9]+(?:[ -][0-9]+)*(?![\w-]|[.,][0-9])")
_IBAN = regex.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{1,4}){3,8}(?![A-Za-z0-9])")
# seven digits or more with short separators between them: what a phone or a card needs at least
_LONG_NUMBER = regex.compile(r"[0-9](?:[ ().-]{0,2}[0-9]){6,}")
_SEP = regex.compile(r"[ -]")
_GROUP = regex.compile(r"[0-9]+")

Span = tuple[int, int, str]


def cards(text: str) -> list[Span]:
    """Card numbers: a window of whole digit groups holding 13-19 digits that passes the Luhn check
    (not inside something shaped like an IBAN, valid or not: its digits are an account's)."""
    if _LONG_NUMBER.search(text) is None:
        return []
    out: list[Span] = []
    shaped = [(m.start(), m.end()) for m in _IBAN.finditer(text)]
    for m in _CARD.finditer(text):
        if len(m.group()) >= 13:
            out.extend(s for s in _card_windows(m.group(), m.start())
                       if all(s[1] <= a or s[0] >= b for a, b in shaped))
    return out


def _card_windows(run: str, base: int) -> list[Span]:
    """The longest valid windows of groups in a run, left to right (a card beside another number)."""
    groups = [(g.start(), g.end()) for g in _GROUP.finditer(run)]
    out, i = [], 0
    while i < len(groups):
        for j in range(len(groups) - 1, i - 1, -1):
            start, end = groups[i][0], groups[j][1]
            digits = _SEP.sub("", run[start:end])
            if 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn.is_valid(digits):
                out.append((base + start, base + end, "card"))
                i = j
                break
        i += 1
    return out


def ibans(text: str) -> list[Span]:
    """IBANs: the longest prefix of a candidate (whole groups) whose checksum and country format hold."""
    out: list[Span] = []
    for m in _IBAN.finditer(text):
        candidate = m.group()
        while len(candidate.replace(" ", "")) >= 15:
            if iban.is_valid(candidate):
                out.append((m.start(), m.start() + len(candidate), "iban"))
                break
            candidate = candidate[:-1].rstrip()
    return out


def phones(text: str) -> list[Span]:
    """Phone numbers valid in the numbering plan and grouped as that plan groups them. The library
    reads only the numbers long enough to be one (as many digits as the region's shortest national
    number, or seven after a +), with two characters of context: it parses each candidate it meets,
    and a log's dates and counters would otherwise cost it most of its time."""
    out: list[Span] = []
    for start, end in _phone_windows(text):
        matcher = phonenumbers.PhoneNumberMatcher(text[start:end], PHONE_REGION,
                                                  leniency=phonenumbers.Leniency.STRICT_GROUPING)
        out.extend((start + m.start, start + m.end, "phone") for m in matcher)
    return out


def _phone_windows(text: str) -> list[tuple[int, int]]:
    windows: list[tuple[int, int]] = []
    for m in _LONG_NUMBER.finditer(text):
        digits = sum(c.isdigit() for c in m.group())
        plus = text[max(0, m.start() - 2):m.start()].rstrip(" (").endswith("+")
        if digits >= _NATIONAL_DIGITS or (plus and digits >= 7):
            start, end = max(0, m.start() - 2), min(len(text), m.end() + 2)
            if windows and start <= windows[-1][1]:
                windows[-1] = (windows[-1][0], end)
            else:
                windows.append((start, end))
    return windows


FINDERS = (cards, ibans, phones)
