"""Render a generated chat as DiscordChatExporter's CSV (quoted fields, ISO times with a zone) or, for an
odd number of turns, as KakaoTalk's ``Date,User,Message`` CSV (local times, no zone)."""

import csv
import io

from tests import strategies

STRATEGY = strategies.sessions()


def render(session):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    if len(session.turns) % 2:
        out.write("Date,User,Message\n")
        for t in session.turns:
            out.write(f"{t.time:%Y-%m-%d %H:%M:%S},")
            writer.writerow([t.speaker, t.content])
        return "KakaoTalk_Chat_Generated_2031-01-01-00-00-00.csv", out.getvalue().encode()
    writer.writerow(["AuthorID", "Author", "Date", "Content", "Attachments", "Reactions"])
    ids = {}
    for t in session.turns:
        ids.setdefault(t.speaker, str(100000 + len(ids)))
        writer.writerow([ids[t.speaker], t.speaker, t.time.strftime("%Y-%m-%dT%H:%M:%S+00:00"), t.content, "", ""])
    return "Guild - general [1234567890].csv", out.getvalue().encode()
