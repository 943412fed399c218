"""A run's result is typed (``RunSummary``, ``RunCounts``, the ledger's quarantine entries), and the
product speaks of statuses and outcomes through the enums of models/status.py, never their literals."""

from __future__ import annotations

import ast
import pickle

import pytest

from audit.ledger import Failed, QuarantineEntry
from flows import alerts
from flows.pipeline import reconstruct
from flows.summary import RunSummary
from models.settings import Settings
from models.status import FileStatus, RunCounts, RunOutcome, RunStatus, SessionStatus
from tests.helpers import ROOT

TRANSCRIPT = "Session: s-1\nUser: hello there\nAssistant: hi, how can I help?\n"


def test_a_run_returns_a_typed_summary(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "chat.txt").write_text(TRANSCRIPT)
    (src / "empty.txt").write_text("")
    summary = reconstruct([src], tmp_path / "out", Settings(workers=1))
    assert isinstance(summary, RunSummary) and summary.status is RunStatus.COMPLETED
    assert isinstance(summary.counts, RunCounts)
    assert (summary.counts.files, summary.counts.files_quarantined, summary.counts.sessions_ok) == (2, 1, 1)
    assert summary.counts.quarantined_any
    [entry] = summary.quarantined
    assert isinstance(entry, QuarantineEntry) and entry.what is Failed.FILE and entry.reasons == ("empty",)
    assert pickle.loads(pickle.dumps(summary)) == summary  # it crosses Prefect's and Dask's process boundaries
    again = reconstruct([src], tmp_path / "out", Settings(workers=1))
    assert again.counts.files_skipped == 1 and not again.counts.sessions_ok


def test_counts_say_whether_anything_was_quarantined():
    assert not RunCounts(files=3, sessions_ok=3).quarantined_any
    assert RunCounts(sessions_quarantined=1).quarantined_any


def test_an_alert_s_outcome_is_an_enum():
    assert alerts.outcome_of(RuntimeError("x")) is RunOutcome.CRASHED
    assert alerts.outcome_of(KeyboardInterrupt()) is RunOutcome.INTERRUPTED
    assert set(alerts.OUTCOMES) == set(RunOutcome)


STATUS_WORDS = {s.value for enum in (FileStatus, SessionStatus, RunStatus, RunOutcome) for s in enum}


def _literal_statuses(tree: ast.AST) -> list[int]:
    """Lines where a status word is compared with a status or outcome, returned, or stored under a
    ``status`` key as a bare string instead of its enum member (a document's ``coverage``, "full" or
    "partial", is the document's vocabulary, not a status)."""
    def word(node) -> bool:
        return isinstance(node, ast.Constant) and node.value in STATUS_WORDS

    def about_status(node) -> bool:
        return not word(node) and any(w in ast.unparse(node) for w in ("status", "outcome", "skip"))

    found = []
    for node in ast.walk(tree):
        sides = (node.left, *node.comparators) if isinstance(node, ast.Compare) else ()
        compared = any(word(n) for n in sides) and any(about_status(n) for n in sides)
        if compared or (isinstance(node, ast.Return) and word(node.value)):
            found.append(node.lineno)
        elif isinstance(node, ast.Dict):
            found += [v.lineno for k, v in zip(node.keys, node.values, strict=True)
                      if isinstance(k, ast.Constant) and k.value == "status" and word(v)]
    return found


@pytest.mark.parametrize("package", ["flows", "audit"])
def test_no_status_sentinel_strings(package):
    wrong = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        lines = _literal_statuses(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            wrong[str(path.relative_to(ROOT))] = lines
    assert not wrong, f"status words as bare strings (use models/status.py's enums): {wrong}"
