"""Deterministic benchmark data: a WhatsApp export, an archive of small transcripts, a ChatGPT export.

    python -m bench.generate [--scale 1.0] [--out bench/data]

Scale 1.0 gives the sizes the benchmark is specified for: a ~100 MB WhatsApp text file (~1M
messages, 15% multi-line, some system lines, non-ASCII names), 10,000 transcripts, and a ~200 MB
conversations.json with 20,000 conversations. The same seed and scale always give the same bytes.
"""

from __future__ import annotations

import argparse
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

NAMES = ["Åsa Öberg", "José Núñez", "Zoë Lynn", "Bob", "Alice Smith", "Mikael", "Ingrid", "+46 70 123 45 67",
         "Łukasz", "Ngozi", "Chen Wei", "Dr. Feather"]
WORDS = ["the", "export", "ran", "at", "night", "and", "the", "ledger", "says", "every", "shard", "finished",
         "before", "two", "so", "we", "can", "check", "the", "quarantine", "list", "tomorrow", "morning",
         "with", "coffee", "and", "then", "rerun", "what", "failed"]
SYSTEM = ["{a} added {b}", "{a} left", "{a} changed the subject from \"plans\" to \"plans v2\"",
          "Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, "
          "can read or listen to them. Tap to learn more."]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def whatsapp(path: Path, messages: int, seed: int = 1) -> int:
    """An Android 24 h export (M/D/YY); returns the number of messages (system lines included)."""
    rng = random.Random(seed)
    t = datetime(2019, 1, 1, 8, 0)
    chunk: list[str] = []
    with path.open("w", encoding="utf-8") as fh:
        for _ in range(messages):
            t += timedelta(seconds=rng.randint(5, 90))
            stamp = f"{t.month}/{t.day}/{t.year % 100}, {t.hour:02d}:{t.minute:02d} - "
            if rng.random() < 0.02:
                line = stamp + rng.choice(SYSTEM).format(a=rng.choice(NAMES), b=rng.choice(NAMES))
            else:
                line = f"{stamp}{rng.choice(NAMES)}: {_sentence(rng, rng.randint(3, 18))}"
                if rng.random() < 0.15:
                    line += "\n" + "\n".join(_sentence(rng, rng.randint(2, 12)) for _ in range(rng.randint(1, 3)))
            chunk.append(line)
            if len(chunk) >= 10000:
                fh.write("\n".join(chunk) + "\n")
                chunk.clear()
        if chunk:
            fh.write("\n".join(chunk) + "\n")
    return messages


def transcripts(folder: Path, count: int, seed: int = 2) -> int:
    """Small plain transcripts, 5-20 turns each; returns the number of files."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        t = datetime(2025, 1, 1) + timedelta(minutes=i * 7)
        lines = [f"Session: bench-{i:05d}"]
        for j in range(rng.randint(5, 20)):
            t += timedelta(seconds=rng.randint(2, 120))
            who = "User" if j % 2 == 0 else "Assistant (openai:gpt-4o@2024-08-06)"
            lines.append(f"[{t:%Y-%m-%d %H:%M:%S}] {who}: {_sentence(rng, rng.randint(5, 40))}")
        sub = folder / f"batch-{i // 1000:02d}"
        sub.mkdir(exist_ok=True)
        (sub / f"chat-{i:05d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return count


def conversations(path: Path, count: int, seed: int = 3, mean_bytes: int = 10_000) -> int:
    """A ChatGPT conversations.json of ``count`` conversations (~mean_bytes each); returns count."""
    rng = random.Random(seed)
    base = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
    with path.open("wb") as fh:
        fh.write(b"[")
        for i in range(count):
            mapping = {"root": {"id": "root", "parent": None, "children": [], "message": None}}
            parent, t, size = "root", base + i * 600, 0
            j = 0
            while size < mean_bytes * rng.uniform(0.5, 1.5):
                node = f"c{i}-m{j}"
                role = "user" if j % 2 == 0 else "assistant"
                text = _sentence(rng, rng.randint(20, 150))
                size += len(text) + 300
                t += rng.randint(3, 60)
                mapping[parent]["children"].append(node)
                mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
                    "id": node, "author": {"role": role, "name": None, "metadata": {}}, "create_time": t,
                    "update_time": None, "content": {"content_type": "text", "parts": [text]}, "status":
                    "finished_successfully", "end_turn": role == "assistant", "weight": 1.0, "metadata":
                    {"model_slug": "gpt-4o"} if role == "assistant" else {}, "recipient": "all"}}
                parent = node
                j += 1
            conv = {"title": f"Conversation {i}", "create_time": base + i * 600, "update_time": t,
                    "mapping": mapping, "current_node": parent, "id": f"bench-conv-{i:05d}",
                    "default_model_slug": "gpt-4o"}
            fh.write((b"," if i else b"") + orjson.dumps(conv))
        fh.write(b"]")
    return count


def generate(out: Path, scale: float = 1.0) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {"whatsapp": out / "whatsapp.txt", "transcripts": out / "transcripts",
             "chatgpt": out / "chatgpt" / "conversations.json"}
    paths["chatgpt"].parent.mkdir(exist_ok=True)
    whatsapp(paths["whatsapp"], max(200, int(1_000_000 * scale)))
    transcripts(paths["transcripts"], max(10, int(10_000 * scale)))
    conversations(paths["chatgpt"], max(10, int(20_000 * scale)))
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=Path("bench/data"))
    args = parser.parse_args()
    for name, path in generate(args.out, args.scale).items():
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size
        print(f"{name}: {path} ({size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
