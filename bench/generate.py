"""Deterministic benchmark data: WhatsApp exports, a ChatGPT export, many small files of mixed formats.

    python -m bench.generate [--scale 1.0] [--out bench/data] [--set NAME ...]

Scale 1.0 gives the sizes the benchmark is specified for (issue 11): a ~100 MB WhatsApp text file
(~1M messages, 15% multi-line, some system lines, non-ASCII names), a ~1 GB one of the same kind
(on demand only), a ~240 MB conversations.json of 20,000 conversations, and 10,000 small files
taking turns over seven formats. The same seed and scale always give the same bytes.
"""

from __future__ import annotations

import argparse
import random
import shutil
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

    def rows():
        t = datetime(2019, 1, 1, 8, 0)
        for _ in range(messages):
            t += timedelta(seconds=rng.randint(5, 90))
            stamp = f"{t.month}/{t.day}/{t.year % 100}, {t.hour:02d}:{t.minute:02d} - "
            if rng.random() < 0.02:
                line = stamp + rng.choice(SYSTEM).format(a=rng.choice(NAMES), b=rng.choice(NAMES))
            else:
                line = f"{stamp}{rng.choice(NAMES)}: {_sentence(rng, rng.randint(3, 18))}"
                if rng.random() < 0.15:
                    line += "\n" + "\n".join(_sentence(rng, rng.randint(2, 12)) for _ in range(rng.randint(1, 3)))
            yield line

    _write_lines(path, rows())
    return messages


def _write_lines(path: Path, lines) -> None:
    """Lines to a file, 10,000 at a time."""
    chunk: list[str] = []
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            chunk.append(line)
            if len(chunk) >= 10000:
                fh.write("\n".join(chunk) + "\n")
                chunk.clear()
        if chunk:
            fh.write("\n".join(chunk) + "\n")


IRC_EVENTS = ["*** {a} has joined #reconstruct", "*** {a} has quit (Ping timeout: 240 seconds)",
              "*** {a} is now known as {a}_away", "*** {a} sets mode: +o {b}", "* {a} waves"]


def irc(path: Path, lines: int, seed: int = 4) -> int:
    """A supybot/limnoria channel log: one line a turn, a tenth of them joins, quits, modes and actions."""
    rng = random.Random(seed)
    nicks = [n.split()[0].lower() for n in NAMES]

    def rows():
        t = datetime(2012, 10, 18, 9, 0)
        for _ in range(lines):
            t += timedelta(seconds=rng.randint(1, 40))
            stamp = f"{t:%Y-%m-%dT%H:%M:%S}+0000  "
            if rng.random() < 0.1:
                yield stamp + rng.choice(IRC_EVENTS).format(a=rng.choice(nicks), b=rng.choice(nicks))
            else:
                yield f"{stamp}<{rng.choice(nicks)}> {_sentence(rng, rng.randint(3, 18))}"

    _write_lines(path, rows())
    return lines


def transcript(path: Path, turns: int, seed: int = 5) -> int:
    """A plain ``[time] Name: text`` transcript, a sixth of the turns with continuation lines."""
    rng = random.Random(seed)

    def rows():
        t = datetime(2025, 1, 1, 8, 0)
        for i in range(turns):
            t += timedelta(seconds=rng.randint(5, 90))
            line = f"[{t:%Y-%m-%d %H:%M:%S}] {NAMES[i % 3] if i % 2 else 'User'}: {_sentence(rng, rng.randint(3, 18))}"
            if rng.random() < 0.15:
                line += "\n" + "\n".join(_sentence(rng, rng.randint(2, 12)) for _ in range(rng.randint(1, 3)))
            yield line

    _write_lines(path, rows())
    return turns


def _turns(rng: random.Random, start: datetime, speakers: list[str]) -> list[tuple[datetime, str, str]]:
    """5-20 turns (time, speaker, text), the speakers taking turns in order."""
    turns, t = [], start
    for j in range(rng.randint(5, 20)):
        t += timedelta(seconds=rng.randint(2, 120))
        turns.append((t, speakers[j % len(speakers)], _sentence(rng, rng.randint(5, 40))))
    return turns


AI = ["User", "Assistant (openai:gpt-4o@2024-08-06)"]


def _epoch(t: datetime) -> int:
    return int(t.replace(tzinfo=UTC).timestamp())


def _transcript(rng: random.Random, i: int, start: datetime) -> tuple[str, bytes]:
    lines = [f"Session: bench-{i:05d}"] + [f"[{t:%Y-%m-%d %H:%M:%S}] {who}: {text}"
                                          for t, who, text in _turns(rng, start, AI)]
    return f"chat-{i:05d}.txt", ("\n".join(lines) + "\n").encode()


def _markdown(rng: random.Random, i: int, start: datetime) -> tuple[str, bytes]:
    parts = [f"Session: md-{i:05d}"] + [f"## {who} ({t:%Y-%m-%d %H:%M:%S})\n{text}\n"
                                        for t, who, text in _turns(rng, start, ["User", "Assistant"])]
    return f"notes-{i:05d}.md", "\n".join(parts).encode()


def _whatsapp(rng: random.Random, i: int, start: datetime) -> tuple[str, bytes]:
    lines = [f"{t.month}/{t.day}/{t.year % 100}, {t:%H:%M} - {who}: {text}"
             for t, who, text in _turns(rng, start, rng.sample(NAMES, 3))]
    return f"WhatsApp Chat {i:05d}.txt", ("\n".join(lines) + "\n").encode()


