"""Session keys: which conversation a session is; exports are the same conversation only on proof (#15, #25).

A session key is ``<grammar>:<id>[@<scope>]``. Where the source names the conversation
(``ParsedSession.id_source`` starts with ``source:``, or a grammar of ``KEYED_BY_NAME`` takes it from a
file or folder name the platform chose) the id is in the key, and the key is **global** only where the
platform guarantees the id is unique across accounts and exports (``id_scope``): ChatGPT's and Claude's
conversation ids, Discord snowflakes, Telegram supergroup and channel ids, any id that is a UUID, and
Slack channel ids *with their workspace* (``@<team id>``). Any other id is scoped: by the exporting
account where the export says who it is (Telegram's ``personal_information.user_id``: ``@acct-<id>``,
``@dm-<id>`` for a one-to-one chat, whose id is the peer's and is never another account's conversation),
else by the export itself (``@src-<first 16 hex of its sha256>``), so a bot's or a contact's id, a
basic group's id, a Slack folder's name or a log's ``conversation_id: 1`` never makes two people's
exports one document.

Every other session (WhatsApp, IRC, transcripts, Markdown...) is keyed by a fingerprint scoped by its
export, ``<grammar>:fp-<16 hex>``: the sha256 of the grammar, the export (source sha256), the chat's
title (``key_title``) and the *identity prints* of its earliest ``KEY_MESSAGES`` messages that are not
system lines (``identity_print``: the author and the content after ``identity_content``; no time).

Exports of one conversation under two scoped keys become one only on proof, which flows/core/snapshots.py
decides from the ledger's index of *index prints* (``index_prints``: per non-system message its
identity print, an author print and its UTC time) with ``evidence``:

- the messages both hold: same author and content (``identity_content``: NFC, whitespace, typography
  folded), paired one to one at one time offset that is a whole number of quarter hours up to 26 h
  (a phone in another zone, Kolkata's half hour included) within ``tolerance`` seconds;
- **proof** (``Evidence.proof``): the same participant set (authors of non-system messages), and at least
  ``PROOF_MESSAGES`` paired messages that are not among the opening ``KEY_MESSAGES`` lines of *both*
  (an auto-greeting every customer of a business gets is no evidence);
- **suggestive** (``Evidence.possible``): any paired message short of proof: the two stay two
  documents and are linked as "possibly the same conversation" for a person to merge or split.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import polars as pl
import polars_hash as plh
import regex

KEY_MESSAGES = 3
"""K: how many of the earliest messages an id-less key is made of (and the opening lines proof ignores)."""
PROOF_MESSAGES = 2
"""How many paired messages beyond the opening lines prove two exports are one conversation."""
MAX_SHIFT_SECONDS = 26 * 3600
"""Zone offsets run from -12 to +14 hours: two exports differ by at most 26."""
SHIFT_STEP_SECONDS = 900
"""Zone offsets are whole quarter hours (India +5:30, Nepal +5:45)."""
KEYED_BY_NAME = frozenset({"slack", "slack-api", "claude-code", "gemini-cli", "cline", "openhands", "codex",
                           "copilot-chat"})
"""Grammars whose file-name id is the platform's own (a channel folder, a session or task id)."""
GLOBAL_GRAMMARS = frozenset({"chatgpt", "claude", "discord"})
"""Grammars whose conversation ids are unique across accounts (UUIDs, Discord snowflakes)."""
SNOWFLAKE_SOURCE = "channel id in the exporter's file name"
"""The id source of DiscordChatExporter's file names (a Discord snowflake, whichever grammar reads it)."""
TELEGRAM_GLOBAL_TYPES = frozenset({"public_supergroup", "private_supergroup", "public_channel", "private_channel"})
"""Telegram chat types whose id (and message ids) are the same for every member."""
TELEGRAM_DIRECT_TYPES = frozenset({"personal_chat", "bot_chat", "saved_messages"})
"""Telegram chats of one account with one peer: their id is the peer's, so the same id in two accounts'
exports is two conversations (``@dm-<account>``: never resolved with another account's)."""
SCOPED_KINDS = ("acct-", "src-")
"""Scopes a person's export is keyed within: their exports may be one conversation on proof."""
MESSAGE_ID_FIELDS: dict[str, tuple[str, ...]] = {
    "chatgpt": ("messageId",), "claude": ("uuid",), "claude-code": ("uuid",), "codex": ("itemId",),
    "deepseek": ("messageId",), "discord": ("messageId",), "grok": ("responseId",),
    "hangouts": ("eventId",), "json-chat": ("messageId",), "jsonl": ("messageId",),
    "open-webui": ("messageId",), "skype": ("messageId",), "slack": ("ts",), "slack-api": ("ts",),
    "telegram": ("messageId",), "telegram-html": ("messageId",), "gemini-cli": ("id",),
    "copilot-chat": ("requestId",),
}
"""Where a grammar keeps the platform's message id in ``sourceFields`` (the merge matches on it within
one id space: the key's scope)."""

