"""Hostile inputs of the second reliability round, built into a folder (never stored).

Each builder writes its files into ``folder`` and returns what the ledger must say of each input it
made: ``{source path below the folder: (file status, reason or None)}``. The tests run them one by one
and all at once.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

from tests.hardening.corpus import GOOD_TRANSCRIPT

Expected = dict[str, tuple[str, str | None]]


def transcript(n: int) -> bytes:
    return GOOD_TRANSCRIPT.replace("s-1", f"s-{n}").encode()


def entry_offset(path: Path, member: str) -> int:
    """Where an entry's compressed data starts in a zip."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    with open(path, "rb") as fh:
        fh.seek(info.header_offset + 26)
        name_len, extra_len = int.from_bytes(fh.read(2), "little"), int.from_bytes(fh.read(2), "little")
    return info.header_offset + 30 + name_len + extra_len


def patch(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset:offset + len(data)] = data
    path.write_bytes(bytes(raw))


def corrupt_deflate_zip(folder: Path) -> Expected:
    """Twelve transcripts, one of whose deflate streams is damaged (an invalid block type: zlib.error)."""
    path = folder / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(12):
            zf.writestr(f"chat{i:02d}.txt", transcript(100 + i) + b"User: and some more words\n" * 5)
    patch(path, entry_offset(path, "chat05.txt"), b"\x07")  # BFINAL=1, BTYPE=11: reserved, invalid
    expected: Expected = {f"export.zip/chat{i:02d}.txt": ("ok", None) for i in range(12)}
    expected["export.zip/chat05.txt"] = ("quarantined", "archive_corrupt")
    return expected


def symlink_loops(folder: Path) -> Expected:
    """A link to itself and two links to each other."""
    os.symlink("self-loop.txt", folder / "self-loop.txt")
    os.symlink("loop-b.txt", folder / "loop-a.txt")
    os.symlink("loop-a.txt", folder / "loop-b.txt")
    return {name: ("quarantined", "symlink_loop") for name in ("self-loop.txt", "loop-a.txt", "loop-b.txt")}


def good_input(folder: Path) -> Expected:
    (folder / "good.txt").write_bytes(transcript(1))
    return {"good.txt": ("ok", None)}