def _irc(rng: random.Random, i: int, start: datetime) -> tuple[str, bytes]:
    nicks = [n.split()[0].lower() for n in rng.sample(NAMES[:6], 3)]
    lines = [f"{t:%Y-%m-%dT%H:%M:%S}+0000  <{who}> {text}" for t, who, text in _turns(rng, start, nicks)]
    return f"channel-{i:05d}.log", ("\n".join(lines) + "\n").encode()


def _telegram(rng: random.Random, i: int, start: datetime) -> tuple[str, bytes]:
    people = rng.sample(NAMES, 2)
    messages = [{"id": k, "type": "message", "date": f"{t:%Y-%m-%dT%H:%M:%S}",
                 "date_unixtime": str(_epoch(t)), "from": who,
                 "from_id": f"user{1000 + people.index(who)}", "text": text,
                 "text_entities": [{"type": "plain", "text": text}]}
                for k, (t, who, text) in enumerate(_turns(rng, start, people), 1)]
    chat = {"name": f"Chat {i}", "type": "personal_chat", "id": 10**6 + i, "messages": messages}
    return f"result-{i:05d}.json", orjson.dumps(chat, option=orjson.OPT_INDENT_2)


def _discord(rng: random.Random, i: int, start: datetime) -> tuple[str, bytes]:
    people = rng.sample(NAMES, 3)
    messages = [{"id": str(k), "type": "Default", "timestamp": f"{t:%Y-%m-%dT%H:%M:%S}+00:00", "content": text,
                 "author": {"id": str(100 + people.index(who)), "name": who.split()[0].lower(), "nickname": who,
                            "isBot": False}, "attachments": [], "reactions": []}
                for k, (t, who, text) in enumerate(_turns(rng, start, people), 1)]
    export = {"guild": {"id": "900", "name": "Bench"}, "channel": {"id": str(10**6 + i), "type": "GuildTextChat",
              "name": f"chan-{i:05d}"}, "messages": messages, "messageCount": len(messages)}
    return f"channel-{i:05d}.json", orjson.dumps(export)


def _slack(rng: random.Random, i: int, start: datetime) -> tuple[str, bytes]:
    users = [f"U{k:04d}" for k in rng.sample(range(len(NAMES)), 3)]
    messages = [{"type": "message", "user": who, "text": text, "ts": f"{_epoch(t)}.{k:06d}"}
                for k, (t, who, text) in enumerate(_turns(rng, start, users))]
    return f"c{i:05d}/{start:%Y-%m-%d}.json", orjson.dumps(messages, option=orjson.OPT_INDENT_2)


# format -> renderer (rng, index, start) -> (name inside its batch folder, bytes); files take turns
MIXED = {"transcript": _transcript, "markdown": _markdown, "whatsapp": _whatsapp, "irc": _irc,
         "telegram": _telegram, "discord": _discord, "slack": _slack}
SLACK_USERS = [{"id": f"U{k:04d}", "name": n.split()[0].lower(), "profile": {"display_name": n}}
               for k, n in enumerate(NAMES)]


def mixed(folder: Path, count: int, seed: int = 2) -> int:
    """Small files of every format in MIXED, in turn, 1,000 to a folder (<format>/batch-NN/); returns count."""
    rng = random.Random(seed)
    formats = list(MIXED.items())
    for i in range(count):
        fmt, render = formats[i % len(formats)]
        name, data = render(rng, i, datetime(2025, 1, 1) + timedelta(minutes=i * 7))
        batch = folder / fmt / f"batch-{i // 1000:02d}"
        if not batch.exists():
            batch.mkdir(parents=True)
            if fmt == "slack":  # a workspace export: the user directory beside the channel folders
                (batch / "users.json").write_bytes(orjson.dumps(SLACK_USERS))
        (batch / name).parent.mkdir(exist_ok=True)
        (batch / name).write_bytes(data)
    return count


def conversations(path: Path, count: int, seed: int = 3, mean_bytes: int = 14_000) -> int:
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


VERSION = 2  # bump when a set's bytes change: data generated by another version is regenerated
# name -> (path under the data folder, writer(path, count), count at scale 1.0)
SETS = {
    "whatsapp": ("whatsapp.txt", whatsapp, 1_000_000),                        # ~98 MB
    "whatsapp_1gb": ("whatsapp-1gb.txt", whatsapp, 10_000_000),               # ~980 MB, only on demand
    "chatgpt": ("chatgpt/conversations.json", conversations, 20_000),        # ~240 MB
    "mixed": ("mixed", mixed, 10_000),                                        # ~25 MB in 10,000 files
    "irc": ("irc.log", irc, 1_120_000),                                       # ~100 MB, only with --only
    "transcript": ("transcript.txt", transcript, 1_000_000),                  # ~100 MB, only with --only
}
DEFAULT = ("whatsapp", "chatgpt", "mixed")


def generate(out: Path, scale: float = 1.0, names: tuple[str, ...] = DEFAULT) -> dict[str, Path]:
    """Generate each named set under ``out`` unless this version already did; returns name -> path."""
    paths = {}
    for name in names:
        rel, writer, count = SETS[name]
        path, marker = out / rel, out / f".{name}.v{VERSION}"
        if not marker.exists():
            if path.is_dir():
                shutil.rmtree(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            writer(path, max(10, int(count * scale)))
            marker.write_text("complete\n")
        paths[name] = path
    return paths


def size(path: Path) -> int:
    """Bytes of a file, or of every file under a folder."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=Path("bench/data"))
    parser.add_argument("--set", choices=SETS, action="append", help="only this set (repeatable)")
    args = parser.parse_args()
    for name, path in generate(args.out, args.scale, tuple(args.set or DEFAULT)).items():
        print(f"{name}: {path} ({size(path) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
