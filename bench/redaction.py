"""CPU time of redaction per turn, as the assembler runs it (screen a session, scrub the turns it flags).

    python -m bench.redaction [--turns 200000] [--baseline old_secrets.py] [--detect-secrets 20000]

The turns alternate generated prose (a date in one of seven) and 300-character pieces of every file
in sample_logs (commands, paths, URLs, JSON), one in a thousand with a key. A floor is printed beside
the figures: one plain ``re`` search per turn. ``--baseline`` times another version of
``normalizers/secrets.py`` (``git show main:normalizers/secrets.py > old_secrets.py``) on the same turns.
``--detect-secrets N`` times detect-secrets (when installed: it is not a dependency) on the first N
turns, ``scan_line`` on each line with its default plugins, beside this version on the same turns.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import re
import sys
import time
from pathlib import Path

from bench.generate import _sentence
from normalizers import secrets


def corpus(n: int) -> list[str]:
    rng = random.Random(7)
    pieces = []
    for p in sorted(Path("sample_logs").rglob("*")):
        if p.is_file():
            text = p.read_text("utf-8", "ignore")
            pieces += [text[i:i + 300] for i in range(0, len(text), 300)]
    texts = []
    for i in range(n):
        if i % 2:
            texts.append(pieces[rng.randrange(len(pieces))])
        else:
            date = f" call me on 2024-0{i % 9 + 1}-1{i % 9} at 10:{i % 60:02d}" if i % 7 == 0 else ""
            texts.append(_sentence(rng, rng.randint(5, 60)) + date)
        if i % 1000 == 0:
            texts[-1] += " key sk-" + "a" * 40
    return texts


def timed(module, sessions: list[list[str]], pii: bool) -> tuple[float, int]:
    redactor = module.Redactor("redact", pii)
    start, found = time.process_time(), 0
    for session in sessions:
        for i in redactor.candidates(session):
            found += len(redactor.scrub(session[i])[1])
    return time.process_time() - start, found


def detect_secrets_beside(texts: list[str]) -> None:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    with default_settings():
        start, found = time.process_time(), 0
        for text in texts:
            for line in text.splitlines():
                found += sum(1 for _ in scan_line(line))
        seconds = time.process_time() - start
    ours, mine = timed(secrets, [texts[i:i + 200] for i in range(0, len(texts), 200)], False)
    print(f"{len(texts)} turns: detect-secrets {seconds:.2f} s ({seconds / len(texts) * 1e6:.0f} us/turn, "
          f"{found} findings, no redaction); this version {ours:.3f} s ({ours / len(texts) * 1e6:.1f} us/turn, "
          f"{mine} findings)")


def load(path: Path):
    spec = importlib.util.spec_from_file_location("baseline_secrets", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200_000)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--detect-secrets", type=int, default=0, metavar="N")
    args = parser.parse_args()
    texts = corpus(args.turns)
    if args.detect_secrets:
        detect_secrets_beside(texts[:args.detect_secrets])
    sessions = [texts[i:i + 200] for i in range(0, len(texts), 200)]
    print(f"{len(texts)} turns, {sum(map(len, texts)) / 1e6:.1f} M characters; CPU seconds, best of 3")
    floor = re.compile("://")
    start = time.process_time()
    hits = sum(1 for t in texts if floor.search(t))
    print(f"floor: one re.search per turn      {time.process_time() - start:7.3f} s  ({hits} hits)")
    versions = [("this version", secrets)] + ([("baseline", load(args.baseline))] if args.baseline else [])
    for pii in (False, True):
        for label, module in versions:
            seconds, found = min(timed(module, sessions, pii) for _ in range(3))
            print(f"{label:13s} redact_pii={pii!s:5s}  {seconds:7.3f} s  {seconds / len(texts) * 1e6:6.2f} us/turn"
                  f"  {found} findings")


if __name__ == "__main__":
    main()
