"""Coverage-guided fuzzing of the whole per-file core (decode, detect, parse, normalise, gate) with atheris.

Long runs, outside the test suite:

    .venv/bin/pip install atheris
    .venv/bin/python fuzz/fuzz_process.py -max_total_time=3600 -rss_limit_mb=4096 fuzz/corpus

Any exception that escapes ``process_bytes`` is a bug (every input must end ok, partial or
quarantined); atheris stops and writes the crashing input to crash-<sha1>.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from flows.core.process import process_bytes
    from models.settings import Settings
    from normalizers.assemble import RunContext

CTX = RunContext.from_settings(Settings())
NAMES = ("chat.txt", "chat.md", "conversations.json", "result.json", "log.jsonl", "irc.log")


def one_input(data: bytes) -> None:
    name = NAMES[data[0] % len(NAMES)] if data else NAMES[0]
    outcome = process_bytes(data[1:], name, CTX)
    if outcome.status not in ("ok", "partial", "quarantined"):
        raise AssertionError(outcome.status)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
