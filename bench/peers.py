"""The peers the bench compares against (whatstk, chat-miner), run in a virtual environment of their own.

chat-miner depends on the PyPI ``argparse`` backport, which shadows the standard library's in the
project's environment (Prefect's embedded server then cannot start), so the peers never share the
project's environment: ``ensure()`` makes ``.venv-bench/`` (git-ignored) with the pinned versions of
``bench/peers-requirements.txt``, and each measurement runs this file there as a script. It imports
nothing of the project.

Usage (by bench/run.py): ``.venv-bench/bin/python bench/peers.py KIND DATA`` prints one JSON line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE.parent / ".venv-bench"
REQUIREMENTS = HERE / "peers-requirements.txt"


def python() -> Path:
    return VENV / "bin" / "python"


def ensure() -> Path:
    """The peers' interpreter, its environment made (once) from the pinned requirements."""
    stamp = VENV / "requirements.txt"
    if not stamp.is_file() or stamp.read_text() != REQUIREMENTS.read_text():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        subprocess.run([str(python()), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)], check=True)
        stamp.write_text(REQUIREMENTS.read_text())
    return python()


def whatstk(data: str) -> dict:
    from whatstk import WhatsAppChat

    t0 = time.perf_counter()
    chat = WhatsAppChat.from_source(filepath=data, max_size=None)
    return {"seconds": time.perf_counter() - t0, "messages": len(chat.df)}


def chatminer(data: str) -> dict:
    from chatminer.chatparsers import WhatsAppParser

    t0 = time.perf_counter()
    parser = WhatsAppParser(data)
    parser.parse_file()
    return {"seconds": time.perf_counter() - t0, "messages": len(parser.parsed_messages.get_df())}


PEERS = {"whatstk": whatstk, "chatminer": chatminer}

if __name__ == "__main__":
    kind, data = sys.argv[1:3]
    print(json.dumps(PEERS[kind](data)))
