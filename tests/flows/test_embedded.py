"""`reconstruct run` with no Prefect server configured: the embedded server the CLI starts itself
(the lean settings, the user's environment first, none at all when an API is configured) records
the flow run, its shard task runs and its artifact, and the flow process never imports Prefect's
server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from flows import artifacts
from flows.serve import EMBEDDED_SERVER_ENV, EmbeddedServer, free_port, start_embedded, without_heartbeats
from tests.helpers import ROOT


def test_the_embedded_server_gets_the_lean_settings_under_the_users_own(monkeypatch):
    monkeypatch.setenv("PREFECT_SERVER_LOGS_STREAM_OUT_ENABLED", "true")  # the user's choice wins
    monkeypatch.setenv("PREFECT_API_URL", "http://elsewhere:4200/api")
    env = EmbeddedServer().environment()
    assert env["PREFECT_SERVER_LOGS_STREAM_OUT_ENABLED"] == "true"
    assert env["PREFECT_UI_ENABLED"] == EMBEDDED_SERVER_ENV["PREFECT_UI_ENABLED"] == "false"
    assert env["PREFECT_SERVER_EVENTS_STREAM_OUT_ENABLED"] == "false"
    assert env["PREFECT__SERVER_EPHEMERAL"] == "1"  # Prefect's ephemeral services and no UI
    assert "PREFECT_API_URL" not in env  # the server is the API, it points at none


def test_no_embedded_server_when_a_server_is_configured(monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:1/api")
    assert start_embedded() is None


def test_no_embedded_server_under_a_harness(prefect_harness):
    assert start_embedded() is None


def _heartbeat() -> int | None:
    from prefect.settings import get_current_settings

    return get_current_settings().flows.heartbeat_frequency


def test_runs_on_the_embedded_server_send_no_heartbeats_unless_asked(monkeypatch):
    monkeypatch.delenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", raising=False)
    monkeypatch.delenv("PREFECT_RUNNER_HEARTBEAT_FREQUENCY", raising=False)
    before = _heartbeat()
    assert before is not None
    with without_heartbeats(object()):
        assert _heartbeat() is None
    assert _heartbeat() == before
    with without_heartbeats(None):  # a configured server: its heartbeats are left as they are
        assert _heartbeat() == before
    monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "60")  # the user's choice wins
    with without_heartbeats(object()):
        assert _heartbeat() == before


RUN = """
import json, sys
from flows.cli.app import app
try:
    app(["run", sys.argv[1], "--out", sys.argv[2]])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "server_imported": "prefect.server.api.server" in sys.modules}))
"""


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as con:
        return con.execute(sql).fetchall()


@pytest.mark.slow
def test_a_cli_run_on_the_embedded_server_is_recorded_and_leaves_nothing_running(tmp_path):
    db = tmp_path / "prefect.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(tmp_path / "home"), PREFECT_SERVER_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{db}")
    done = subprocess.run([sys.executable, "-c", RUN, str(ROOT / "sample_logs"), str(tmp_path / "out")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "server_imported": False}, done.stderr[-2000:]
    assert "embedded Prefect" in done.stderr
    [(name, state, tags)] = _rows(db, "SELECT name, state_type, tags FROM flow_run")
    assert name.startswith("sample_logs ") and state == "COMPLETED"  # named and tagged as it was created
    assert {"reconstruct", "archive:sample_logs"} <= set(json.loads(tags))
    shards = _rows(db, "SELECT state_type FROM task_run WHERE name LIKE 'reconstruct-shard%'")
    assert shards and {s for (s,) in shards} == {"COMPLETED"}
    assert _rows(db, "SELECT key FROM artifact") == [(artifacts.SUMMARY_KEY,)]


STUB_APP = '''
async def app(scope, receive, send):
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
'''

LAUNCHER = '''
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-m", "flows.embedded", str(os.getpid()), "--app-dir", sys.argv[1],
                          "stub:app", "--port", sys.argv[2], "--log-level", "error"], start_new_session=True)
print(child.pid, flush=True)
time.sleep(600)
'''


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    return True


def _wait(condition, seconds: float = 120.0) -> bool:
    deadline = time.monotonic() + seconds  # a liveness bound, not a timing assertion
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_the_embedded_server_ends_itself_when_its_run_is_killed(tmp_path):
    """A run killed with SIGKILL runs no code on its way out: its server notices it was orphaned."""
    (tmp_path / "stub.py").write_text(STUB_APP)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(tmp_path), str(port)], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, text=True)
    try:
        server = int(launcher.stdout.readline())
        assert _wait(lambda: healthy_stub(port)), "the stub server never answered"
        launcher.kill()
        launcher.wait()
        assert _wait(lambda: not _running(server)), "the orphaned server kept running"
    finally:
        launcher.kill()
        with contextlib.suppress(ProcessLookupError, NameError):
            os.kill(server, signal.SIGKILL)


def healthy_stub(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def test_a_server_that_cannot_start_is_quoted_in_the_error_not_on_the_runs_stderr(tmp_path, monkeypatch, capfd):
    """The server's output goes to a temporary file, never to the run's stderr (whose one line at a fault
    must stay one line); when it cannot start, the error quotes the end of that output."""
    home = tmp_path / "not-a-folder"
    home.write_text("")
    monkeypatch.setenv("PREFECT_HOME", str(home))
    server = EmbeddedServer().launch()
    try:
        with pytest.raises(RuntimeError) as err:
            server.ready(timeout=120)
    finally:
        server.stop()
    message = str(err.value)
    assert "prefect server exited with" in message and "its last output:\n" in message, message
    quoted = message.split("its last output:\n", 1)[1]
    assert quoted.strip(), message
    assert quoted.strip().splitlines()[-1] not in capfd.readouterr().err
    assert server.output is None  # closed once the server is gone
