"""What WhatsApp for Android keeps in ``msgstore.db``, as data: the tables and columns ``whatsapp_db.py``
reads in the two layouts the app has used, and the meaning of its message type codes. Nothing here is
code.

Sources: public forensic descriptions of the database and public loaders of it (the recent layout's
``message``/``chat``/``jid`` tables, with ``message_media``, ``message_location``, ``message_system``,
``message_revoked``, ``message_edit_info`` and ``message_quoted`` beside them; the older single
``messages`` table keyed by ``key_remote_jid``, with ``chat_list``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Layout:
    """One schema generation: which table holds the messages and what its columns are called."""

    name: str
    messages: str
    """The message table."""
    needs: tuple[str, ...]
    """Tables and columns (``table.column``) a database must have to be this layout."""
    chat: str
    """The message column naming its chat: a row id of ``chat`` (recent) or the chat's jid (old)."""
    from_me: str
    sender: str
    """The column naming who sent a group message: a row id of ``jid`` (recent) or a jid (old)."""
    text: str
    time: str
    kind: str
    """The column of the message type code."""
    key: str = "key_id"


RECENT = Layout("message", "message", ("message.chat_row_id", "message.from_me", "chat.jid_row_id", "jid.raw_string"),
                chat="chat_row_id", from_me="from_me", sender="sender_jid_row_id", text="text_data",
                time="timestamp", kind="message_type")
OLD = Layout("messages", "messages", ("messages.key_remote_jid", "messages.key_from_me", "messages.data"),
             chat="key_remote_jid", from_me="key_from_me", sender="remote_resource", text="data",
             time="timestamp", kind="media_wa_type")
LAYOUTS = (RECENT, OLD)
"""Tried in this order: a database in the middle of a migration holds both; the recent one is read."""

TYPES: dict[int, str] = {
    0: "text", 1: "image", 2: "audio", 3: "video", 4: "contact", 5: "location", 7: "system", 9: "document",
    13: "gif", 15: "deleted", 16: "live location", 20: "sticker",
}
"""``message_type`` (recent) / ``media_wa_type`` (old) codes as forensic descriptions name them; a code
not listed is kept as its number."""

MEDIA = frozenset({1, 2, 3, 4, 9, 13, 20})
"""Types whose turn is an attachment (kind ``media``)."""
LOCATION = frozenset({5, 16})
SYSTEM = frozenset({7})
DELETED = frozenset({15})
OLD_SYSTEM_STATUS = 6
"""In the old layout a group's notices (created, joined, left, subject changed) are rows with ``status`` 6."""
ME = "Me"
"""The database's owner: msgstore.db does not store the owner's name or number with the messages."""
