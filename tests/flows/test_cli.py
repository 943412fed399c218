"""The command line through the real flow (embedded Prefect under the test harness): exit codes and listings."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.cli.app import app
from flows.exits import ExitCode
from parsers import registry
from tests.helpers import ROOT

runner = CliRunner()


@pytest.fixture
def archive(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "good.txt").write_text("User: hi\nAssistant: hello\n")
    return src


def test_run_samples_exits_0(prefect_harness, tmp_path):
    result = runner.invoke(app, ["run", str(ROOT / "sample_logs"), "--out", str(tmp_path / "o"), "--workers", "1"])
    assert result.exit_code == ExitCode.OK, result.output
    assert "quarantined 0" in result.output


def test_quarantine_exits_3_and_is_listed(prefect_harness, archive, tmp_path):
    (archive / "broken.txt").write_bytes(b"User: caf\xc3\xa9 cr\xe8me\n")  # UTF-8 and Latin-1 in one file
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", str(archive), "--out", str(out), "--workers", "1"])
    assert result.exit_code == ExitCode.QUARANTINED, result.output
    listing = runner.invoke(app, ["quarantine", "--out", str(out)])
    assert "broken.txt" in listing.output and "undecodable" in listing.output
    status = runner.invoke(app, ["status", "--out", str(out)])
    assert status.exit_code == 0 and "completed" in status.output


def test_rerun_failed_only(prefect_harness, archive, tmp_path):
    (archive / "later.txt").write_text("just prose, no speakers\n")
    out = tmp_path / "o"
    assert runner.invoke(app, ["run", str(archive), "--out", str(out), "--workers", "1"]).exit_code == 3
    (archive / "later.txt").write_text("User: fixed\nAssistant: thanks\n")
    result = runner.invoke(app, ["rerun", "--failed", "--out", str(out)])
    assert result.exit_code == ExitCode.OK, result.output
    assert "rerunning 1 inputs" in result.output


def test_cannot_start_exits_4(tmp_path):
    result = runner.invoke(app, ["run", "/no/such/path", "--out", str(tmp_path / "o")])
    assert result.exit_code == ExitCode.CANNOT_START, result.output


@pytest.mark.parametrize("args", [["run", ".", "--format", "nope"], ["run", ".", "--source-tz", "Mars/Olympus"]])
def test_a_bad_flag_value_exits_2(args, tmp_path):
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "o")])
    assert result.exit_code == ExitCode.USAGE, result.output


def test_formats_lists_the_registry():
    result = runner.invoke(app, ["formats"])
    assert result.exit_code == 0
    for g in registry.all_grammars():
        assert g.name in result.output
