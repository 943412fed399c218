"""Render a generated chat as a Skype data export: one group conversation, messages newest first, each
with its sender's ``displayName`` and RichText content (markup-escaped)."""

import html

import orjson

from tests import strategies

STRATEGY = strategies.sessions()


def render(session):
    ids = {name: f"8:live:user{i}" for i, name in enumerate(sorted({t.speaker for t in session.turns}))}
    messages = [{
        "id": str(1_000_000 + n), "displayName": t.speaker, "originalarrivaltime": f"{t.time:%Y-%m-%dT%H:%M:%S}.000Z",
        "messagetype": "RichText", "version": 1, "content": html.escape(t.content, quote=False),
        "conversationid": "19:generated@thread.skype", "from": ids[t.speaker], "properties": None,
        "amsreferences": None,
    } for n, t in enumerate(session.turns)]
    export = {"userId": "8:live:user0", "exportDate": "2025-04-28T08:15:02.118Z", "conversations": [{
        "id": "19:generated@thread.skype", "displayName": "Generated", "version": 1, "properties": {},
        "threadProperties": None, "MessageList": messages[::-1]}]}
    return "messages.json", orjson.dumps(export, option=orjson.OPT_INDENT_2)
