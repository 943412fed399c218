"""`reconstruct serve` for real: with no Prefect configured it starts and supervises its own server,
the schedule fires, runs land in the ledger and in Prefect, and SIGTERM stops everything cleanly;
with PREFECT_API_URL set it registers on that server and starts none. Read-only commands never
import Prefect."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.ledger import Ledger, RunRecord
from flows.serve import healthy
from models.status import RunStatus
from tests.flows.conftest import against, free_port
from tests.helpers import ROOT

LOADED = 3  # the machines are shared: liveness bounds three times what a quiet machine needs
RECONSTRUCT = [sys.executable, "-c", "from flows.cli.app import app; app()"]


def _completed_runs(out: Path) -> list[RunRecord]:
    if not (out / "ledger.sqlite").is_file():
        return []
    ledger = Ledger(out / "ledger.sqlite")
    try:
        return [r for r in ledger.runs.recent(50) if r.status is RunStatus.COMPLETED]
    finally:
        ledger.close()


def _serve(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as sink:
        return subprocess.Popen([*RECONSTRUCT, "serve", str(ROOT / "sample_logs"), *args], cwd=ROOT, env=env,
                                stdout=sink, stderr=subprocess.STDOUT)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]


def _wait(check, seconds: float, proc: subprocess.Popen, log: Path):
    deadline = time.monotonic() + seconds * LOADED  # a liveness bound, never a timing assertion
    while not (found := check()):
        assert proc.poll() is None, f"serve exited early:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"timed out:\n{log.read_text()}"
        time.sleep(1)
    return found


@pytest.mark.slow
def test_serve_starts_its_own_server_runs_on_schedule_and_stops_cleanly(tmp_path):
    port, home, out, log = free_port(), tmp_path / "prefect", tmp_path / "out", tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "client-home")  # no profile of the machine's user
    # runs fall due every 3 s and take longer than that (a fresh flow-run process each): they must queue
    proc = _serve(["--out", str(out), "--interval", "3", "--port", str(port), "--prefect-home", str(home)], env, log)
    try:
        server_pid = int(_wait(lambda: (home / "server.pid").is_file() and (home / "server.pid").read_text(),
                               120, proc, log))
        runs = _wait(lambda: len(_completed_runs(out)) >= 2 and _completed_runs(out), 180, proc, log)
        spans = sorted((r.started_at, r.finished_at) for r in runs)
        assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans)), spans
        listed = subprocess.run([sys.executable, "-m", "prefect", "flow-run", "ls", "--state", "COMPLETED"],
                                env={**env, "PREFECT_API_URL": f"http://127.0.0.1:{port}/api", "COLUMNS": "250"},
                                capture_output=True, text=True, timeout=120 * LOADED)
        for run in runs[:2]:
            assert f"sample_logs {run.run_id}" in listed.stdout, listed.stdout + listed.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(90 * LOADED)
    text = log.read_text()
    assert code == 0, text
    assert "never awaited" not in text and "Traceback" not in text, text
    assert "Prefect server stopped" in text
    assert not _alive(server_pid) and not healthy(f"http://127.0.0.1:{port}/api")
    assert (home / "prefect.db").is_file()  # the server's database lives where the README says


@pytest.mark.slow
def test_serve_uses_the_configured_server_and_starts_none(prefect_server, tmp_path):
    home, out, log = tmp_path / "prefect", tmp_path / "out", tmp_path / "serve.log"
    env = {**os.environ, "PREFECT_API_URL": prefect_server.api_url}
    proc = _serve(["--out", str(out), "--cron", "0 3 * * *", "--timezone", "Europe/Stockholm",
                   "--name", "configured", "--prefect-home", str(home)], env, log)
    try:
        _wait(lambda: "serving reconstruct-archive/configured" in log.read_text(), 120, proc, log)
        with against(prefect_server):
            from prefect.client.orchestration import get_client

            with get_client(sync_client=True) as client:
                deployment = client.read_deployment_by_name("reconstruct-archive/configured")
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(60 * LOADED)
    assert code == 0, log.read_text()
    schedule = deployment.schedules[0].schedule
    assert (schedule.cron, schedule.timezone) == ("0 3 * * *", "Europe/Stockholm")
    assert deployment.global_concurrency_limit.limit == 1
    assert deployment.parameters["out"] == str(out.resolve())
    assert not home.exists()  # no server of its own


READ_ONLY = [["status"], ["quarantine"], ["history", "x"], ["verify"], ["diff", "x", "v0", "v1"]]


@pytest.mark.parametrize("args", [*READ_ONLY, ["formats"], ["schema"]], ids=lambda a: a[0])
def test_read_only_commands_do_not_import_prefect(args, tmp_path):
    argv = [*args, "--out", str(tmp_path)] if args in READ_ONLY else args
    probe = ("import sys\nfrom typer.testing import CliRunner\nfrom flows.cli.app import app\n"
             f"CliRunner().invoke(app, {argv!r})\n"
             "print(sorted(m for m in sys.modules if m == 'prefect' or m.startswith('prefect.')))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


class _SlowRunner:
    """A runner that refuses to stop until it has been asked ``starts`` times (Prefect's
    "Runner has not yet started"), then stops its start task."""

    def __init__(self, starts: int) -> None:
        self.starts, self.asked = starts, 0
        self.done = asyncio.Event()

    async def start(self) -> None:
        await self.done.wait()

    async def astop(self) -> None:
        self.asked += 1
        if self.asked <= self.starts:
            raise RuntimeError("Runner has not yet started")
        self.done.set()


def test_a_stop_that_comes_before_the_runner_has_started_waits_for_it():
    from flows.serve import _stop

    async def scenario(runner, patience):
        running = asyncio.create_task(runner.start())
        await _stop(runner, running, patience)
        await asyncio.wait({running}, timeout=5)
        return running

    slow = _SlowRunner(starts=3)
    running = asyncio.run(scenario(slow, 30))
    assert slow.asked == 4 and running.done() and not running.cancelled()
    never = _SlowRunner(starts=10**9)
    running = asyncio.run(scenario(never, 0.2))
    assert running.cancelled()  # a runner that never starts is not waited for forever
