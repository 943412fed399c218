"""Render a generated chat as a Claude.ai export in its newer layout (content blocks with start and stop
times, parent links). Speakers become free-form senders; every other turn after the first also
gets a retried sibling, and the conversation names its current leaf, so the round trip checks that
retries stay out of the interactions."""

import orjson

ROOT = "00000000-0000-4000-8000-000000000000"


def _message(uuid, parent, speaker, when, text):
    stamp = when.isoformat() + ".000000Z"
    block = {"start_timestamp": stamp, "stop_timestamp": stamp, "flags": None, "type": "text", "text": text,
             "citations": []}
    return {"uuid": uuid, "text": "", "content": [block], "sender": speaker, "created_at": stamp, "updated_at": stamp,
            "attachments": [], "files": [], "files_v2": [], "sync_sources": [], "parent_message_uuid": parent}


def render(session):
    messages, parent = [], ROOT
    for i, t in enumerate(session.turns):
        if i % 2 == 1:
            messages.append(_message(f"r{i}", parent, t.speaker, t.time, f"a retried version of: {t.content}"))
        messages.append(_message(f"m{i}", parent, t.speaker, t.time, t.content))
        parent = f"m{i}"
    conv = [{"uuid": "c1", "name": "generated", "summary": "", "created_at": None, "updated_at": None,
             "account": {"uuid": "acct-1"}, "current_leaf_message_uuid": parent, "chat_messages": messages}]
    return "conversations.json", orjson.dumps(conv)
