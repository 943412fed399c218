"""Scheduling: `serve` hands Prefect the right schedule and parameters; prefect.yaml names a real flow."""

from __future__ import annotations

import yaml
from prefect import Flow
from typer.testing import CliRunner

from flows.cli import app
from tests.helpers import ROOT


def test_serve_builds_the_schedule_and_parameters(monkeypatch, tmp_path):
    seen = {}

    def fake_serve(self, **kwargs):
        seen.update(kwargs, flow=self)

    monkeypatch.setattr(Flow, "serve", fake_serve)
    result = CliRunner().invoke(app, ["serve", str(ROOT / "sample_logs"), "--out", str(tmp_path),
                                      "--cron", "30 3 * * *", "--timezone", "Europe/Stockholm"])
    assert result.exit_code == 0, result.output
    schedule = seen["schedules"][0]
    assert (schedule.cron, schedule.timezone) == ("30 3 * * *", "Europe/Stockholm")
    params = seen["parameters"]
    assert params["paths"] == [str((ROOT / "sample_logs").resolve())] and params["out"] == str(tmp_path.resolve())
    assert seen["flow"].name == "reconstruct-archive"


def test_prefect_yaml_points_at_the_flow():
    from prefect.utilities.importtools import import_object

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployment = spec["deployments"][0]
    flow = import_object(deployment["entrypoint"])
    assert flow.name == "reconstruct-archive"
    assert set(deployment["parameters"]) <= {"paths", "out", "settings", "force", "show_progress"}
    assert deployment["schedules"][0]["cron"] == "0 2 * * *"
