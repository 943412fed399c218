"""End to end: a secret planted in the inputs appears in no output file, dataset, report or diff.

The secret is fake and built at runtime. Every file under the output root is searched byte for
byte (documents, quarantine records, revision blobs and index, exports, the report, the ledger);
Parquet is compressed, so its tables are read back and every string cell searched.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from flows.cli.app import app
from flows.pipeline import reconstruct
from models.settings import Settings

CORE = "Q7" * 20  # the part of each key that must never be written
SECRETS = {
    "openai": "sk-" + "proj-" + CORE,
    "github": "gh" + "p_" + CORE[:36],
    "url": "https://bob:" + CORE + "@example.org/",
}


def _inputs(root: Path) -> Path:
    src = root / "in"
    src.mkdir()
    (src / "chat.txt").write_text(
        f"User: here is my key {SECRETS['openai']}\nAssistant: please rotate it\n"
        f"User: and {SECRETS['github']} too, db at {SECRETS['url']}\nAssistant: noted\n")
    turns = "".join(f"User: q{i} {SECRETS['openai']}\nAssistant: a{i}\n" for i in range(8))
    (src / "long.txt").write_text("Session: long\n" + turns)
    return src


def _everything(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.is_file()]


def test_planted_secret_never_reaches_any_output(tmp_path):
    src = _inputs(tmp_path)
    out = tmp_path / "out"
    reconstruct([src], out, Settings())
    # a shrinking reparse (turns truncated): the quarantine record holds the rejected document
    second = reconstruct([src], out, Settings(max_turn_chars=12))
    assert second.counts.sessions_quarantined >= 1
    runner = CliRunner()
    for fmt in ("csv", "jsonl", "parquet"):
        exported = runner.invoke(app, ["export", "--out", str(out), "--format", fmt, "--to", str(out / "exp")])
        assert exported.exit_code == 0
    assert runner.invoke(app, ["report", "--out", str(out)]).exit_code == 0
    doc = sorted((out / "sessions").rglob("*.json"))[0].relative_to(out)
    assert runner.invoke(app, ["verify", "--out", str(out)]).exit_code == 0
    diff = runner.invoke(app, ["diff", str(doc), "v0", "v0", "--out", str(out)])
    assert diff.exit_code == 0 and CORE not in diff.stdout

    files = _everything(out)
    assert any(p.suffix == ".parquet" for p in files) and any(".revisions" in p.parts for p in files)
    assert any(p.parts[-3:-1] == ("in", "long.txt") and "quarantine" in p.parts for p in files)
    for path in files:
        data = path.read_bytes()
        assert CORE.encode() not in data, path
        if path.suffix == ".parquet":
            frame = pl.read_parquet(path)
            for col in frame.columns:
                if frame[col].dtype == pl.Utf8:
                    assert not frame[col].str.contains(CORE, literal=True).any(), (path, col)
    sessions = pl.read_parquet(out / "exp" / "sessions.parquet")
    assert sessions["redactions"].sum() >= 3
    assert "openai_api_key" in (out / "report.html").read_text()
