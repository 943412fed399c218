"""WhatsApp header templates (``_whatsapp_data.TEMPLATES``) compiled to regexes.

Each template is split into its parts: what opens it (``[`` or nothing), its three date fields and
their separators, the connector between date and clock (``, ``, `` klo ``, `` à ``...), the clock
(separators, seconds, a meridiem before or after) and what closes it (``] ``, `` - ``, ``. - ``).
``template_regex`` compiles one template exactly (tests, dialect names). ``HEADER_BODY`` is the
scanner's pattern: the union of every template, part by part, so one factored regex reads every
dialect, in any mix, as fast as a single one. Date fields stay positional (``d1 d2 d3``): which is
the day is decided from the whole file's dates, not from a template.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from parsers.columns import unnamed

from ._whatsapp_data import MERIDIEMS, TEMPLATES

MARKS = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
SP = "[ \u00a0\u202f\u200e\u200f]"  # a space in a header: WhatsApp uses NBSP, NNBSP and marks there
_DIRECTIVE = re.compile(r"%[dmyYHIMSp]")
_DATE_D, _CLOCK_D = set("dmyY"), set("HIMSp")


@dataclass(frozen=True)
class Template:
    id: str
    text: str
    meridiem: str | None
    open: str
    seps: tuple[str, str]
    connector: str
    clock: str
    close: str


def parse_template(tid: str, text: str, meridiem: str | None) -> Template:
    """Cut one template into its parts (see the module docstring)."""
    marks = list(_DIRECTIVE.finditer(text))
    dates = [m for m in marks if m.group()[1] in _DATE_D]
    clocks = [m for m in marks if m.group()[1] in _CLOCK_D]
    if len(dates) != 3 or not clocks or clocks[0].start() < dates[-1].end():
        raise ValueError(f"template {tid}: three date fields, then a clock")
    return Template(
        tid, text, meridiem,
        open=text[:dates[0].start()],
        seps=(text[dates[0].end():dates[1].start()], text[dates[1].end():dates[2].start()]),
        connector=text[dates[2].end():clocks[0].start()],
        clock=text[clocks[0].start():clocks[-1].end()],
        close=text[clocks[-1].end():],
    )


PARSED: tuple[Template, ...] = tuple(parse_template(*t) for t in TEMPLATES)


def _literal(text: str, space: str = f"{SP}+") -> str:
    """A template literal as a regex: each run of spaces is any run of WhatsApp spaces."""
    return space.join(re.escape(part) for part in re.split(r" +", text))


def _word(word: str) -> str:
    """A meridiem word: its dots optional, its spaces any WhatsApp space or none."""
    return "".join(r"\.?" if c == "." else f"{SP}?" if c == " " else re.escape(c) for c in word)


def _alternation(parts: set[str]) -> str:
    return "(?:" + "|".join(sorted(parts, key=lambda p: (-len(p), p))) + ")"


_AM = {w for am, _ in MERIDIEMS.values() for w in am}
_PM = {w for _, pm in MERIDIEMS.values() for w in pm}
_FIRST_CHARS = "".join(sorted({c for w in _AM | _PM for c in (w[0].lower(), w[0].upper())}))
MERIDIEM_WORDS = "(?i:" + _alternation({_word(w) for w in _AM | _PM})[3:]
"""Any meridiem word of the data (none starts with a character the case-insensitive test of ``_FIRST_CHARS``
lacks: no simple case folding maps another character to a, p, A or P)."""
MERIDIEM = f"(?=[{_FIRST_CHARS}])" + MERIDIEM_WORDS
"""Any meridiem word of the data; a first-character test spares the alternatives on a header's dash."""
_NORMAL = str.maketrans("", "", ". \u00a0\u202f" + MARKS)
PM_WORDS = frozenset(w.translate(_NORMAL).lower() for w in _PM)


def _clock_piece(templates: tuple[Template, ...], meridiem: str = MERIDIEM) -> str:
    seps = {re.escape(c) for t in templates for c in re.findall(r"%[HIM](.)%", t.clock)}
    cs = _alternation(seps)
    return (rf"(?P<clock>(?:(?P<mb>{meridiem}){SP}*)?(?P<h>\d{{1,2}}){cs}(?P<mi>\d{{2}})(?:{cs}(?P<s>\d{{2}}))?"
            rf"(?:{SP}*(?P<ma>{meridiem}))?)")


def _date_piece(templates: tuple[Template, ...]) -> str:
    seps = {s for t in templates for s in t.seps}
    single = "".join(sorted(re.escape(s) for s in seps if len(s) == 1))
    sep = "(?:" + "|".join([f"[{single}]", *sorted(_literal(s, f"{SP}*") for s in seps if len(s) > 1)]) + ")"
    return rf"(?P<date>(?P<d1>\d{{1,4}}){sep}(?P<d2>\d{{1,2}}){sep}(?P<d3>\d{{1,4}}))"


