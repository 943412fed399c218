"""Render a generated chat as Takeout's Gemini Apps activity: turns paired into a prompt entry and its
response, the list newest first.

The file names no one: prompts are the user's, responses Gemini's, and a response has its prompt's time."""

import html

import orjson

from tests import strategies

STRATEGY = strategies.sessions()


def _html(text):
    return "".join(f"<p>{html.escape(line)}</p>" for line in text.split("\n"))


def render(session):
    turns = session.turns
    entries = []
    for k in range(0, len(turns), 2):
        entry = {"header": "Gemini Apps", "title": f"Prompted {turns[k].content}",
                 "time": turns[k].time.strftime("%Y-%m-%dT%H:%M:%S.123Z"), "products": ["Gemini Apps"],
                 "activityControls": ["Gemini Apps Activity"]}
        if k + 1 < len(turns):
            entry["safeHtmlItem"] = [{"html": _html(turns[k + 1].content)}]
        entries.append(entry)
    return "My Activity.json", orjson.dumps(entries[::-1], option=orjson.OPT_INDENT_2)


def expected(session):
    turns = session.turns
    return [("User" if i % 2 == 0 else "Gemini", t.content, turns[i - i % 2].time) for i, t in enumerate(turns)]
