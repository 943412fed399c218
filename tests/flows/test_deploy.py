"""The deployment path end to end on a real server: prefect.yaml deployed with the team's three
commands, a process worker picks the run up, and the run lands in the ledger with its documents."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from audit.ledger import Ledger
from tests.flows.conftest import against
from tests.helpers import ROOT

pytestmark = pytest.mark.slow
PREFECT = [sys.executable, "-m", "prefect"]


def _prefect(args: list[str], env: dict[str, str], timeout: float = 240) -> str:
    done = subprocess.run([*PREFECT, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"prefect {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _scheduled_runs(client, deployment_id, wait: float = 30.0) -> list:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType

    deadline = time.monotonic() + wait
    while True:
        runs = client.read_flow_runs(
            deployment_filter=_by_id(deployment_id),
            flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=["SCHEDULED"]))))
        if runs or time.monotonic() > deadline:
            return runs
        time.sleep(1)


def test_prefect_yaml_deploys_and_a_process_worker_runs_it(prefect_server, tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PREFECT_API_URL": prefect_server.api_url, "PREFECT_HOME": str(tmp_path / "client-home"),
           "RECONSTRUCT_HOME": str(ROOT), "RECONSTRUCT_ARCHIVE": str(ROOT / "sample_logs"),
           "RECONSTRUCT_OUT": str(out), "PREFECT_LOGGING_LEVEL": "WARNING"}
    _prefect(["work-pool", "create", "reconstruct-pool", "--type", "process"], env)
    _prefect(["--no-prompt", "deploy", "--name", "nightly"], env)
    triggered = _prefect(["deployment", "run", "reconstruct-archive/nightly"], env)
    _prefect(["worker", "start", "--pool", "reconstruct-pool", "--run-once"], env)

    ledger = Ledger(out / "ledger.sqlite")
    try:
        runs = ledger.runs.recent()
    finally:
        ledger.close()
    assert [r.status for r in runs] == ["completed"]
    documents = len(list((out / "sessions").rglob("*.json")))
    assert runs[0].sessions_ok + runs[0].sessions_partial == documents >= 20  # every example in sample_logs/
    with against(prefect_server):
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            deployment = client.read_deployment_by_name("reconstruct-archive/nightly")
            run = client.read_flow_run(re.search(r"UUID: ([0-9a-f-]{36})", triggered).group(1))
            assert run.deployment_id == deployment.id and run.state.is_completed()
            assert run.name == f"sample_logs {runs[0].run_id}" and "archive:sample_logs" in run.tags
            assert deployment.schedules[0].schedule.cron == "0 2 * * *"
            assert deployment.global_concurrency_limit.limit == 1
            assert deployment.parameters["paths"] == [str(ROOT / "sample_logs")]
            # the server's scheduler put the coming nights' runs on the calendar
            nights = _scheduled_runs(client, deployment.id)
            assert nights and all(r.expected_start_time.hour == 2 for r in nights)


def _by_id(deployment_id):
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    return DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id]))