def _connector_piece(templates: tuple[Template, ...]) -> str:
    """The connectors, the commonest first (``, `` and a space): the scanner tries them in order."""
    parts = {_literal(t.connector) for t in templates}
    common = [p for p in (f",{SP}+", f"{SP}+") if p in parts]
    return "(?:" + "|".join(common + sorted(parts - set(common), key=lambda p: (-len(p), p))) + ")"


def _closes(templates: tuple[Template, ...]) -> tuple[str, str, str]:
    """What may follow the clock: (an optional dot, a bracketed header's ``]``, another header's dash)."""
    dashes = {t.close.strip(" .")[0] for t in templates if not t.open.strip()}
    dot = r"\.?" if any(t.close.startswith(".") for t in templates) else ""
    return dot, rf"[{MARKS}]*\]", rf"{SP}+[{''.join(map(re.escape, sorted(dashes)))}]"


def _close_piece(templates: tuple[Template, ...]) -> str:
    """What follows the clock: an optional dot, then ``]`` for bracketed headers or a dash."""
    dot, bracket, dash = _closes(templates)
    return rf"{dot}(?(open){bracket}|{dash}){SP}[{MARKS}]*"


AUTHOR_MAX = 128
"""The longest author a header is read with: everything before the first ': ' within this many
characters is the author. A contact's name as saved in the phone has no length limit of its own, and
names with an affiliation in parentheses run past 60 (``María José Fernández-Castro (Universidad
Politécnica de Madrid)`` is 63); an author-less notice that holds ': ' is still a notice, by its
event phrase (``Ann changed the subject to "Plans: v2"``)."""

DATE = _date_piece(PARSED)
CONNECTOR = _connector_piece(PARSED)
CLOCK = _clock_piece(PARSED)
STAMP = rf"(?P<stamp>{DATE}{CONNECTOR}{CLOCK})"
HEADER_BODY = rf"[{MARKS}]*(?P<open>\[)?[{MARKS}]*{STAMP}{_close_piece(PARSED)}"
"""The union of every template: marks, an optional ``[``, the stamp, then the close."""
CLOCK_ONLY = re.compile(CLOCK)


def _line_test() -> str:
    """``HEADER_BODY`` as a test of a line's start with neither a conditional nor a lookahead, which Rust's
    regex lacks: its bracketed and its dashed headers as two alternatives (only a ``[`` opens the first; a
    stamp starts with a digit), and its meridiem words without their first-character test. Unnamed."""
    stamp = DATE + CONNECTOR + _clock_piece(PARSED, MERIDIEM_WORDS)
    dot, bracket, dash = _closes(PARSED)
    return unnamed(rf"^(?:[{MARKS}]*\[[{MARKS}]*{stamp}{dot}{bracket}|[{MARKS}]*{stamp}{dot}{dash}){SP}")


HEADER_LINE = re.compile(_line_test())
"""A line that starts with ``HEADER_BODY`` (which matches wherever this does: what follows it is optional)."""


def template_regex(template: Template) -> re.Pattern:
    """The exact regex of one template (a header line's start, up to the author)."""
    out = [rf"[{MARKS}]*", _literal(template.open, f"{SP}*"), rf"[{MARKS}]*"]
    pos = 0
    text = template.text[len(template.open):]
    for m in _DIRECTIVE.finditer(text):
        out.append(_literal(text[pos:m.start()]))
        out.append(_DIRECTIVE_RE[m.group()] if m.group() != "%p" else _meridiem_of(template))
        pos = m.end()
    out.append(_literal(text[pos:].rstrip(" ")) + f"{SP}[{MARKS}]*")
    return re.compile("".join(out))


_DIRECTIVE_RE = {"%d": r"\d{1,2}", "%m": r"\d{1,2}", "%y": r"\d{2}", "%Y": r"\d{4}", "%H": r"\d{1,2}",
                 "%I": r"\d{1,2}", "%M": r"\d{2}", "%S": r"\d{2}"}


def _meridiem_of(template: Template) -> str:
    am, pm = MERIDIEMS[template.meridiem or "en"]
    return _alternation({_word(w) for w in am + pm})


def clock_delta(clock: str) -> timedelta | None:
    """The time of day of a header's clock (any template's), or None when it is not a clock time.

    An hour above 12 ignores the meridiem (``13:37:00 p.m.`` occurs in real exports); hour 0 is the
    0-11 clock some locales pair with a meridiem (``午前0:08``, ``00:08 a. m.``): midnight's hour,
    noon's after PM."""
    m = CLOCK_ONLY.fullmatch(clock)
    if m is None:
        return None
    hour, word = int(m["h"]), m["mb"] or m["ma"]
    if word and hour <= 12:
        pm = word.translate(_NORMAL).lower() in PM_WORDS
        hour = (12 if hour == 12 else hour + 12) if pm else (0 if hour == 12 else hour)
    minute, second = int(m["mi"]), int(m["s"] or 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    return timedelta(hours=hour, minutes=minute, seconds=second)
