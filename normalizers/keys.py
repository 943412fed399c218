"""Session keys: which conversation a session is, the same across every export of it (issue #15).

A session key is ``<grammar>:<id>``. Where the source names the conversation (``ParsedSession.id_source``
starts with ``source:``: ChatGPT's and Claude's conversation ids, Telegram's chat id, Slack's and
Discord's channel ids, agent logs' session ids...) the key is that id: ``chatgpt:<conversation id>``.
A few grammars take their id from a file or folder name that the platform itself chose and keeps
(``KEYED_BY_NAME``: a Slack export's channel folder, an agent's session file named by its id).

Every other session (WhatsApp, IRC, transcripts, Markdown... ids from a file name the user may rename,
or none) is keyed by a fingerprint, ``<grammar>:fp-<16 hex>``: the sha256 of the grammar, the chat's
title (``key_title``: normalised as content is, without a download's copy mark `` (1)``) and the
earliest ``KEY_MESSAGES`` messages, each as a *message print*:

- the author (``speakerName``),
- the minute within the hour of its time (``date[14:16]``; empty without a time): a phone in another
  zone moves a chat's times by whole hours, which leaves the minute as it was,
- the sha256 of its content after ``normal_content``: Unicode NFC, CR/CRLF as LF, every run of
  whitespace as one space, trimmed; a media turn (``kind`` ``media``: WhatsApp's ``<Media omitted>``
  in one export is the attachment's file name in another) counts as the token ``<media>``.

The participants are in the key as the authors of those earliest messages (who joins later does not
change the key). A chat with fewer than ``KEY_MESSAGES`` messages is keyed by those it has, so when it
grows its fingerprint changes: ``continues`` tells the ledger's index (flows) that the new snapshot
starts with the known one's messages. WhatsApp drops the oldest messages of a long chat from later
exports: the ledger keeps every message print of an id-less session, and a new snapshot whose earliest
prints are found in order inside a known session of the same grammar and ``key_title`` (``continues``)
takes that session's key. Two chats that start with the same greeting differ by author, title or the next
messages (tests/normalizers/test_keys.py).
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

KEY_MESSAGES = 3
"""K: how many of the earliest messages an id-less key is made of."""
KEYED_BY_NAME = frozenset({"slack", "slack-api", "claude-code", "gemini-cli", "cline", "openhands", "codex",
                           "copilot-chat"})
"""Grammars whose file-name id is the platform's own (a channel folder, a session or task id)."""
MESSAGE_ID_FIELDS: dict[str, tuple[str, ...]] = {
    "chatgpt": ("messageId",), "claude": ("uuid",), "claude-code": ("uuid",), "codex": ("itemId",),
    "deepseek": ("messageId",), "discord": ("messageId",), "grok": ("responseId",),
    "hangouts": ("eventId",), "json-chat": ("messageId",), "jsonl": ("messageId",),
    "open-webui": ("messageId",), "skype": ("messageId",), "slack": ("ts",), "slack-api": ("ts",),
    "telegram": ("messageId",), "telegram-html": ("messageId",), "gemini-cli": ("id",),
    "copilot-chat": ("requestId",),
}
"""Where a grammar keeps the platform's message id in ``sourceFields`` (the merge matches on it)."""

_SPACE = regex.compile(r"\s+")
_COPY_MARK = regex.compile(r" \(\d{1,3}\)$")
MEDIA = "<media>"


@dataclass(frozen=True, slots=True)
class Message:
    """What a message print is made of (an interaction's author, time, content and kind)."""

    author: str
    date: str | None
    content: str
    kind: str = "message"


def normal_content(content: str, kind: str = "message") -> str:
    """The content as prints and matching compare it (module docstring)."""
    if kind == "media":
        return MEDIA
    text = unicodedata.normalize("NFC", content.replace("\r\n", "\n").replace("\r", "\n"))
    return _SPACE.sub(" ", text).strip()


def content_hash(content: str, kind: str = "message") -> str:
    """sha256 (hex) of the normalised content."""
    return hashlib.sha256(normal_content(content, kind).encode("utf-8", "surrogatepass")).hexdigest()


def print_of(author: str, date: str | None, digest: str) -> str:
    """A message's print (16 hex digits) from its author, time and ``content_hash``."""
    payload = "\x1f".join((author, date[14:16] if date else "", digest))
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def message_print(message: Message) -> str:
    """A message's print: author, minute within the hour, normalised content."""
    return print_of(message.author, message.date, content_hash(message.content, message.kind))


def message_prints(messages: Iterable[Message]) -> list[str]:
    """The prints of messages in order (what the ledger's index keeps for an id-less session)."""
    return [message_print(m) for m in messages]


def key_title(title: str | None) -> str:
    """The title as keys read it: NFC, whitespace normalised, without the copy mark ``(1)`` that a
    browser or file manager adds to a second download of the same export."""
    return _COPY_MARK.sub("", normal_content(title or ""))


def fingerprint(grammar: str, title: str | None, earliest: Sequence[Message]) -> str:
    """The id-less key's fingerprint (16 hex) of a chat's title and its earliest messages."""
    prints = message_prints(earliest[:KEY_MESSAGES])
    payload = "\x1e".join((grammar, key_title(title), *prints))
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def keyed_by_id(grammar: str, session_id: str | None, id_source: str) -> bool:
    """Whether a session's key is its id (the source's own, or a platform-chosen name)."""
    if not session_id:
        return False
    return id_source.startswith("source:") or (grammar in KEYED_BY_NAME and id_source.startswith("file-"))


def session_key(grammar: str, session_id: str | None, id_source: str, title: str | None,
                earliest: Sequence[Message]) -> tuple[str, str]:
    """(sessionKey, sessionKeySource) for a session: its id where it has one of the platform's, else
    the fingerprint of its title and earliest messages."""
    if keyed_by_id(grammar, session_id, id_source):
        return f"{grammar}:{session_id}", f"the session id ({id_source})"
    n = min(len(earliest), KEY_MESSAGES)
    return (f"{grammar}:fp-{fingerprint(grammar, title, earliest)}",
            f"fingerprint of the title and the earliest {n} messages (author, minute, content)")


def continues(earliest: Sequence[str], known: Sequence[str]) -> bool:
    """Whether a snapshot whose earliest message prints are ``earliest`` is the chat whose prints are
    ``known`` (in order): its first ``KEY_MESSAGES`` prints appear consecutively in ``known`` (the
    older messages were dropped from the new export), or ``known`` is shorter than that and the new
    snapshot starts with all of it (a short chat that grew)."""
    head = list(earliest[:KEY_MESSAGES])
    if not head or not known:
        return False
    if len(known) < KEY_MESSAGES:
        return list(earliest[:len(known)]) == list(known)
    width = len(head)
    return any(list(known[i:i + width]) == head for i in range(len(known) - width + 1))
