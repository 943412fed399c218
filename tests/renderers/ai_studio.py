"""Render a generated chat as a Google AI Studio prompt file: chunks alternate ``user`` and ``model``.

AI Studio keeps no times and no names, so only the text and the role's name survive."""

import orjson

from tests import strategies

STRATEGY = strategies.sessions()


def _role(i):
    return "user" if i % 2 == 0 else "model"


def render(session):
    chunks = [{"text": t.content, "role": _role(i), "tokenCount": len(t.content.split())}
              for i, t in enumerate(session.turns)]
    doc = {"runSettings": {"model": "models/gemini-2.5-flash"}, "systemInstruction": {},
           "chunkedPrompt": {"chunks": chunks, "pendingInputs": [{"text": "", "role": "user"}]}}
    return "Generated prompt", orjson.dumps(doc, option=orjson.OPT_INDENT_2)


def expected(session):
    return [(_role(i), t.content, None) for i, t in enumerate(session.turns)]
