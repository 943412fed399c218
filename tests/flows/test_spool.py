"""A large text input streamed in chunks gives the document of the same input read whole."""

from __future__ import annotations

import io
import shutil
from datetime import datetime, timedelta

import pytest

from audit import revisions
from flows.core import emit, ingest
from flows.core.ranges import Blocks
from flows.core.shard import run_shard
from models.settings import Settings
from models.status import FileStatus
from tests.parsers.test_columns import CASES

WHATSAPP = [p for g, p in CASES if g == "whatsapp"]


def _run(src, out, **values):
    settings = Settings(**values)
    return run_shard(ingest.discover([src], settings), out, settings)


def _documents(out):
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted((out / "sessions").rglob("*.json"))}


@pytest.mark.parametrize("path", WHATSAPP, ids=lambda p: p.name)
def test_streamed_documents_equal_whole_ones(path, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(path, src / path.name)
    whole, streamed = tmp_path / "whole", tmp_path / "streamed"
    a = _run(src, whole)
    b = _run(src, streamed, stream_text_bytes=1, stream_chunk_bytes=64)
    assert _documents(whole) == _documents(streamed)
    assert [(r.status, r.reasons, r.interactions, r.characters, r.declared) for r in a.sessions] == \
        [(r.status, r.reasons, r.interactions, r.characters, r.declared) for r in b.sessions]
    assert not list((streamed / ".spool").glob("*"))


@pytest.mark.parametrize("size", [1, 3, 7, 64])
def test_blocks_are_whole_lines_of_the_canonical_text(size):
    data = "\ufeffa\r\nbé\r\rc\n\nd".encode()
    blocks = list(Blocks().scans(io.BytesIO(data), size, lambda text, line: (text, line), 2))
    assert "".join(t for t, _ in blocks) == "a\nbé\n\nc\n\nd"
    assert all(t.endswith("\n") for t, _ in blocks[:-1])
    assert [n for _, n in blocks] == [1 + "".join(t for t, _ in blocks[:i]).count("\n") for i in range(len(blocks))]


def _both_routes_fail_on(src, tmp_path, monkeypatch, module, grammar: str, chunk_bytes: int) -> None:
    """With ``module.turn_frames`` broken, the input is quarantined with the route and the failure named,
    read in a table and streamed; no other route writes its documents."""
    def broken(*args, **kwargs):
        raise RuntimeError("columnar bug")

    monkeypatch.setattr(module, "turn_frames", broken)  # both routes read through it
    for out, values, route in ((tmp_path / "b", {}, f"reading 1 {grammar} input together failed"),
                               (tmp_path / "c", {"stream_text_bytes": 1, "stream_chunk_bytes": chunk_bytes},
                                "the streamed route failed")):
        got = _run(src, out, **values)
        (row,) = got.files
        assert row.status is FileStatus.QUARANTINED and not got.sessions
        assert route in row.detail and "RuntimeError: columnar bug" in row.detail, row.detail
        assert not (out / "sessions").exists() or not _documents(out)


def test_a_failing_columnar_route_is_recorded_not_retried(tmp_path, monkeypatch):
    """No silent fallback: a bug in the column-wise or streamed route quarantines the input with the
    route and the failure named; no other route writes its documents."""
    from parsers.grammars import _whatsapp_columns

    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(WHATSAPP[0], src / WHATSAPP[0].name)
    _both_routes_fail_on(src, tmp_path, monkeypatch, _whatsapp_columns, "whatsapp", 64)


def test_a_transcript_is_read_by_the_same_table_functions_whole_or_streamed(tmp_path, monkeypatch):
    """A transcript read in a batch's table and one streamed in chunks give the same document, through
    the same table function: a bug in it quarantines the input on both routes, named."""
    from parsers.grammars import _transcript_columns

    src = tmp_path / "in"
    src.mkdir()
    (src / "chat.txt").write_text("".join(f"{['User', 'Assistant'][i % 2]}: message {i}\nmore\n" for i in range(40)))
    whole, streamed = _run(src, tmp_path / "w"), _run(src, tmp_path / "s", stream_text_bytes=1, stream_chunk_bytes=256)
    assert _documents(tmp_path / "w") == _documents(tmp_path / "s") and whole.written == streamed.written == 1
    _both_routes_fail_on(src, tmp_path, monkeypatch, _transcript_columns, "transcript", 256)

def _markdown(n: int, fence: str = "```") -> str:
    """A Markdown transcript of ``n`` exchanges: front matter, a title and a model line, headings and fenced code
    in the answers (a fence running over several blocks), times, a time tag, rules, a footer."""
    code = "".join(f"line {k} of the snippet\n" for k in range(12))
    turns = "".join(
        f"## User — 2025-01-01 10:{i % 60:02d}\nquestion {i}\n\n---\n\n## 🤖 Assistant\n"
        + ('<time datetime="2025-01-01T10:00:30Z">10:00</time>\n' if i == 3 else "")
        + f"answer {i}\n\n### Steps\n**Note:** kept\n{fence}python\n# not a heading\n## Summary\n{code}{fence}"
        "\n\n---\n\n"
        for i in range(n))
    return ("---\ntitle: Big chat\ntimezone: Europe/Oslo\n---\n# Big chat\n\nModel: openai:gpt-4o\n\n" + turns
            + "*Exported with AI Exporter*\n")


def _read_both(tmp_path, text: str, chunk: int = 256):
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    (src / "chat.md").write_text(text)
    return _run(src, tmp_path / "w"), _run(src, tmp_path / "s", stream_text_bytes=1, stream_chunk_bytes=chunk)


def test_a_large_markdown_transcript_is_streamed_with_the_documents_of_its_whole_read(tmp_path, monkeypatch):
    """Front matter, a title, a model line, answers with headings and fences over several blocks, times,
    a footer: streamed in chunks (no "read whole" note), the bytes of the whole read, through the same
    table function (a bug in it quarantines the input on both routes, named)."""
    from parsers.grammars import _markdown_columns

    whole, streamed = _read_both(tmp_path, _markdown(30))
    (row,) = streamed.files
    assert row.status is FileStatus.OK and "not streamed" not in row.detail, row.detail
    assert streamed.written == whole.written == 1 and streamed.sessions[0].interactions == 60
    assert _documents(tmp_path / "w") == _documents(tmp_path / "s")
    _both_routes_fail_on(tmp_path / "in", tmp_path, monkeypatch, _markdown_columns, "markdown", 256)


def test_a_fence_never_closed_hides_nothing_when_streamed(tmp_path):
    """A fence of four backticks that never closes hides nothing, and the shorter fences after it open no
    block: their role headings start turns, in every chunk."""
    text = "## User\nq\n\n## Assistant\n````\nnever closed\n\n" + _markdown(12).split("# Big chat\n", 1)[1]
    whole, streamed = _read_both(tmp_path, text.replace("### Steps", "## User"))
    assert "not streamed" not in streamed.files[0].detail, streamed.files[0].detail
    assert _documents(tmp_path / "w") == _documents(tmp_path / "s") and whole.written == 1


@pytest.mark.parametrize("inside, why", [
    ("## User", "a role label that starts no turn (in fenced code, or of a style the turns do not use)"),
    ("### User", "a role label that starts no turn (in fenced code, or of a style the turns do not use)"),
    ("Session: two", "a Session line")])
def test_a_markdown_transcript_a_chunk_cut_could_split_is_read_whole_and_says_why(tmp_path, inside, why):
    """A role label inside a fence that runs over blocks (where the stream would be cut), one of a style the
    turns do not use, or a Session line: read whole, the ledger row says why, the same documents."""
    text = _markdown(8).replace("## Summary", inside) if inside != "### User" else \
        _markdown(8).replace("### Steps", inside)
    _, streamed = _read_both(tmp_path, text)
    (row,) = streamed.files
    assert f"read whole, not streamed: {why}: the Markdown transcript is read whole" in row.detail, row.detail
    assert _documents(tmp_path / "w") == _documents(tmp_path / "s")


def _chat(n: int) -> str:
    return "".join(f"1/{1 + i // 100}/24, 10:{i % 60:02d} - Ann: message number {i}\n" for i in range(n))


def _log(n: int) -> str:
    """A transcript with a global session id (a UUID): a rerun of the changed file is the same key."""
    return "Session: 6d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6\n" + "".join(
        f"User: message number {i}\n" for i in range(n))


def test_a_streamed_rerun_keeps_revisions_and_the_mass_latch(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    chat = src / "chat.txt"
    chat.write_text(_log(40))
    streamed = {"stream_text_bytes": 1, "stream_chunk_bytes": 256}
    first = _run(src, out, **streamed)
    (doc,) = (out / "sessions").rglob("*.json")
    accepted = doc.read_bytes()
    assert first.written == 1 and first.revisions[0].previous_sha256 is None
    assert emit.document_mass(doc) == (40, sum(len(f"message number {i}") for i in range(40)))
    assert revisions.blob_path(out, first.revisions[0].sha256).read_bytes() == accepted
    again = _run(src, out, **streamed)
    assert again.unchanged == 1 and doc.read_bytes() == accepted
    chat.write_text(_log(10))  # a quarter of the log: the accepted document stays
    shrunk = _run(src, out, **streamed)
    assert [r.reasons for r in shrunk.sessions] == [["mass_latch"]] and doc.read_bytes() == accepted
    assert not list((out / ".spool").glob("*"))
    allowed = run_shard(ingest.discover([src], Settings(**streamed)), out, Settings(**streamed), allow_shrink=True)
    assert allowed.written == 1 and allowed.revisions[0].previous_sha256 == first.revisions[0].sha256
    assert emit.document_mass(doc)[0] == 10
    assert "mass latch overridden" in allowed.sessions[0].detail


def test_a_streamed_session_the_gate_refuses_is_quarantined_with_its_reasons(tmp_path, monkeypatch):
    from models.errors import Reason
    from validators import gate

    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    (src / "chat.txt").write_text(_chat(30))
    feed = gate.FrameCheck.feed

    def failing(self, interactions, checked):
        feed(self, interactions, checked)
        self.out.add(Reason.SPEAKER_FORMAT, "$.artifacts.Chatthistorik.interactions[0].speaker", "refused")

    monkeypatch.setattr(gate.FrameCheck, "feed", failing)
    got = _run(src, out, stream_text_bytes=1, stream_chunk_bytes=256)
    assert [(r.status, r.reasons) for r in got.sessions] == [("quarantined", ["speaker_format"])]
    assert not list((out / "sessions").rglob("*.json")) and not list((out / ".spool").glob("*"))
    (record,) = (out / "quarantine").rglob("session-1.json")
    assert b"not kept: 30 interactions, streamed" in record.read_bytes()


def test_a_stream_that_cannot_be_read_is_quarantined_not_read_again(tmp_path, monkeypatch):
    """An input error on the streamed route is recorded on the input (no second read by another route);
    an error writing under the output root stops the shard as any output failure does."""
    import errno

    from flows.core import spool

    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(WHATSAPP[0], src / WHATSAPP[0].name)
    where = {"file": str(src / WHATSAPP[0].name)}

    def unreadable(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error", where["file"])

    monkeypatch.setattr(spool, "stream_text_input", unreadable)
    got = _run(src, tmp_path / "a", stream_text_bytes=1)
    (row,) = got.files
    assert row.status is FileStatus.QUARANTINED and row.reasons == ["unreadable"]
    assert "reading it as a stream failed" in row.detail and "Input/output error" in row.detail
    where["file"] = str(tmp_path / "b" / ".spool" / "piece")
    with pytest.raises(OSError):
        _run(src, tmp_path / "b", stream_text_bytes=1)


def test_a_large_text_read_whole_says_why_in_its_ledger_row(tmp_path):
    """No silent hand-over: a transcript whose pre-pass refuses the stream (front matter) is read whole, and
    its ledger row says it was not streamed, and why."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "chat.txt").write_text("---\ntitle: T\n---\n" + "".join(f"User: q{i}\nAssistant: a{i}\n" for i in range(30)))
    streamed = _run(src, tmp_path / "s", stream_text_bytes=1, stream_chunk_bytes=64)
    whole = _run(src, tmp_path / "w")
    (row,) = streamed.files
    assert row.status is FileStatus.OK and "read whole, not streamed: front matter" in row.detail, row.detail
    assert "not streamed" not in whole.files[0].detail
    assert _documents(tmp_path / "s") == _documents(tmp_path / "w")


@pytest.mark.parametrize("folder, grammar", [("whatsapp-db", "whatsapp-db")])
def test_a_large_input_of_a_grammar_with_no_streamed_read_says_so(tmp_path, folder, grammar):
    """No silent hand-over: an input above the streaming threshold whose grammar reads inputs only whole
    (or a database) is read whole, with the same documents, and its ledger row says why."""
    from tests.helpers import GOLDEN

    inputs = [p for p in sorted((GOLDEN / folder).iterdir()) if p.is_file() and not p.name.endswith(".expected.json")]
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(inputs[0], src / inputs[0].name)
    large = _run(src, tmp_path / "large", stream_text_bytes=1, stream_json_bytes=1)
    small = _run(src, tmp_path / "small")
    (row,) = large.files
    why = "a database is read whole" if grammar == "whatsapp-db" else f"the {grammar} grammar has no streamed read"
    assert row.grammar == grammar and f"read whole, not streamed: {why}" in row.detail, row.detail
    assert "not streamed" not in small.files[0].detail
    assert _documents(tmp_path / "large") == _documents(tmp_path / "small")


def _paste(n: int, reply: str = "↪ @Ann Lee the earlier message") -> str:
    """A Discord paste of ``n`` author lines: a channel title, day/month dates (the order decided by a day above
    12 near the end), continuation stamps that wrap past midnight and one with no text, reply contexts, a
    relative day, BOT tags, edited markers and date dividers."""
    out = ["#release-planning", ""]
    for i in range(n):
        day = 1 + i // 10 if i < n - 1 else 25
        if i % 10 == 0:
            out.append(f"January {day}, 2024")
        if i % 7 == 3:
            out.append(reply)
        name = ["Ann Lee", "Bob", "Deploy Bot BOT"][i % 3]
        stamp = "Yesterday at 11:50 PM" if i == 5 else f"{day:02d}/01/2024 11:{50 + i % 10:02d} PM"
        out += [f"{name} — {stamp}", f"message {i}", "second line (edited)" if i % 4 == 0 else "second line"]
        if i % 5 == 0:
            out += ["[12:05 AM]", f"after midnight {i}", "[12:06 AM]"]
    return "\n".join(out) + "\n"


def _read_large(tmp_path, text: str, name: str = "paste.txt"):
    """The shard's results of one input read whole (``w``) and streamed in chunks of 200 bytes (``s``)."""
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    (src / name).write_text(text)
    return _run(src, tmp_path / "w"), _run(src, tmp_path / "s", stream_text_bytes=1, stream_chunk_bytes=200)


def test_a_large_discord_paste_is_streamed_with_the_documents_of_its_whole_read(tmp_path):
    """Reply contexts, continuation stamps past midnight, relative days and the day/month order decided late
    in the paste, over many chunks: streamed (no "read whole" note), the bytes of the whole read."""
    whole, streamed = _read_large(tmp_path, _paste(60))
    (row,) = streamed.files
    # complete: the independent count finds the paste's 72 turns (its stamps with no text above a reply context
    # are no turns to it either)
    assert row.status is whole.files[0].status is FileStatus.OK
    assert streamed.sessions[0].source_turns == 72 and "not streamed" not in row.detail, row.detail
    assert "not streamed" not in whole.files[0].detail  # a small file: read whole in its batch, as before
    assert streamed.written == whole.written == 1 and streamed.sessions[0].interactions == 72
    assert _documents(tmp_path / "w") == _documents(tmp_path / "s")


def test_a_discord_paste_a_chunk_cut_could_split_is_read_whole_and_says_why(tmp_path):
    """A reply-context-shaped line with no author line under it is message text a cut there would split: the
    paste is read whole, the ledger row says why, the same documents."""
    from parsers.grammars._discord_columns import NO_REPLY

    text = _paste(30).replace("message 12\n", "message 12\n↪ quoted, not a reply\n")
    _, streamed = _read_large(tmp_path, text)
    (row,) = streamed.files
    assert f"read whole, not streamed: {NO_REPLY}" in row.detail, row.detail
    assert _documents(tmp_path / "w") == _documents(tmp_path / "s")


def _inferred_log(n: int) -> str:
    """An inferred log of ``n`` turns: an exporter's banner, a learnt header with a date and clock (one day that
    is no date), names of one to six words (six are too many for a header's shape, but the learnt header
    matches them), continuation lines, blank lines."""
    out = ["ChatVault export of #helpdesk", ""]
    for i in range(n):
        stamp = "2024/02/30 00:07" if i == 7 else f"{datetime(2024, 3, 1) + timedelta(minutes=i):%Y/%m/%d %H:%M}"
        name = ["maria", "it-bot", "Jon Lee", "Mary Ann de la Cruz Lee"][i % 4]
        out.append(f"<<{stamp}>> {name} | turn {i}")
        if i % 5 == 0:
            out += ["still jammed, see the log", ""]
    return "\n".join(out) + "\n"


def test_a_large_inferred_log_is_streamed_with_the_documents_of_its_whole_read(tmp_path):
    """The header learnt from the first 2,000 lines of a log of many chunks, its banner, a day that is no date, a
    name of too many words for the header's shape: streamed (no "read whole" note), the bytes of the whole read."""
    whole, streamed = _read_large(tmp_path, _inferred_log(2500), "helpdesk.log")
    (row,) = streamed.files
    assert row.grammar == "inferred" and row.status is whole.files[0].status is FileStatus.PARTIAL
    assert "not streamed" not in row.detail, row.detail
    assert streamed.written == whole.written == 1 and streamed.sessions[0].interactions == 2500
    assert _documents(tmp_path / "w") == _documents(tmp_path / "s")


def test_an_inferred_log_a_chunk_cut_could_split_is_read_whole_and_says_why(tmp_path):
    """A continuation line that looks like a header but is none under the learnt one (a numbered list item) is
    where a cut would split a turn: the log is read whole, its ledger row says why, the same documents."""
    text = _inferred_log(300).replace("turn 250\n", "turn 250\n1. First, restart the spooler\n")
    _, streamed = _read_large(tmp_path, text, "helpdesk.log")
    (row,) = streamed.files
    line = text[:text.index("1. First")].count("\n") + 1
    assert f"read whole, not streamed: line {line} looks like a header but starts no turn" in row.detail, row.detail
    assert _documents(tmp_path / "w") == _documents(tmp_path / "s")
RULE = "=" * 62


def _export(n: int) -> str:
    """A DiscordChatExporter plain-text export of ``n`` messages: its preamble, day/month dates (the order decided
    by a day above 12 near the end), pinned messages, attachments, embeds, stickers, reactions, a notification,
    a stamp nobody can read, text with blank lines and section words, the closing count."""
    out = [RULE, "Guild: Archive Ops", "Channel: Engineering / releases", "Topic: Release coordination",
           "After: 3/1/2024 12:00 AM", RULE, ""]
    for i in range(n):
        day = 1 + (i // 10) % 12 if i < n - 1 else 25
        stamp = "Tuesday 10:00" if i == 4 else f"{day}/{1 + (i // 120) % 12}/2024 {1 + i % 12}:{i % 60:02d} PM"
        who = ["ann.lee", "bo", "ReleaseBot#0042"][i % 3] + (" (pinned)" if i % 7 == 0 else "")
        out.append(f"[{stamp}] {who}")
        if i % 13 == 6:
            out.append("Pinned a message.")
        elif i % 11 != 5:
            out += [f"message {i}", "", "see {Attachments} below" if i % 4 == 0 else f"more {i}"]
        if i % 5 == 0:
            out += ["", "{Attachments}", f"https://cdn.discordapp.com/attachments/1/{i}/a.png"]
        if i % 11 == 5:
            out += ["{Embed}", "GitHub", f"PR #{i}: a change", "2 files changed"]
        if i % 17 == 0:
            out += ["", "{Stickers}", f"https://media.discordapp.net/stickers/{i}.png"]
        if i % 3 == 0:
            out += ["", "{Reactions}", "👍 (2) 🎉"]
        out += ["", ""]
    return "\n".join([*out, RULE, f"Exported {n:,} message(s)", RULE]) + "\n"


@pytest.mark.parametrize("values", [{"stream_chunk_bytes": 300}, {"stream_chunk_bytes": 300, "stream_range_bytes": 2000,
                                                                   "workers": 2}], ids=["in-order", "ranges"])
def test_a_large_discordchatexporter_export_is_streamed_with_the_documents_of_its_whole_read(tmp_path, values):
    """Its preamble, sections, notifications, an unreadable stamp, the day/month order decided near the end and the
    closing count, over many chunks (and ranges read side by side): streamed (no "read whole" note), the bytes of
    the whole read."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "Archive Ops - releases [1187654321098765432].txt").write_text(_export(120))
    whole, streamed = _run(src, tmp_path / "w"), _run(src, tmp_path / "s", stream_text_bytes=1, **values)
    (row,) = streamed.files
    assert row.status is whole.files[0].status is FileStatus.OK and "not streamed" not in row.detail, row.detail
    assert streamed.written == whole.written == 1 and streamed.sessions[0].interactions == 120
    documents = _documents(tmp_path / "s")
    assert _documents(tmp_path / "w") == documents
    assert b"1 turn time could not be read" in next(iter(documents.values()))


def test_a_partitioned_discordchatexporter_export_is_read_whole_as_one_conversation(tmp_path):
    """Its parts, above the streaming threshold, are grouped by ingest and read whole together (a group is never
    streamed): one session, the documents of the default settings, a ledger row per part."""
    from tests.helpers import GOLDEN

    src = tmp_path / "in"
    shutil.copytree(GOLDEN / "discord-txt" / "partitioned", src, ignore=shutil.ignore_patterns("*.expected.json"))
    large, small = _run(src, tmp_path / "large", stream_text_bytes=1), _run(src, tmp_path / "small")
    assert large.written == small.written == 1 and len(large.files) == 2
    assert all(row.status is FileStatus.OK and "part of the conversation" in row.detail for row in large.files)
    assert all("read whole, not streamed: a conversation over 2 files is read whole" in row.detail
               for row in large.files)
    assert not any("read whole" in row.detail for row in small.files)
    assert _documents(tmp_path / "large") == _documents(tmp_path / "small")


def test_a_conversation_over_several_files_too_large_to_read_whole_is_quarantined_file_by_file(tmp_path):
    """Its files are never read into memory together: each is quarantined ``too_large``, hashed, naming the
    conversation and the budget; nothing is written."""
    from tests.helpers import GOLDEN

    src = tmp_path / "in"
    shutil.copytree(GOLDEN / "discord-txt" / "partitioned", src, ignore=shutil.ignore_patterns("*.expected.json"))
    size = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    result = _run(src, tmp_path / "out", memory_budget_bytes=size)  # a whole read needs about 16 x its size
    assert result.written == 0 and len(result.files) == 2
    for row in result.files:
        assert row.status is FileStatus.QUARANTINED and row.reasons == ["too_large"]
        assert "part of the conversation" in row.detail and "memory_budget_bytes" in row.detail
        assert row.sha256 and row.raw_sha256
    assert not (tmp_path / "out" / "sessions").exists() or not any((tmp_path / "out" / "sessions").rglob("*.json"))
