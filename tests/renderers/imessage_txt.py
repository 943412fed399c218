"""Render a generated chat as imessage-exporter's text export: a time line (``%b %d, %Y %l:%M:%S %p``, some
with a read receipt), the sender, the text, a blank line; the first speaker is ``Me``."""


def _stamp(t, receipt: bool) -> str:
    hour = t.hour % 12 or 12
    line = f"{t:%b %d, %Y} {hour:>2}:{t:%M:%S} {'AM' if t.hour < 12 else 'PM'}"
    return line + (" (Read by them after 4 seconds)" if receipt else "")


def render(session):
    me = session.turns[0].speaker
    out = []
    for i, t in enumerate(session.turns):
        speaker = "Me" if t.speaker == me else t.speaker
        out.append(f"{_stamp(t.time, i % 3 == 1)}\n{speaker}\n{t.content}\n\n")
    return "Generated.txt", "".join(out).encode()


def expected(session):
    me = session.turns[0].speaker
    return [("Me" if t.speaker == me else t.speaker, t.content, t.time) for t in session.turns]
