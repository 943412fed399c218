"""The record layouts of the generic JSON chat grammar (``json_chat.py``): one per platform, as data.

A layout says where a document keeps its message list and, by dotted paths into a record
(``creator.name``, ``from.user.displayName``, ``content.body``), who wrote a message, what it says,
when, and which records are system events rather than messages. Adding a platform whose export
is "a JSON document holding a list of message records" means adding a layout here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a platform's export keeps its messages and which record fields mean what."""

    name: str
    container: str
    """The document key whose value is the message list (``messages``, ``value``)."""
    marks: frozenset[str]
    """Keys every record of this layout has: how detection tells the platforms apart."""
    actor: tuple[str, ...]
    """Dotted paths of the author's name, first present wins."""
    text: tuple[str, ...]
    time: str
    clock: str
    """How ``time`` reads: ``iso`` (ISO 8601), ``ms`` (epoch milliseconds) or ``google`` (Takeout's
    ``Tuesday, March 2, 2021 at 10:15:22 AM UTC``)."""
    ident: str
    """Dotted path of the message id."""
    head: frozenset[str]
    """Top-level keys of the document this layout knows (others are format drift)."""
    known: frozenset[str]
    """Record keys this layout knows (others are format drift)."""
    kind: str | None = None
    """Dotted path of the record's type; a type outside ``messages`` is a system event."""
    messages: frozenset[str] = frozenset()
    event: str | None = None
    """Dotted path of a system event's details, shown as compact JSON after ``[type]``."""
    event_actor: tuple[str, ...] = ()
    """Dotted paths of the person behind a system event (``extra.actor``)."""
    html: str | None = None
    """Dotted path whose value ``html`` says the text is HTML (read as plain text)."""
    files: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(list key, name keys of an item): attachments shown as ``[file: name]`` marker lines."""
    bot: tuple[str, str | None] | None = None
    """(dotted path, value) that marks an automated author (role ``other``); value None: any non-null value."""
    deleted: tuple[str, ...] = ()
    """Dotted paths whose value (not null, not false) marks a deleted message (``extra.deleted``)."""
    title: tuple[str, ...] = ()
    """Top-level keys holding the conversation's name."""
    replies: str | None = None
    """A record key holding the record's replies as a nested list of records."""
    session: tuple[str, ...] = ()
    """Dotted paths of a record's conversation id (the session id, from the first record that has one)."""
    subtype: str | None = None
    """Dotted path of a message's sub-type (Matrix ``content.msgtype``), kept as ``extra.subtype``."""
    media: frozenset[str] = frozenset()
    """Sub-types whose text is only an attachment's name: ``[image: name]``, kind ``media``."""
    newest_first: bool = False
    """The order the platform lists messages in, when their times cannot tell (all equal, or as many
    steps back as forward): the Graph API lists a chat newest first."""


GOOGLE_CHAT = Layout(
    name="google-chat", container="messages", marks=frozenset({"creator", "created_date"}),
    actor=("creator.name", "creator.email"), text=("text",), time="created_date", clock="google",
    ident="message_id", head=frozenset({"messages"}),
    known=frozenset({"creator", "created_date", "updated_date", "text", "topic_id", "message_id", "annotations",
                     "attached_files", "message_state", "deleted_date", "reactions", "quoted_message_metadata",
                     "deletion_metadata", "drive_metadata", "emoji_reaction", "previous_message_versions"}),
    files=(("attached_files", ("export_name", "original_name")),), bot=("creator.user_type", "Bot"),
    deleted=("deleted_date", "deletion_metadata"),
)
MATRIX = Layout(
    name="matrix", container="messages", marks=frozenset({"sender", "origin_server_ts"}),
    actor=("sender",), text=("content.body",), time="origin_server_ts", clock="ms", ident="event_id",
    head=frozenset({"room_name", "room_creator", "topic", "export_date", "exported_by", "messages"}),
    known=frozenset({"type", "sender", "content", "origin_server_ts", "event_id", "room_id", "unsigned",
                     "state_key", "redacts", "age", "user_id", "prev_content", "decrypted"}),
    kind="type", messages=frozenset({"m.room.message", "m.sticker", "m.room.encrypted"}), event="content",
    event_actor=("sender",), deleted=("unsigned.redacted_because",), title=("room_name",), session=("room_id",),
    subtype="content.msgtype", media=frozenset({"m.image", "m.file", "m.video", "m.audio"}),
)
TEAMS = Layout(
    name="teams", container="value", marks=frozenset({"createdDateTime", "messageType"}),
    actor=("from.user.displayName", "from.application.displayName", "from.device.displayName", "from.user.id"),
    text=("body.content",), time="createdDateTime", clock="iso", ident="id",
    head=frozenset({"@odata.context", "@odata.count", "@odata.nextLink", "value"}),
    known=frozenset({"id", "replyToId", "etag", "messageType", "createdDateTime", "lastModifiedDateTime",
                     "lastEditedDateTime", "deletedDateTime", "subject", "summary", "chatId", "importance", "locale",
                     "webUrl", "channelIdentity", "policyViolation", "eventDetail", "from", "body", "attachments",
                     "mentions", "reactions", "messageHistory", "onBehalfOf", "replies", "@odata.type",
                     "replies@odata.context"}),
    kind="messageType", messages=frozenset({"message"}), event="eventDetail",
    event_actor=("eventDetail.initiator.user.displayName", "eventDetail.initiator.application.displayName"),
    html="body.contentType", files=(("attachments", ("name", "contentUrl")),), deleted=("deletedDateTime",),
    replies="replies", session=("chatId", "channelIdentity.channelId"), bot=("from.application", None),
    newest_first=True,
)
LAYOUTS: tuple[Layout, ...] = (GOOGLE_CHAT, MATRIX, TEAMS)
"""Every platform this grammar reads; detection and parsing try them in this order."""