def _tar_member(tf: tarfile.TarFile, name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE,
                link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size, info.mtime = kind, link, len(data), 1_700_000_000
    tf.addfile(info, io.BytesIO(data) if data else None)


def tar_archives(folder: Path) -> Expected:
    """Google Takeout's default (.tgz), a .tar.gz holding everything a tar may hold, a plain .tar and a
    .gz: the transcripts in them land, the unsafe entries are refused one by one."""
    with tarfile.open(folder / "takeout.tgz", "w:gz") as tf:
        _tar_member(tf, "Takeout/chat.txt", transcript(200))
    with tarfile.open(folder / "plain.tar", "w") as tf:
        _tar_member(tf, "chat.txt", transcript(201))
    (folder / "single.txt.gz").write_bytes(gzip.compress(transcript(202), mtime=0))
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as zf:
        zf.writestr("chat.txt", transcript(203))
    with tarfile.open(folder / "mixed.tar.gz", "w:gz") as tf:
        _tar_member(tf, "a/chat.txt", transcript(204))
        _tar_member(tf, "../escape.txt", transcript(205))
        _tar_member(tf, "/abs.txt", transcript(206))
        _tar_member(tf, "link.txt", kind=tarfile.SYMTYPE, link="/etc/passwd")
        _tar_member(tf, "hard.txt", kind=tarfile.LNKTYPE, link="a/chat.txt")
        _tar_member(tf, "tty", kind=tarfile.CHRTYPE)
        _tar_member(tf, "pipe", kind=tarfile.FIFOTYPE)
        _tar_member(tf, "inner.zip", inner.getvalue())
        _tar_member(tf, "inner.txt.gz", gzip.compress(transcript(207)))
    # an absolute name keeps its "/" in the key, as a zip entry's does
    refused = ("../escape.txt", "//abs.txt", "link.txt", "hard.txt", "tty", "pipe", "inner.zip", "inner.txt.gz")
    return {"takeout.tgz/Takeout/chat.txt": ("ok", None), "plain.tar/chat.txt": ("ok", None),
            "single.txt.gz/single.txt": ("ok", None), "mixed.tar.gz/a/chat.txt": ("ok", None),
            **{f"mixed.tar.gz/{name}": ("quarantined", "archive_unsafe") for name in refused}}


def archive_bombs(folder: Path) -> Expected:
    """A tar.gz and a .gz that unpack far past the compression ratio limit: refused whole."""
    big = b"User: " + b"a" * (30 * 1024 * 1024)
    with tarfile.open(folder / "bomb.tar.gz", "w:gz") as tf:
        _tar_member(tf, "big.txt", big)
    (folder / "bomb.txt.gz").write_bytes(gzip.compress(big))
    return {"bomb.tar.gz": ("quarantined", "archive_unsafe"), "bomb.txt.gz": ("quarantined", "archive_unsafe")}


def outside_links(folder: Path) -> Expected:
    """A planted link to /etc/passwd, a link to a transcript beside the input folder, and a link
    to a file inside the folder (followed, as before)."""
    outside = folder.parent / "outside-the-root.txt"
    outside.write_bytes(transcript(300))
    os.symlink("/etc/passwd", folder / "passwd.txt")
    os.symlink(outside, folder / "outside.txt")
    (folder / "sub").mkdir()
    (folder / "sub" / "inside.txt").write_bytes(transcript(301))
    os.symlink(folder / "sub" / "inside.txt", folder / "inside-link.txt")
    return {"passwd.txt": ("quarantined", "outside_root"), "outside.txt": ("quarantined", "outside_root"),
            "sub/inside.txt": ("ok", None), "inside-link.txt": ("ok", None)}


IRC_LATIN1 = "--- Log opened Tue Mar 04 09:00:12 2003\n" + "".join(
    f"09:{i:02d} <Amélie> Ça va très bien, merci ! Le café est prêt.\n09:{i:02d} <Jürgen> Schöne Grüße aus München.\n"
    for i in range(10))
WINDOWS_1252 = "User: “Quoted” – it costs 5 € … naïve façade\nAssistant: Zoë’s reply: très bien\n"


def legacy_encodings(folder: Path) -> Expected:
    """An IRC log in Latin-1 and a transcript in Windows-1252 (curly quotes, the euro sign)."""
    (folder / "irc-latin1.log").write_bytes(IRC_LATIN1.encode("latin-1"))
    (folder / "windows-1252.txt").write_bytes(WINDOWS_1252.encode("cp1252"))
    return {"irc-latin1.log": ("ok", None), "windows-1252.txt": ("ok", None)}


def chatgpt_conversation(n: int, text: str) -> dict:
    return {"id": f"conv-{n}", "title": f"t{n}", "create_time": 1700000000.0, "current_node": "b", "mapping": {
        "root": {"id": "root", "parent": None, "children": ["a"], "message": None},
        "a": {"id": "a", "parent": "root", "children": ["b"], "message": {
            "id": "a", "author": {"role": "user"}, "create_time": 1700000001.0,
            "content": {"content_type": "text", "parts": [text]}}},
        "b": {"id": "b", "parent": "a", "children": [], "message": {
            "id": "b", "author": {"role": "assistant"}, "create_time": 1700000002.0,
            "content": {"content_type": "text", "parts": ["hello"]}, "metadata": {"model_slug": "gpt-4o"}}},
    }}


def lone_surrogate_export(folder: Path) -> Expected:
    """A ChatGPT export of three conversations, one message of which holds a lone surrogate escape
    (and one a proper pair, and one the text \\ud800 written out, which must stay as they are)."""
    convs = [chatgpt_conversation(1, "hi"), chatgpt_conversation(2, "SURROGATE"), chatgpt_conversation(3, "PAIR")]
    text = json.dumps(convs).replace("SURROGATE", "broken \\ud800 here").replace("PAIR", "\\ud83d\\ude00 and \\\\ud800")
    (folder / "gpt").mkdir()
    (folder / "gpt" / "conversations.json").write_text(text)
    return {"gpt/conversations.json": ("ok", None)}


LONG_AUTHOR = "María José Fernández-Castro (Universidad Politécnica de Madrid)"


def whatsapp_long_author(folder: Path) -> Expected:
    """A WhatsApp chat whose author's saved name (with an affiliation) runs past 60 characters."""
    (folder / "WhatsApp Chat with María.txt").write_text(
        f"12/24/19, 11:23 - {LONG_AUTHOR}: Hola, ¿cómo estás?\n12/24/19, 11:24 - Ann: Bien, gracias\n")
    return {"WhatsApp Chat with María.txt": ("ok", None)}


def extreme_years(folder: Path) -> Expected:
    """Times in the first and the last year the contract's form can write, in a transcript and in JSON Lines."""
    (folder / "year-0001.txt").write_text("Session: y1\n[0001-01-01 00:00:00] User: first\n"
                                          "[0001-01-01 00:00:05] Assistant: second\n")
    (folder / "year-9999.txt").write_text("Session: y9\n[9999-12-31 23:59:58] User: first\n"
                                          "[9999-12-31 23:59:59] Assistant: second\n")
    (folder / "years.jsonl").write_text(
        '{"conversation_id": "years", "role": "user", "content": "a", "timestamp": "0001-01-01T00:00:00Z"}\n'
        '{"conversation_id": "years", "role": "assistant", "content": "b", "timestamp": "9999-12-31T23:59:59Z"}\n')
    return {"year-0001.txt": ("ok", None), "year-9999.txt": ("ok", None), "years.jsonl": ("ok", None)}
