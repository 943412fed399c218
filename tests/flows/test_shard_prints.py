"""A shard's index prints (flows/core/snapshots.py): its sessions' messages printed as a few columns, a
batch of sessions at a time, each session's prints those of its own messages (``keys.index_prints``)."""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

from flows.core import snapshots
from normalizers import keys
from normalizers.keys import Message, index_prints

MESSAGES = [
    [Message("Ana", "2024-01-01T10:00:00Z", "hola  qué tal", "message"), Message("Bo", None, "", "media"),
     Message("Ana", "2024-01-01T10:01:00Z", "You created group", "system")],
    [Message("Zoë", "2024-02-01T08:00:00+01:00", "\u201cquoted\u201d\r\nline", "message")],
    [],
    [Message("Bo", "2024-01-01T10:00:00Z", "e\u0301 \u00a0x", "message")] * 3,
]


def _session(messages: list[Message], title: str) -> SimpleNamespace:
    turns = {"speaker_name": [m.author for m in messages], "date": [m.date for m in messages],
             "content": [m.content for m in messages], "kind": [m.kind for m in messages]}
    document = {"artifacts": {"ByggLogg": {"grammar": {"id": "whatsapp"}}, "Chatthistorik": {"title": title}}}
    return SimpleNamespace(rows=SimpleNamespace(turns=turns), document=document, spool=None)


def test_a_shards_sessions_are_printed_a_batch_at_a_time_each_with_its_own_prints():
    items = [(f"whatsapp:fp-{n:016x}", _session(m, f"chat {n}")) for n, m in enumerate(MESSAGES)]
    items.insert(2, ("chatgpt:global-id", _session(MESSAGES[0], "not scoped")))  # a global key: no prints
    items.insert(3, (None, _session(MESSAGES[0], "no document")))
    real = keys.column_index_prints
    with mock.patch.object(snapshots, "column_index_prints", side_effect=real) as printed:
        found = list(snapshots.prints_in_batches(items, size=4))
    assert printed.call_count == 2  # six sessions, four at a time
    assert [f is None for f in found] == [False, False, True, True, False, False]
    for (key, _), f in zip(items, found, strict=True):
        if f is not None:
            n = int(key.rpartition("-")[2], 16)
            assert (f.key, f.grammar, f.title, f.prints) == (key, "whatsapp", f"chat {n}", index_prints(MESSAGES[n]))