_SPACE = regex.compile(r"\s+")
_COPY_MARK = regex.compile(r" \(\d{1,3}\)$")
_UUID = regex.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", regex.I)
_TYPOGRAPHY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                             "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
                             "\u00ab": '"', "\u00bb": '"', "\u2013": "-", "\u2014": "-", "\u2212": "-",
                             "\u2026": "...", "\u00a0": " ", "\u202f": " ", "\u2007": " ",
                             "\u200e": "", "\u200f": "", "\u200b": "", "\u2060": "", "\ufeff": ""})
MEDIA = "<media>"
SYSTEM_KIND = "system"


@dataclass(frozen=True, slots=True)
class Message:
    """What a message print is made of (an interaction's author, time, content and kind)."""

    author: str
    date: str | None
    content: str
    kind: str = "message"


@dataclass(frozen=True, slots=True)
class Scope:
    """What a session's key is scoped by when its id is not global: the export (its source sha256),
    the exporting account and the Slack workspace where the export names them, Telegram's chat type."""

    source_sha256: str
    account: str | None = None
    team: str | None = None
    chat_type: str | None = None

    @classmethod
    def of(cls, source_sha256: str, meta: dict) -> Scope:
        """The scope of a session from its source's sha256 and its grammar's metadata (``sourceMeta``)."""
        def text(name: str) -> str | None:
            value = meta.get(name)
            return str(value) if value not in (None, "") else None
        return cls(source_sha256, text("accountId"), text("teamId"), text("chatType"))

    @property
    def export(self) -> str:
        return f"src-{self.source_sha256[:16]}"


def normal_content(content: str, kind: str = "message") -> str:
    """The content as the merge compares it (module docstring)."""
    if kind == "media":
        return MEDIA
    text = unicodedata.normalize("NFC", content.replace("\r\n", "\n").replace("\r", "\n"))
    return _SPACE.sub(" ", text).strip()


def identity_content(content: str, kind: str = "message") -> str:
    """The content as identity reads it: ``normal_content`` with typography folded (curly quotes,
    dashes, ellipsis, odd spaces and direction marks: an Android and an iPhone export differ in them)."""
    return _SPACE.sub(" ", normal_content(content, kind).translate(_TYPOGRAPHY)).strip()


def content_hash(content: str, kind: str = "message") -> str:
    """sha256 (hex) of the content as identity reads it (``identity_content``)."""
    return hashlib.sha256(identity_content(content, kind).encode("utf-8", "surrogatepass")).hexdigest()


