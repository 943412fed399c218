"""Audit report: self-contained HTML whose printed figures match the ledger, rendered by Chromium."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from html import unescape
from pathlib import Path

import pytest
from typer.testing import CliRunner

from audit.ledger import Ledger
from audit.report import figures
from flows.cli.app import app
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import ROOT

CHROMIUM = Path("/usr/bin/chromium")
CELL = re.compile(r'<td data-figure="([^"]+)" data-key="([^"]*)">([^<]*)</td>')


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    """Sample logs plus an input no grammar reads and an empty one: something to quarantine."""
    root = tmp_path_factory.mktemp("report")
    src = root / "in"
    shutil.copytree(ROOT / "sample_logs", src)
    (src / "noise.txt").write_text("just some words without any structure\n" * 3)
    (src / "empty.txt").write_text("")
    out = root / "out"
    summary = reconstruct([src], out, Settings())
    assert summary.counts.files_quarantined >= 1
    result = CliRunner().invoke(app, ["report", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _cells(html: str) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for figure, key, value in CELL.findall(html):
        found.setdefault(figure, {})[unescape(key)] = unescape(value)
    return found


def test_report_is_self_contained(archive):
    html = (archive / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower()
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)
    assert html.count("<svg") >= 7
    for title in ("Sessions by status", "Coverage", "Formats", "Turns per session", "Unknown models",
                  "Redactions by type", "Quarantine reasons", "Source accounting", "Format drift"):
        assert f"<h2>{title}</h2>" in html


def test_printed_figures_match_the_ledger_and_datasets(archive):
    cells = _cells((archive / "report.html").read_text())
    ledger = Ledger(archive / "ledger.sqlite")
    try:
        run_id = ledger.runs.latest_id()
        counts = ledger.runs.counts(run_id)
        quarantined = ledger.quarantine.of_run(run_id)
        fig = figures(archive, ledger)
    finally:
        ledger.close()
    assert cells["run"]["run_id"] == run_id
    assert int(cells["status"]["ok"]) == counts.sessions_ok
    assert int(cells["status"]["partial"]) == counts.sessions_partial
    assert int(cells["status"]["quarantined"]) == counts.sessions_quarantined
    assert int(cells["coverage"]["ok"]) == counts.sessions_ok
    reasons: dict[str, int] = {}
    for q in quarantined:
        for r in q.reasons:
            reasons[r] = reasons.get(r, 0) + 1
    assert {k: int(v) for k, v in cells["quarantine"].items()} == reasons and reasons
    assert sum(int(v) for v in cells["formats"].values()) == counts.sessions_ok + counts.sessions_partial
    assert sum(int(v) for v in cells["turns"].values()) == counts.sessions_ok + counts.sessions_partial
    assert int(cells["models"]["assistant_turns"]) == fig["models"]["assistant_turns"] > 0
    assert int(cells["redactions"]["openai_api_key"]) == 1
    assert int(cells["accounting"]["sessions with unaccounted source"]) == counts.sessions_unaccounted
    assert {k: int(v) for k, v in cells.get("drift", {}).items()} == fig["drift"]


def test_report_of_an_unknown_run_fails(archive):
    assert CliRunner().invoke(app, ["report", "--out", str(archive), "--run", "nope"]).exit_code != 0


def _png_pixels(data: bytes) -> tuple[int, int, set[bytes]]:
    """Width, height and the distinct pixel values of an 8-bit RGB/RGBA PNG (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, [], 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    seen: set[bytes] = set()
    for y in range(height):
        start = y * (stride + 1)
        ftype, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev, strict=True))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        if len(seen) < 64:
            row = bytes(line)
            seen.update(row[i:i + bpp] for i in range(0, stride, bpp * 7))
        prev = line
    return width, height, seen


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed")
def test_chromium_renders_a_page_that_is_not_blank(archive, tmp_path):
    png = tmp_path / "report.png"
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}", "--window-size=1200,2000",
           (archive / "report.html").resolve().as_uri()]
    subprocess.run(cmd, check=True, capture_output=True, timeout=180)
    width, height, colours = _png_pixels(png.read_bytes())
    assert (width, height) == (1200, 2000)
    assert len(colours) >= 8  # text, bars in several colours, grid lines: not a blank page
