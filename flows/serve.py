"""Which Prefect server a flow runs against, a supervised local one, and the long-running `serve` loop.

Prefect's embedded (ephemeral) server has no scheduler: a schedule served against it never fires.
So `reconstruct serve` without ``PREFECT_API_URL`` uses the Prefect server already answering at the
documented local address (http://127.0.0.1:4200/api, `prefect server start`'s default), or starts
one itself: a real ``prefect server start`` child on loopback, its database under ``--prefect-home``
(default ``OUT/.prefect``), stopped with the serve loop. This module imports Prefect only inside the
functions that need it, so the read-only commands stay fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

LOCAL_HOST = "127.0.0.1"
LOCAL_PORT = 4200
STARTUP_SECONDS = 180.0


def local_api_url(port: int = LOCAL_PORT) -> str:
    return f"http://{LOCAL_HOST}:{port}/api"


def healthy(api_url: str, timeout: float = 1.0) -> bool:
    """True when a Prefect API answers its health check at this address."""
    try:
        with urllib.request.urlopen(f"{api_url.rstrip('/')}/health", timeout=timeout) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError, ValueError):
        return False


def configured_api_url() -> str | None:
    """The Prefect API this process is configured for (environment, profile or an active settings
    context such as a test harness); None means the embedded server."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def point_at(api_url: str) -> None:
    """Make ``api_url`` this process's (and its children's) Prefect API."""
    from prefect.context import refresh_global_settings_context

    os.environ["PREFECT_API_URL"] = api_url
    refresh_global_settings_context()


def use_running_server(port: int = LOCAL_PORT) -> str:
    """Point this process at a running Prefect server when one is configured or answers at the local
    address; returns a sentence saying which Prefect a run uses."""
    configured = configured_api_url()
    if configured:
        return f"Prefect server {configured}"
    local = local_api_url(port)
    if healthy(local, timeout=0.3):
        point_at(local)
        return f"Prefect server {local} (running locally)"
    return "embedded Prefect (temporary server for this run; keep one running with `prefect server start`)"


