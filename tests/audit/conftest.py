"""An audited archive: two runs over a chat that grew, an IRC log and an input that is no export."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flows.pipeline import reconstruct
from models.settings import Settings

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
CHAT = "sessions/transcript/chat/chat.json"
TWO = "Session: chat\nUser: hi, mail me at alice@example.com\nAssistant: hello\n"
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
