"""A shard's index prints (flows/core/snapshots.py): its sessions' messages printed as a few columns, a
batch of sessions at a time, each session's prints those of its own messages (``keys.index_prints``); a
streamed session's messages read from the row pieces its ranges wrote, the values its document holds."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from audit.datasets import StreamedRows
from flows.core import ingest, snapshots
from flows.core.shard import run_shard
from models.settings import Settings
from normalizers import keys
from normalizers.keys import Message, index_prints
from tests.parsers.test_columns import CASES

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


def test_a_streamed_sessions_messages_come_from_its_row_pieces_as_its_document_holds_them(tmp_path):
    """Cut in many ranges, a streamed WhatsApp session is printed from its Arrow row pieces, never by
    parsing its document's lines, and the columns are those lines' values."""
    src = tmp_path / "in"
    src.mkdir()
    for n, path in enumerate(p for g, p in CASES if g == "whatsapp"):
        shutil.copy(path, src / f"{n}-{path.name}")
    settings = Settings(stream_text_bytes=1, stream_chunk_bytes=64, stream_range_bytes=200)
    real, document_lines = snapshots._message_pieces, snapshots._spooled
    compared = []

    def both(s, limit=snapshots.PRINT_MESSAGES):
        with mock.patch.object(snapshots, "_spooled", side_effect=AssertionError("a document parsed")):
            got = _joined(real(s, limit))
        if isinstance(s.turns, StreamedRows):
            assert len(s.turns.files()) > 1 and got == _joined(document_lines(Path(s.spool)))
            compared.append(len(got[0]))
        return iter([got])

    with mock.patch.object(snapshots, "_message_pieces", side_effect=both):
        run_shard(ingest.discover([src], settings), tmp_path / "out", settings)
    assert compared and sum(compared) > 20


def _joined(pieces) -> list[list]:
    """A session's message pieces as whole columns."""
    cols: list[list] = [[], [], [], []]
    for piece in pieces or ():
        for col, values in zip(cols, piece, strict=True):
            col.extend(values)
    return cols


def test_no_column_printed_holds_more_than_a_piece_of_messages_and_the_prints_are_the_whole_columns():
    """A session longer than the column bound is printed a piece at a time, small sessions share a
    column, and each session's prints are those of its whole message list, in order."""
    long = [Message("Ana" if n % 3 else "Bo", f"2024-01-01T10:{n % 60:02d}:00Z", f"m\u00e9ssage  {n % 4}",
                    "system" if n % 7 == 0 else "message") for n in range(23)]
    sessions = [*MESSAGES, long, MESSAGES[0]]
    items = [(f"whatsapp:fp-{n:016x}", _session(m, f"chat {n}")) for n, m in enumerate(sessions)]
    real = keys.column_index_prints
    with mock.patch.object(snapshots, "column_index_prints", side_effect=real) as printed:
        found = snapshots.prints_all(items, limit=4)
    sizes = [len(call.args[0]) for call in printed.call_args_list]
    assert max(sizes) <= 4 and sum(sizes) == sum(map(len, sessions)) and len(sizes) >= 23 // 4
    assert [f.prints for f in found] == [index_prints(m) for m in sessions]


def test_a_streamed_shards_prints_are_made_a_bounded_piece_at_a_time_with_the_same_values(tmp_path):
    """A shard of streamed WhatsApp sessions with the column bound at a few messages: no print call gets
    more, and the shard's prints are those it makes with the bound at its default."""
    src = tmp_path / "in"
    src.mkdir()
    for n, path in enumerate(p for g, p in CASES if g == "whatsapp"):
        shutil.copy(path, src / f"{n}-{path.name}")
    settings = Settings(stream_text_bytes=1, stream_chunk_bytes=64, stream_range_bytes=200)
    whole = run_shard(ingest.discover([src], settings), tmp_path / "whole", settings).prints
    real = keys.column_index_prints
    with (mock.patch.object(snapshots, "PRINT_MESSAGES", 3),
          mock.patch.object(snapshots, "column_index_prints", side_effect=real) as printed):
        pieces = run_shard(ingest.discover([src], settings), tmp_path / "pieces", settings).prints
    sizes = [len(call.args[0]) for call in printed.call_args_list]
    assert max(sizes) <= 3 and len(sizes) > len(whole)
    assert sum(len(p.prints) for p in whole) > 20 and pieces == whole
