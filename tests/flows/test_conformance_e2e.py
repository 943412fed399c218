"""Every conformance fixture through the whole core: exact sessions and interactions, gate passed."""

from __future__ import annotations

import pytest

from flows.core.process import process_bytes
from models.settings import Settings
from normalizers.assemble import RunContext
from tests.helpers import CONFORMANCE
from tests.parsers.test_conformance import EXPECTED

pytestmark = pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="../shared/conformance is absent")


@pytest.mark.parametrize("case", EXPECTED, ids=lambda c: c["file"])
def test_conformance_end_to_end(case):
    path = CONFORMANCE / "fixtures" / case["file"]
    outcome = process_bytes(path.read_bytes(), case["file"], RunContext.from_settings(Settings()))
    assert outcome.status == "ok", (outcome.reasons, outcome.detail, [s.detail for s in outcome.sessions])
    assert len(outcome.sessions) == case["sessions"]
    assert sum(s.interactions for s in outcome.sessions) == case["turns"]
    assert all(s.status == "ok" and s.encoded for s in outcome.sessions)


def test_conformance_archive_written_and_checked_independently(tmp_path):

    from flows.pipeline import reconstruct
    from tests.helpers import run_checker

    summary = reconstruct([CONFORMANCE / "fixtures"], tmp_path, Settings())
    c = summary.counts
    assert c.files_quarantined == c.sessions_quarantined == c.sessions_partial == 0, summary.quarantined
    assert c.sessions_ok == sum(case["sessions"] for case in EXPECTED)
    proc = run_checker(tmp_path)
    assert proc.returncode == 0, proc.stdout
