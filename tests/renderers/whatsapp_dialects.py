"""Render one seeded chat in any WhatsApp header template (``parsers/grammars/_whatsapp_data.py``).

The chat has what real exports have: the encryption notice and a group event (author-less System
lines), a multi-line message, a message with ``: `` in its text, a media placeholder, noon and
midnight on 12 h clocks, and dates on both sides of the 12th so the day/month order is decided.
Header spaces vary line by line between a space, NBSP and NNBSP (before a meridiem), iOS headers
get U+200E marks, and every other rendering uses CRLF line ends.
"""

from __future__ import annotations

import random
from datetime import datetime

from parsers.grammars._whatsapp_data import MERIDIEMS
from parsers.grammars._whatsapp_headers import Template

E2E = "Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read them."
CHAT: tuple[tuple[str | None, str, datetime], ...] = (
    (None, E2E, datetime(2023, 3, 9, 0, 5)),
    (None, "Ana Lima created group \"Trip: Lisbon\"", datetime(2023, 3, 9, 0, 5)),
    ("Ana Lima", "Flights are booked!\nDeparture 07:40\n\nReturn on Sunday", datetime(2023, 3, 9, 12, 0)),
    ("Ben Okafor", "Great: I will bring the map", datetime(2023, 3, 9, 12, 31)),
    ("Ben Okafor", "<Media omitted>", datetime(2023, 3, 14, 18, 2)),
    ("Chloé", "Who books the hotel?", datetime(2023, 3, 14, 23, 59)),
    ("Ana Lima", "me", datetime(2023, 4, 2, 9, 7)),
)


def expected() -> list[tuple[str, str, str, datetime]]:
    """(speaker, kind, content, time) of every turn, whatever the template."""
    out = []
    for speaker, text, when in CHAT:
        if speaker is None:
            out.append(("System", "system", text, when))
        else:
            out.append((speaker, "media" if text.startswith("<Media") else "message", text, when))
    return out


def _directive(code: str, when: datetime, template: Template, pad: bool) -> str:
    hour12 = when.hour % 12 or 12
    am, pm = MERIDIEMS[template.meridiem] if template.meridiem else (("",), ("",))
    return {
        "%d": f"{when.day:02d}" if pad else str(when.day),
        "%m": f"{when.month:02d}" if pad else str(when.month),
        "%y": f"{when:%y}", "%Y": f"{when:%Y}",
        "%H": f"{when:%H}", "%I": str(hour12), "%M": f"{when:%M}", "%S": f"{when:%S}",
        "%p": (am if when.hour < 12 else pm)[0],
    }[code]


def header(template: Template, when: datetime, variant: int) -> str:
    """One header in a template; ``variant`` picks the spaces and marks of this line."""
    pad = any(c in "".join(template.seps) for c in ".-")
    text = template.text
    space = (" ", "\u00a0", "\u202f")[variant % 3]
    if " %p" in text:
        text = text.replace(" %p", space + "%p")
    out, i = [], 0
    while i < len(text):
        if text[i] == "%" and i + 1 < len(text):
            out.append(_directive(text[i:i + 2], when, template, pad))
            i += 2
        else:
            out.append(text[i])
            i += 1
    line = "".join(out)
    if template.open.strip() and variant % 2:
        line = "\u200e" + line
    return line


def render(template: Template, seed: int = 0) -> tuple[str, bytes]:
    """(file name, bytes) of the seeded chat in one template."""
    rng = random.Random(seed)
    lines = []
    for speaker, text, when in CHAT:
        head = header(template, when, rng.randrange(6))
        lines.append(head + (f"{speaker}: {text}" if speaker else text))
    end = "\r\n" if seed % 2 else "\n"
    return f"export-{template.id}.txt", (end.join("\n".join(lines).split("\n")) + end).encode()