def _h16(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def identity_print(author: str, digest: str) -> str:
    """A message's identity (16 hex): its author and ``content_hash``; no time, so no zone."""
    return _h16(author, digest)


def index_print(author: str, date: str | None, digest: str) -> str:
    """What the ledger's index keeps of a message: ``<identity print>:<author print>:<UTC epoch or ''>``."""
    return f"{identity_print(author, digest)}:{_h16(author)[:8]}:{_epoch(date)}"


def _epoch(date: str | None) -> str:
    return "" if not date else str(int(datetime.fromisoformat(date.replace("Z", "+00:00")).timestamp()))


def is_system(kind: str) -> bool:
    """System lines ("You created group", "Lucía created group") say nothing of which chat it is."""
    return kind == SYSTEM_KIND


def printed(kinds: list[str]) -> int:
    """How many messages of a kind column have an index print (those that are not ``is_system``)."""
    return len(kinds) - kinds.count(SYSTEM_KIND)


_JOIN = "\x00"
"""What ``_nfc`` joins a column with: a starter NFC never composes or reorders across."""
_WHITE = (*range(0x09, 0x0e), 0x20, 0x85, 0xa0, 0x1680, *range(0x2000, 0x200b), 0x2028, 0x2029, 0x202f, 0x205f,
          0x3000)
"""What ``_SPACE`` (``regex``'s ``\\s``: Unicode White_Space) matches (tests/normalizers checks every code point)."""
_SPACE_RUN = ("[" + "".join(f"\\x{{{n:x}}}" for n in _WHITE) + "]{2,}|["
              + "".join(f"\\x{{{n:x}}}" for n in _WHITE if n != 0x20) + "]")
"""The runs ``_SPACE`` makes one space, in Rust's regex (its characters named rather than left to another
engine's ``\\s``), less the single spaces that are one already (most of them: a tenth of the time)."""
_STRIPPED = "".join(map(chr, (*_WHITE, *range(0x1c, 0x20))))
"""What ``str.strip`` strips: ``_WHITE`` and the ASCII separators \\x1c-\\x1f (which ``_SPACE`` keeps)."""
_TYPO_FROM = [chr(n) for n in _TYPOGRAPHY]
_TYPO_TO = list(_TYPOGRAPHY.values())
_CANONICAL = (r"^(?:[1-9]\d{3}|0[1-9]\d\d|00[1-9]\d|000[1-9])-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
              r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\dZ$")
"""The UTC form the pipeline writes dates in (normalizers/columns.py's ``_ISO``) within what Python's
``fromisoformat`` reads: year 1 on, no leap second."""
_UTC_Z = "%Y-%m-%dT%H:%M:%SZ"


def _nfc(texts: list[str]) -> list[str]:
    """NFC of each text: the column joined and normalised once (a text holding the join character is
    normalised alone); an ASCII column is its own NFC."""
    joined = _JOIN.join(texts)
    if joined.isascii():
        return texts
    normal = unicodedata.normalize("NFC", joined)
    if normal == joined:
        return texts
    if joined.count(_JOIN) != len(texts) - 1:
        return [unicodedata.normalize("NFC", text) for text in texts]
    return normal.split(_JOIN)


def _identity(text: pl.Expr) -> pl.Expr:
    """``identity_content`` of an NFC text column: typography folded, whitespace runs one space, stripped
    (line ends need no step of their own: CR and LF are whitespace, and NFC leaves them be)."""
    return text.str.replace_many(_TYPO_FROM, _TYPO_TO).str.replace_all(_SPACE_RUN, " ").str.strip_chars(_STRIPPED)


def _texts(contents: Sequence[str], kinds: Sequence[str], **columns: Sequence[str | None]) -> pl.DataFrame | None:
    """A frame of the columns with ``text``: each content NFC (a media message's is ``MEDIA``) and ``kind``;
    None when a text holds a lone surrogate, which no polars string can (no decoded input does:
    parsers/text.py reads them as U+FFFD)."""
    try:
        frame = pl.DataFrame({**columns, "kind": kinds, "text": _nfc(list(contents))},
                             schema={**dict.fromkeys(columns, pl.String), "kind": pl.String, "text": pl.String})
    except UnicodeEncodeError:
        return None
    return frame.with_columns(pl.when(pl.col("kind").eq_missing("media")).then(pl.lit(MEDIA))
                              .otherwise(pl.col("text")).alias("text"))


def content_hashes(contents: Sequence[str], kinds: Sequence[str]) -> list[str]:
    """``content_hash`` of each (content, kind) of two columns, as one polars column (``_identity``; a
    column polars cannot hold is hashed message by message, by the same rules)."""
    frame = _texts(contents, kinds)
    if frame is None:
        return [content_hash(c, k) for c, k in zip(contents, kinds, strict=True)]
    return frame.select(plh.col("text").pipe(_identity).chash.sha2_256()).to_series().to_list()


def _epochs(dates: pl.Series) -> pl.Series:
    """``_epoch`` of a date column as text: the pipeline's UTC form parsed as a column, any other form
    by ``_epoch`` once per distinct value (which raises, as it always did, on a date it cannot read)."""
    parsed = pl.select(pl.when(dates.str.contains(_CANONICAL))
                       .then(dates.str.to_datetime(_UTC_Z, time_zone="UTC", strict=False).dt.epoch("s"))
                       .cast(pl.String)).to_series()
    others = dates.filter(parsed.is_null() & (dates.str.len_bytes() > 0)).unique().to_list()
    if others:
        parsed = parsed.fill_null(dates.replace_strict({d: _epoch(d) for d in others}, default=None,
                                                       return_dtype=pl.String))
    return parsed.fill_null("")


def column_index_prints(authors: Sequence[str], dates: Sequence[str | None], contents: Sequence[str],
                        kinds: Sequence[str]) -> list[str]:
    """``index_print`` of each non-system message of four columns, in order, as polars columns: the
    contents normalised and hashed as one column (``_identity``), the identity and author prints hashed
    as columns (polars-hash's sha256 is hashlib's), the pipeline's UTC dates parsed as one (``_epochs``).
    A column polars cannot hold (``_texts``) is printed message by message, by the same rules."""
    frame = _texts(contents, kinds, author=authors, date=dates)
    if frame is None:
        return [index_print(a, d, content_hash(c, k))
                for a, d, c, k in zip(authors, dates, contents, kinds, strict=True) if not is_system(k)]
    frame = frame.filter(pl.col("kind").ne_missing(SYSTEM_KIND))
    digest = plh.col("text").pipe(_identity).chash.sha2_256()
    identity = plh.concat_str(pl.col("author"), pl.lit("\x1f"), digest).chash.sha2_256().str.slice(0, 16)
    author = plh.col("author").chash.sha2_256().str.slice(0, 8)
    return (frame.with_columns(_epochs(frame["date"]).alias("date"))
            .select(pl.concat_str(identity, pl.lit(":"), author, pl.lit(":"), pl.col("date")))
            .to_series().to_list())


def index_prints(messages: Iterable[Message]) -> list[str]:
    """The index prints of a session's non-system messages, in order (module docstring)."""
    return [index_print(m.author, m.date, content_hash(m.content, m.kind)) for m in messages if not is_system(m.kind)]


def key_title(title: str | None) -> str:
    """The title as keys read it: NFC, whitespace normalised, without the copy mark ``(1)`` that a
    browser or file manager adds to a second download of the same export."""
    return _COPY_MARK.sub("", normal_content(title or ""))


def fingerprint(grammar: str, title: str | None, earliest: Sequence[Message], scope: str) -> str:
    """The id-less key's fingerprint (16 hex) of an export, a chat's title and its earliest messages."""
    prints = [identity_print(m.author, content_hash(m.content, m.kind))
              for m in earliest if not is_system(m.kind)][:KEY_MESSAGES]
    payload = "\x1e".join((grammar, scope, key_title(title), *prints))
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def keyed_by_id(grammar: str, session_id: str | None, id_source: str) -> bool:
    """Whether a session's key is its id (the source's own, or a platform-chosen name)."""
    if not session_id:
        return False
    return id_source.startswith("source:") or (grammar in KEYED_BY_NAME and id_source.startswith("file-"))


def id_scope(grammar: str, session_id: str, id_source: str, scope: Scope) -> tuple[str, str]:
    """(scope, why) of an id: "" where the platform makes it global, else the workspace, the account
    or the export it is unique within (module docstring)."""
    if grammar in GLOBAL_GRAMMARS or id_source.endswith(SNOWFLAKE_SOURCE) or _UUID.match(session_id):
        return "", ""
    if grammar.startswith("telegram") and scope.chat_type in TELEGRAM_GLOBAL_TYPES:
        return "", ""
    if grammar in ("slack", "slack-api") and id_source.startswith("source:") and scope.team:
        return scope.team, "its Slack workspace"
    if scope.account and grammar.startswith("telegram") and scope.chat_type in TELEGRAM_DIRECT_TYPES:
        return f"dm-{scope.account}", "the exporting account's direct chats (the id is the peer's)"
    if scope.account:
        return f"acct-{scope.account}", "the exporting account"
    return scope.export, "this export (its source sha256): the id is not global"


def session_key(grammar: str, session_id: str | None, id_source: str, title: str | None,
                earliest: Sequence[Message], scope: Scope) -> tuple[str, str]:
    """(sessionKey, sessionKeySource) for a session: its id where it has one of the platform's (scoped
    unless global), else the fingerprint of its export, title and earliest messages."""
    if keyed_by_id(grammar, session_id, id_source):
        where, why = id_scope(grammar, session_id, id_source, scope)
        if not where:
            return f"{grammar}:{session_id}", f"the session id ({id_source})"
        return f"{grammar}:{session_id}@{where}", f"the session id ({id_source}) within {why}"
    n = min(sum(not is_system(m.kind) for m in earliest), KEY_MESSAGES)
    return (f"{grammar}:fp-{fingerprint(grammar, title, earliest, scope.export)}",
            f"fingerprint of this export, the title and the earliest {n} messages that are not system lines "
            "(author, content)")


def resolvable(key: str | None) -> bool:
    """Whether a key is scoped by an export or an account (another export of its conversation has
    another key: the ledger's index of prints decides on proof whether they are one)."""
    if key is None:
        return False
    platform_id = key.partition(":")[2]
    return platform_id.startswith("fp-") or any(f"@{kind}" in platform_id for kind in SCOPED_KINDS)


def id_space(key: str) -> str:
    """The space a key's message ids are unique in: its scope ("" for a global key)."""
    return key.partition(":")[2].rpartition("@")[2] if "@" in key else ""


def chat_of(key: str, title: str | None) -> str:
    """Which scoped keys may be one conversation: the same id (an id scoped by its export or account),
    or the same title (a fingerprint)."""
    platform_id = key.partition(":")[2]
    if platform_id.startswith("fp-"):
        return key_title(title)
    return "id:" + platform_id.rpartition("@")[0]


@dataclass(frozen=True, slots=True)
class Evidence:
    """What two sessions' index prints say about being one conversation (module docstring)."""

    paired: int
    beyond_opening: int
    same_participants: bool
    offset_seconds: int | None

    @property
    def proof(self) -> bool:
        return self.same_participants and self.beyond_opening >= PROOF_MESSAGES

    @property
    def possible(self) -> bool:
        return self.paired > 0 and not self.proof

    def describe(self) -> str:
        shift = "" if not self.offset_seconds else f", times shifted {self.offset_seconds / 3600:g} h"
        people = "the same participants" if self.same_participants else "other participants"
        return (f"{self.paired} messages alike ({self.beyond_opening} beyond the opening lines), "
                f"{people}{shift}")


NO_EVIDENCE = Evidence(0, 0, False, None)


def identities(prints: Iterable[str]) -> set[str]:
    """The message identities (``identity_print``) of index prints: evidence pairs only messages that share one."""
    return {p.partition(":")[0] for p in prints}


def _parse(prints: Sequence[str]) -> list[tuple[str, str, int | None]]:
    out = []
    for p in prints:
        ident, author, seconds = ([*p.split(":"), "", ""])[:3]
        out.append((ident, author, int(seconds) if seconds else None))
    return out


def _offset(a, b_by, tolerance: int) -> int | None:
    """The quarter-hour offset (a minus b) that most same-identity timed pairs agree on."""
    votes: dict[int, int] = {}
    for ident, _, ta in a:
        if ta is None:
            continue
        for _, tb in b_by.get(ident, ()):
            if tb is None:
                continue
            delta = ta - tb
            step = round(delta / SHIFT_STEP_SECONDS) * SHIFT_STEP_SECONDS
            if abs(step) <= MAX_SHIFT_SECONDS and abs(delta - step) <= tolerance:
                votes[step] = votes.get(step, 0) + 1
    if not votes:
        return None
    return min(votes, key=lambda s: (-votes[s], abs(s), s))


def _at(ta: int | None, tb: int | None, offset: int, tolerance: int) -> bool:
    """Whether two times agree at the offset (two messages without a time agree by their order)."""
    if ta is None or tb is None:
        return ta is None and tb is None
    return abs(ta - tb - offset) <= tolerance


def _pairs(a, b, tolerance: int) -> tuple[list[tuple[int, int]], int | None]:
    """One-to-one pairs (index in a, index in b) of messages with the same identity, in order, at the
    agreed offset when both have times."""
    b_by: dict[str, list[tuple[int, int | None]]] = {}
    for j, (ident, _, tb) in enumerate(b):
        b_by.setdefault(ident, []).append((j, tb))
    offset = _offset(a, b_by, tolerance)
    if offset is None and any(t is not None for *_, t in a) and any(t is not None for *_, t in b):
        return [], None  # both timed and no zone shift lines them up: the same words said at other times
    taken: set[int] = set()
    pairs, last = [], -1
    for i, (ident, _, ta) in enumerate(a):
        for j, tb in b_by.get(ident, ()):
            if j in taken or (offset is None and j <= last):
                continue
            if offset is not None and not _at(ta, tb, offset, tolerance):
                continue
            pairs.append((i, j))
            taken.add(j)
            last = j
            break
    return pairs, offset


def evidence(a_prints: Sequence[str], b_prints: Sequence[str], tolerance: int = 60) -> Evidence:
    """What two sessions' index prints say about being one conversation (module docstring)."""
    a, b = _parse(a_prints), _parse(b_prints)
    pairs, offset = _pairs(a, b, tolerance)
    if not pairs:
        return NO_EVIDENCE
    beyond = sum(not (i < KEY_MESSAGES and j < KEY_MESSAGES) for i, j in pairs)
    same_people = {author for _, author, _ in a} == {author for _, author, _ in b}
    return Evidence(len(pairs), beyond, same_people, offset)
