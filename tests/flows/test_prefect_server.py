"""A run against a real Prefect server, as an operator sees it: Prefect's own client lists the run, its
task runs and artifacts; the UI (real, served by the server, rendered by headless Chromium) shows
the run and its summary; a run that quarantines emits an event the shipped automation notifies on."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from flows import alerts, artifacts
from flows.cli.app import app
from flows.pipeline import run_archive
from models.settings import Settings
from tests.flows.conftest import against
from tests.helpers import ROOT

pytestmark = pytest.mark.slow
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOTS = ROOT / ".test-artifacts"


class _Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict]] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).received.append(json.loads(body or b"{}"))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def webhook():
    """A local webhook the notification block posts to."""
    _Hook.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", _Hook.received
    server.shutdown()


@pytest.fixture(scope="module")
def bad_night(prefect_server, webhook, tmp_path_factory):
    """The alert automation installed, then one run of an archive with an input no grammar reads."""
    root = tmp_path_factory.mktemp("night")
    archive = root / "archive"
    shutil.copytree(ROOT / "sample_logs", archive)
    (archive / "noise.txt").write_text("just some words without any structure\n" * 3)
    with against(prefect_server):
        installed = CliRunner().invoke(app, ["alerts", "--webhook", webhook[0]])
        assert installed.exit_code == 0, installed.output
        summary = run_archive([archive], root / "out", Settings(shard_files=3))
    assert summary.counts.files_quarantined == 1
    return summary


def _poll(read, wait: float = 60.0):
    deadline = time.monotonic() + wait
    while not (found := read()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


def _flow_run(client, run_id: str):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(like_=run_id)))
    assert len(runs) == 1
    return runs[0]


def test_prefect_client_lists_the_run_its_task_runs_and_artifacts(prefect_server, bad_night):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter, FlowRunFilterId

    run_id = bad_night.run_id
    with against(prefect_server), get_client(sync_client=True) as client:
        run = _flow_run(client, run_id)
        assert run.name == f"archive {run_id}" and run.state.is_completed()
        assert {"reconstruct", "archive:archive"} <= set(run.tags)
        of_run = FlowRunFilter(id=FlowRunFilterId(any_=[run.id]))
        def completed():  # the server records task run states a moment after the flow ends: wait for all
            done = [t for t in client.read_task_runs(flow_run_filter=of_run) if t.state and t.state.is_completed()]
            return done if len(done) >= bad_night.shards else None

        tasks = _poll(completed) or []
        assert len(tasks) == bad_night.shards
        assert all(t.name.startswith("reconstruct-shard") for t in tasks)
        found = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(
            any_=[run.id])))
    by_key = {a.key: a for a in found}
    summary = by_key[artifacts.SUMMARY_KEY]
    assert summary.type == "markdown" and run_id in summary.data
    reason = ",".join(bad_night.quarantined[0].reasons)
    assert f"| {reason} | 1 |" in summary.data
    assert "## Slowest files" in summary.data
    table = by_key[artifacts.QUARANTINE_KEY]
    rows = json.loads(table.data) if isinstance(table.data, str) else table.data
    assert [r["source"] for r in rows] == [q.source_path for q in bad_night.quarantined]


def test_a_quarantining_run_emits_an_event_and_the_automation_notifies(prefect_server, webhook, bad_night):
    run_id = bad_night.run_id
    posted = _poll(lambda: [m for m in webhook[1] if run_id in m.get("body", "")], wait=90)
    assert posted, f"no notification for {run_id}; received {webhook[1]}"
    message = posted[0]
    assert "quarantined" in message["subject"] and "1 quarantined" in message["body"]
    with against(prefect_server):
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            def read_events():  # the server stores events asynchronously
                return client.request("POST", "/events/filter", json={"filter": {
                    "event": {"name": ["reconstruct.run.quarantined"]},
                    "resource": {"id": [f"reconstruct.run.{run_id}"]}, "order": "DESC"}, "limit": 5}).json()["events"]

            events = _poll(read_events, wait=60)
    assert events and events[0]["payload"]["counts"]["files_quarantined"] == 1
    assert any(r["prefect.resource.role"] == "flow-run" for r in events[0]["related"])


def test_a_crashing_run_emits_its_event(prefect_server, monkeypatch, tmp_path):
    from flows.core import ingest

    def broken(*_args, **_kwargs):
        raise OSError("the archive disk went away")

    monkeypatch.setattr(ingest, "discover", broken)
    with against(prefect_server), pytest.raises(OSError):
        run_archive([ROOT / "sample_logs"], tmp_path / "out", Settings())
    with against(prefect_server):
        from prefect.client.orchestration import get_client

        def crashed():
            with get_client(sync_client=True) as client:
                found = client.request("POST", "/events/filter", json={"filter": {
                    "event": {"name": ["reconstruct.run.crashed"]}, "order": "DESC"}, "limit": 10}).json()
            return [e for e in found["events"] if e["payload"]["out"] == str(tmp_path / "out")]

        events = _poll(crashed, wait=30)
    assert events and "the archive disk went away" in events[0]["payload"]["error"]
    assert events[0]["payload"]["counts"]["files"] == 0


def test_interruptions_and_crashes_are_told_apart():
    from prefect.exceptions import TerminationSignal

    assert alerts.outcome_of(KeyboardInterrupt()) == "interrupted"
    assert alerts.outcome_of(TerminationSignal(signal=15)) == "interrupted"
    assert alerts.outcome_of(RuntimeError("x")) == "crashed"


def _chromium(url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--window-size=1400,1000", "--virtual-time-budget=20000", *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_the_prefect_ui_shows_the_run_and_its_artifact(prefect_server, bad_night, tmp_path):
    from prefect.client.orchestration import get_client

    run_id = bad_night.run_id
    with against(prefect_server), get_client(sync_client=True) as client:
        flow_run_id = _flow_run(client, run_id).id
    page = f"{prefect_server.ui_url}/v2/runs/flow-run/{flow_run_id}?tab=Artifacts"
    dom = _chromium(page, tmp_path / "profile-dom", "--dump-dom").stdout
    assert f"archive {run_id}" in dom and "Completed" in dom
    assert artifacts.SUMMARY_KEY in dom and artifacts.QUARANTINE_KEY in dom
    SCREENSHOTS.mkdir(exist_ok=True)
    shot = SCREENSHOTS / "prefect-ui-flow-run.png"
    shot.unlink(missing_ok=True)
    _chromium(page, tmp_path / "profile-shot", f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000
