"""Scale-out settings from the command line, `serve` and prefect.yaml: the missing ``dask`` extra is one
line and exit 4; `serve --dask-address` and a deployment carry the address into every run's settings."""

from __future__ import annotations

import sys

import pytest
import yaml
from typer.testing import CliRunner

from flows.cli.app import app
from flows.exits import ExitCode
from models.settings import Settings
from tests.helpers import ROOT

runner = CliRunner()


def test_dask_address_without_the_dask_extra_is_one_line_and_exit_4(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the extra were not installed
    result = runner.invoke(app, ["run", str(ROOT / "sample_logs"), "--out", str(tmp_path / "o"),
                                 "--dask-address", "tcp://127.0.0.1:8786"])
    assert result.exit_code == ExitCode.CANNOT_START
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert "'dask' extra" in result.output and "reconstruct[dask]" in result.output
    assert not (tmp_path / "o").exists()  # refused before anything started


def test_serve_dask_address_reaches_the_runs_settings(monkeypatch, tmp_path):
    plans = []
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr("flows.serve.serve", lambda plan, *a, **k: plans.append(plan))
    result = runner.invoke(app, ["serve", "sample_logs", "--out", str(tmp_path / "o"),
                                 "--dask-address", "tcp://10.0.0.5:8786"])
    assert result.exit_code == 0, result.output
    [plan] = plans
    assert plan.parameters["settings"]["dask_address"] == "tcp://10.0.0.5:8786"
    assert plan.parameters["paths"] == [str(ROOT / "sample_logs")]  # served from the repository's folder


def test_prefect_yaml_passes_the_dask_address_to_the_flow(monkeypatch):
    from prefect.utilities.templating import apply_values

    [deployment] = yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]
    monkeypatch.setenv("RECONSTRUCT_DASK_ADDRESS", "tcp://scheduler:8786")
    assert Settings(**apply_values(deployment["parameters"]["settings"], {})).dask_address == "tcp://scheduler:8786"
    monkeypatch.delenv("RECONSTRUCT_DASK_ADDRESS")
    assert Settings(**apply_values(deployment["parameters"]["settings"], {})).dask_address is None


def test_a_scheduler_that_does_not_answer_is_one_line_and_exit_4(monkeypatch, tmp_path):
    pytest.importorskip("distributed")
    from tests.flows.conftest import free_port

    monkeypatch.setattr("flows.cluster.CONNECT_SECONDS", 2)
    result = runner.invoke(app, ["run", str(ROOT / "sample_logs"), "--out", str(tmp_path / "o"),
                                 "--dask-address", f"tcp://127.0.0.1:{free_port()}"])
    assert result.exit_code == ExitCode.CANNOT_START, result.output
    assert "no Dask scheduler answers at tcp://127.0.0.1:" in result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()  # refused before the run started
