"""Render a generated chat as saved Slack Web API history pages: newest first, two messages a page; one page
alone, pages in a JSON array, or pages one per line (by the number of turns), every third message a thread
reply repeated in a conversations.replies page."""

from datetime import UTC

import orjson


def _messages(session):
    ids = {name: f"U{i + 1:04d}" for i, name in enumerate(sorted({t.speaker for t in session.turns}))}
    return [{"type": "message", "user": ids[t.speaker], "text": t.content,
             "ts": f"{int(t.time.replace(tzinfo=UTC).timestamp())}.{i:06d}",
             "user_profile": {"display_name": t.speaker, "real_name": t.speaker}}
            for i, t in enumerate(session.turns)]


def render(session):
    messages = _messages(session)
    newest = messages[::-1]
    if len(newest) <= 2:
        page = {"ok": True, "messages": newest, "has_more": False, "response_metadata": {"next_cursor": ""}}
        return "C0GEN12345.json", orjson.dumps(page, option=orjson.OPT_INDENT_2)
    pages = [{"ok": True, "messages": newest[i:i + 2], "has_more": i + 2 < len(newest)}
             for i in range(0, len(newest), 2)]
    # The last message, as a reply in a thread of one, is also in a replies page: one turn, not two.
    parent, reply = messages[-2], messages[-1]
    parent["thread_ts"] = parent["ts"]
    reply["thread_ts"] = parent["ts"]
    pages.append({"ok": True, "messages": [parent, reply], "has_more": False})
    if len(messages) % 2:
        return "history.json", orjson.dumps(pages, option=orjson.OPT_INDENT_2)
    return "history.json", b"\n".join(orjson.dumps(p) for p in pages) + b"\n"
