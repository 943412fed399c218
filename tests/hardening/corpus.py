"""The bad-input corpus, generated (never stored): one function per class, each yielding (name, bytes)."""

from __future__ import annotations

import codecs
import json

GOOD_TRANSCRIPT = "Session: s-1\nUser: hello\nAssistant: hi there\nUser: bye\n"
# The same chat under a global id (a UUID): its exports are snapshots of one session. Under "s-1", an id
# that is not global, two exports are merged only on proof (docs/session-identity.md).
GLOBAL_ID = "7d9f3c2a-1b4e-4f6a-8c5d-0e2f4a6b8c1d"
GLOBAL_TRANSCRIPT = GOOD_TRANSCRIPT.replace("s-1", GLOBAL_ID)
GLOBAL_DOC = f"sessions/transcript/{GLOBAL_ID}/{GLOBAL_ID}.json"
CHATGPT = json.dumps([{
    "id": "conv-1", "title": "t", "create_time": 1700000000.0, "current_node": "b",
    "mapping": {
        "root": {"id": "root", "parent": None, "children": ["a"], "message": None},
        "a": {"id": "a", "parent": "root", "children": ["b"], "message": {
            "id": "a", "author": {"role": "user"}, "create_time": 1700000001.0,
            "content": {"content_type": "text", "parts": ["hi"]}}},
        "b": {"id": "b", "parent": "a", "children": [], "message": {
            "id": "b", "author": {"role": "assistant"}, "create_time": 1700000002.0,
            "content": {"content_type": "text", "parts": ["hello"]}, "metadata": {"model_slug": "gpt-4o"}}},
    },
}])


def truncated_and_corrupt_json():
    raw = CHATGPT.encode()
    for cut in (10, len(raw) // 3, len(raw) // 2, len(raw) - 2):
        yield f"conversations-trunc{cut}.json", raw[:cut]
    yield "conversations-corrupt.json", raw.replace(b'"mapping"', b'"mapping" ::', 1)
    yield "conversations-wrongtypes.json", CHATGPT.replace('"parts": ["hi"]', '"parts": 42').encode()
    yield "conversations-nullmapping.json", CHATGPT.replace('"mapping": {', '"mapping": null, "x": {', 1).encode()


def binary_junk():
    seed = 12345
    out = bytearray()
    for _ in range(20000):
        seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(seed & 0xFF)
    yield "junk.bin", bytes(out)
    yield "png-like.txt", b"\x89PNG\r\n\x1a\n" + bytes(out[:500])


def nul_bytes():
    yield "nul-in-text.txt", GOOD_TRANSCRIPT.replace("hello", "hel\x00lo").encode()
    yield "nul-only.txt", b"\x00" * 1000


def single_long_line():
    yield "long-line.txt", b"User: " + b"x" * (10 * 1024 * 1024) + b"\n"
    yield "long-line-no-header.txt", b"y" * (10 * 1024 * 1024)


def encodings():
    yield "utf16-no-bom.txt", GOOD_TRANSCRIPT.encode("utf-16-le")
    yield "utf16be-no-bom.txt", GOOD_TRANSCRIPT.encode("utf-16-be")
    yield "latin1.txt", "User: café crème\nAssistant: très bien\n".encode("latin-1")
    yield "double-encoded.txt", "User: café\nAssistant: naïve\n".encode().decode("latin-1").encode()
    yield "mixed.txt", "User: café\n".encode() + "Assistant: crème\n".encode("latin-1")
    yield "utf32.txt", codecs.BOM_UTF32_LE + GOOD_TRANSCRIPT.encode("utf-32-le")


def empty_and_headers_only():
    yield "empty.txt", b""
    yield "blank.txt", b"\n\n   \n"
    yield "headers-only.txt", b"Session: only-a-header\n"
    yield "front-matter-only.md", b"---\ntitle: nothing\n---\n"
    yield "empty-list.json", b"[]"
    yield "empty-object.json", b"{}"


def timestamps_out_of_range():
    for stamp in ("0000-01-01 10:00:00", "9999-12-31 23:59:59", "2025-02-30 10:00:00", "2025-01-01 25:61:00",
                  "1969-12-31 23:59:59"):
        tag = stamp[:10].replace("-", "")
        yield f"stamp-{tag}-{stamp[11:13]}.txt", f"[{stamp}] User: hi\n[{stamp}] Assistant: yo\n".encode()


def deep_json():
    yield "deep.json", b'{"messages": ' + b"[" * 10000 + b"]" * 10000 + b"}"
    yield "deep-conversations.json", b"[" * 10000 + b"]" * 10000


CLASSES = {
    "truncated_and_corrupt_json": truncated_and_corrupt_json,
    "binary_junk": binary_junk,
    "nul_bytes": nul_bytes,
    "single_long_line": single_long_line,
    "encodings": encodings,
    "empty_and_headers_only": empty_and_headers_only,
    "timestamps_out_of_range": timestamps_out_of_range,
    "deep_json": deep_json,
}
