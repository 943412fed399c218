"""Scheduling without a server: what `serve` registers, and that prefect.yaml names a real flow."""

from __future__ import annotations

from datetime import timedelta

import yaml
from typer.testing import CliRunner

from flows.cli.app import app
from flows.cli.ops import serve_parameters
from flows.serve import ServePlan, no_overlap
from tests.helpers import ROOT


def test_a_cron_plan_keeps_its_zone_and_an_interval_plan_starts_now(tmp_path):
    params = serve_parameters([ROOT / "sample_logs"], tmp_path, {"source_tz": "Europe/Stockholm"})
    assert params["paths"] == [str((ROOT / "sample_logs").resolve())] and params["out"] == str(tmp_path.resolve())
    cron = ServePlan("n", params, cron="30 3 * * *", timezone="Europe/Stockholm").schedule()
    assert (cron.cron, cron.timezone) == ("30 3 * * *", "Europe/Stockholm")
    every = ServePlan("n", params, interval=20).schedule()
    assert every.interval == timedelta(seconds=20)


def test_no_two_runs_of_one_schedule_overlap():
    limit = no_overlap()
    assert limit.limit == 1 and limit.collision_strategy.value == "CANCEL_NEW"


def test_serve_refuses_cron_with_interval_and_a_missing_path(tmp_path):
    both = CliRunner().invoke(app, ["serve", str(ROOT / "sample_logs"), "--out", str(tmp_path),
                                    "--cron", "* * * * *", "--interval", "5"])
    assert both.exit_code == 2
    missing = CliRunner().invoke(app, ["serve", str(tmp_path / "nope"), "--out", str(tmp_path), "--interval", "5"])
    assert missing.exit_code == 4


def test_prefect_yaml_points_at_the_flow():
    from prefect.utilities.importtools import import_object

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployment = spec["deployments"][0]
    flow = import_object(deployment["entrypoint"])
    assert flow.name == "reconstruct-archive"
    assert set(deployment["parameters"]) <= {"paths", "out", "settings", "force", "show_progress"}
    assert deployment["schedules"][0]["cron"] == "0 2 * * *"
    assert deployment["concurrency_limit"] == {"limit": 1, "collision_strategy": "CANCEL_NEW"}
