"""The shard detects the inputs it reads whole a window at a time (``registry.detect_many``) and hands each
its detection: the same outcomes and documents as detecting each alone, a failing detector quarantining
its own input only, and inputs the window cannot hold detected alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flows.core import ingest, window
from flows.core.shard import run_shard
from models.errors import Reason
from models.settings import Settings
from models.status import FileStatus
from parsers import registry
from tests.helpers import BREAKS_ZOOM, ROOT, break_zoom_detection

SAMPLES = sorted(p for p in (ROOT / "sample_logs").rglob("*")
                 if p.is_file() and p.suffix in (".txt", ".json", ".log") and registry.conversation_of(p.name) is None)
"""Sample logs that are inputs on their own (a conversation over several files is detected by its group)."""


def _run(src: Path, out: Path, settings: Settings | None = None):
    settings = settings or Settings(workers=1)
    return run_shard(ingest.discover([src], settings), out, settings)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _copy(tmp_path: Path, paths: list[Path]) -> Path:
    src = tmp_path / "in"
    for i, p in enumerate(paths):
        (src / f"{i:03d}").mkdir(parents=True)
        shutil.copy(p, src / f"{i:03d}" / p.name)
    return src


def test_the_sample_logs_need_no_detection_alone(tmp_path, monkeypatch):
    """Every input read whole gets its detection from the window: ``registry.detect`` is never asked."""
    src = _copy(tmp_path, SAMPLES)
    alone = _run(src, tmp_path / "alone")

    def refused(*args, **kwargs):
        raise AssertionError("detected alone")

    monkeypatch.setattr(registry, "detect", refused)
    batched = _run(src, tmp_path / "batched")
    assert len(SAMPLES) > 20
    assert [(f.source_key, f.status, f.grammar, f.reasons, f.detail) for f in batched.files] == \
        [(f.source_key, f.status, f.grammar, f.reasons, f.detail) for f in alone.files]
    assert _tree(tmp_path / "batched") == _tree(tmp_path / "alone")


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_any_window_size_gives_the_same_documents(tmp_path, monkeypatch, size):
    src = _copy(tmp_path, SAMPLES[:12])
    whole = _run(src, tmp_path / "whole")
    monkeypatch.setattr(window, "WINDOW_INPUTS", size)
    small = _run(src, tmp_path / "small")
    assert [(f.source_key, f.status, f.grammar) for f in small.files] == \
        [(f.source_key, f.status, f.grammar) for f in whole.files]
    assert _tree(tmp_path / "small") == _tree(tmp_path / "whole")


def test_a_detector_that_fails_quarantines_its_input_alone(tmp_path, monkeypatch):
    """``internal``, with the failing grammar named; the other inputs of the window are read as before."""
    break_zoom_detection(monkeypatch, ZeroDivisionError("a detector's bug"))
    src = _copy(tmp_path, SAMPLES[:4])
    (src / "bad.txt").write_text(BREAKS_ZOOM)
    result = _run(src, tmp_path / "out")
    bad = [f for f in result.files if f.source_key.endswith("bad.txt")]
    assert len(bad) == 1 and bad[0].status is FileStatus.QUARANTINED
    assert bad[0].reasons == [Reason.INTERNAL.value]
    assert "zoom" in bad[0].detail and "ZeroDivisionError" in bad[0].detail
    others = [f for f in result.files if not f.source_key.endswith("bad.txt")]
    assert len(others) == 4 and all(f.status is not FileStatus.QUARANTINED for f in others)


def test_a_batch_that_fails_is_recorded_on_each_of_its_inputs(tmp_path, monkeypatch):
    """Should the batched detection itself fail, each input of the window is quarantined with the failure."""
    def failing(*args, **kwargs):
        raise RuntimeError("polars went away")

    monkeypatch.setattr(registry, "detect_many", failing)
    result = _run(_copy(tmp_path, SAMPLES[:3]), tmp_path / "out")
    assert [f.reasons for f in result.files] == [[Reason.INTERNAL.value]] * 3
    assert all("batched detection failed: RuntimeError: polars went away" in f.detail for f in result.files)