@dataclass
class LocalServer:
    """A ``prefect server start`` child process on loopback, its database under ``home``."""

    home: Path
    port: int = LOCAL_PORT
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def api_url(self) -> str:
        return local_api_url(self.port)

    @property
    def ui_url(self) -> str:
        return self.api_url.removesuffix("/api")

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(PREFECT_HOME=str(self.home), PREFECT_SERVER_API_HOST=LOCAL_HOST,
                   PREFECT_SERVER_API_PORT=str(self.port), PREFECT_UI_API_URL=self.api_url,
                   PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1")
        return env

    def start(self, timeout: float = STARTUP_SECONDS) -> LocalServer:
        """Start the server in its own process group (Ctrl-C reaches it only through ``stop``)."""
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / "server.log", "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "prefect", "server", "start", "--host", LOCAL_HOST, "--port", str(self.port)],
                env=self.environment(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        (self.home / "server.pid").write_text(f"{self.process.pid}\n")
        try:
            self._wait_ready(timeout)
        except BaseException:  # Ctrl-C or SIGTERM while it starts: stop it, leave no orphan
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not healthy(self.api_url):
            if self.process.poll() is not None:
                raise RuntimeError(f"prefect server exited with {self.process.returncode}; "
                                   f"see {self.home / 'server.log'}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"prefect server not ready after {timeout:.0f} s; see {self.home / 'server.log'}")
            time.sleep(0.25)

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``grace`` seconds; never leaves an orphan."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        (self.home / "server.pid").unlink(missing_ok=True)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@dataclass(frozen=True)
class ServePlan:
    """What `reconstruct serve` registers: one deployment of the archive flow with one schedule."""

    name: str
    parameters: dict[str, Any]
    cron: str | None = None
    timezone: str = "UTC"
    interval: float | None = None
    description: str = ""
    tags: tuple[str, ...] = ("reconstruct",)

    def schedule(self):
        from prefect.schedules import Cron, Interval

        if self.interval:
            # anchored just ahead of now, so the first run starts right away, not one interval later
            anchor = datetime.now(UTC) + timedelta(seconds=2)
            return Interval(timedelta(seconds=self.interval), anchor_date=anchor, timezone=self.timezone)
        return Cron(self.cron, timezone=self.timezone)


def no_overlap():
    """One run of the deployment at a time; a run due while the previous one still runs is cancelled
    (the next one catches up: unchanged inputs are skipped)."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

    return ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW)


async def serve_until_stopped(plan: ServePlan, started=None) -> None:
    """Register the deployment and run its scheduled runs until SIGINT or SIGTERM, then stop the runner
    (awaited: schedules paused, in-flight runs cancelled) and return."""
    from prefect.deployments.runner import EntrypointType
    from prefect.runner import Runner

    from flows.pipeline import reconstruct_archive

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    runner = Runner(name=plan.name, pause_on_shutdown=True, limit=1)
    # Runner.start installs handle_sigterm for SIGTERM; it must not exit the process mid-loop
    runner.handle_sigterm = lambda *_: loop.call_soon_threadsafe(stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await runner.aadd_flow(
        reconstruct_archive, name=plan.name, schedules=[plan.schedule()], parameters=plan.parameters,
        description=plan.description, tags=list(plan.tags), concurrency_limit=no_overlap(),
        enforce_parameter_schema=False, entrypoint_type=EntrypointType.MODULE_PATH)
    running = asyncio.create_task(runner.start())
    if started:
        started()
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not running.done():
        await _stop(runner, running)
    stopping.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    loop.remove_signal_handler(signal.SIGINT)


async def _stop(runner, running: asyncio.Task, patience: float = 60.0) -> None:
    """Stop the runner. Prefect refuses to stop a runner that has not finished starting, and a
    Ctrl-C can come that early: wait until it has started (or its start has ended), then stop it."""
    deadline = asyncio.get_running_loop().time() + patience
    while True:
        try:
            await runner.astop()
            return
        except RuntimeError:
            if running.done():
                return
            if asyncio.get_running_loop().time() > deadline:
                running.cancel()  # it never finished starting: do not wait for it forever
                return
            await asyncio.sleep(0.05)


def serve(plan: ServePlan, prefect_home: Path, port: int = LOCAL_PORT, say=print) -> None:
    """Serve ``plan`` against the configured Prefect server, the one at the local address, or a
    supervised one started here; stops the supervised server when the loop ends."""
    server = None
    api_url = configured_api_url()
    if api_url is not None:
        say(f"using the configured Prefect server {api_url}")
    elif healthy(local_api_url(port)):
        api_url = local_api_url(port)
        say(f"using the Prefect server already running at {api_url}")
        point_at(api_url)
    if api_url is None:
        signal.signal(signal.SIGTERM, _interrupt)  # until the runner takes SIGTERM over: stop the server too
        say(f"starting a Prefect server on {local_api_url(port)} (database under {prefect_home})")
        server = LocalServer(prefect_home, port).start()
        api_url = server.api_url
        point_at(api_url)
    try:
        _serve_against(plan, api_url, say)
    finally:
        if server is not None:
            server.stop()
            say("Prefect server stopped")


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def _serve_against(plan: ServePlan, api_url: str, say) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    every = f"every {plan.interval:g} s" if plan.interval else f"on cron {plan.cron!r} ({plan.timezone})"
    ui = api_url.removesuffix("/api")
    with temporary_settings({PREFECT_API_URL: api_url}):
        asyncio.run(serve_until_stopped(plan, started=lambda: say(
            f"serving reconstruct-archive/{plan.name} {every}; runs: {ui}/runs "
            f"(or PREFECT_API_URL={api_url} prefect flow-run ls); Ctrl-C stops")))
    say("stopped")
