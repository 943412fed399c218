"""Render a generated chat as a LINE text export: title and save lines, a date line per day, one
``HH:MM<TAB>name<TAB>text`` line per message (multi-line messages in double quotes), CRLF line ends."""


def render(session):
    out = ["[LINE] Chat history with Generated", "Saved on: 2031/01/01 00:00", ""]
    day = None
    for t in session.turns:
        if t.time.date() != day:
            day = t.time.date()
            out.append(f"{t.time:%Y/%m/%d}({t.time:%a})")
        text = f'"{t.content}"' if "\n" in t.content else t.content
        out.append(f"{t.time:%H:%M}\t{t.speaker}\t{text}")
    return "[LINE] Chat history with Generated.txt", ("\r\n".join(out) + "\r\n").encode()


def expected(session):
    """LINE keeps minutes, not seconds."""
    return [(t.speaker, t.content, t.time.replace(second=0)) for t in session.turns]
