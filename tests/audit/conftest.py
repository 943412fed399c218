"""An audited archive: two runs over a chat that grew, an IRC log and an input that is no export."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flows.pipeline import reconstruct
from models.settings import Settings

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
CHAT_ID = "5b0c9a4e-2f6d-4d8a-9c1e-7a3b6f2d0c11"  # a global id: the chat that grew stays one session, two revisions
CHAT = f"sessions/transcript/{CHAT_ID}/{CHAT_ID}.json"
KEY = f"transcript:{CHAT_ID}"
# the sample IRC log's key: a channel name is no global id, so the key is scoped by the export (its sha256)
IRC_KEY = "irc:homelab_2024-03-05@src-0f63b2b306821dd5"
TWO = f"Session: {CHAT_ID}\nUser: hi, mail me at alice@example.com\nAssistant: hello\n"
FOUR = TWO + "User: how is the deploy going\nAssistant: the deploy finished at noon\n"


@pytest.fixture(scope="session")
def audited(tmp_path_factory) -> Path:
    """OUT of two runs: chat.txt written, then grown (two revisions); broken.json quarantined twice."""
    base = tmp_path_factory.mktemp("audited")
    src, out = base / "in", base / "out"
    src.mkdir()
    shutil.copytree(SAMPLES / "irc", src / "irc")
    (src / "chat.txt").write_text(TWO)
    (src / "broken.json").write_bytes(b"\x00\x01garbage")
    reconstruct([src], out, Settings(workers=1))
    (src / "chat.txt").write_text(FOUR)
    reconstruct([src], out, Settings(workers=1))
    return out
