"""What makes a JSON object look like a chat message, whatever the format.

Two of an actor, a time and a content field, one of them the actor or the content. The gate's source
accounting (validators/accounting.py) walks exports with this rule, knowing nothing of any grammar;
JSON grammars measure their detection share on the same records, so both count the same things.
"""

from __future__ import annotations

ACTOR_KEYS = frozenset({
    "author", "sender", "sender_name", "senderName", "from", "from_id", "user", "user_id", "username",
    "user_name", "role", "speaker", "nick", "actor", "actor_id", "participant", "authorName",
    "creator", "sender_id",
})
TIME_KEYS = frozenset({
    "timestamp", "timestamp_ms", "create_time", "created_at", "createdAt", "created", "date", "date_unixtime",
    "time", "ts", "sent_at", "sentAt", "datetime", "inserted_at", "created_date", "createdDateTime",
    "origin_server_ts",
})
CONTENT_KEYS = frozenset({
    "content", "text", "parts", "message", "response", "body", "msg", "value", "photos", "photo", "sticker",
    "attachments", "files", "media", "file", "fragments",
})
TURN_TEXT_KEYS = CONTENT_KEYS | {"title"}
"""Fields whose text is a turn when a record is read as several interactions: its content, and a title
that carries the prompt (a Takeout activity entry's ``Prompted ...``)."""


def is_message_like(node: dict) -> bool:
    keys = node.keys()
    actor = not ACTOR_KEYS.isdisjoint(keys)
    content = not CONTENT_KEYS.isdisjoint(keys)
    return actor + (not TIME_KEYS.isdisjoint(keys)) + content >= 2 and (actor or content)
